/**
 * A pipeline file (`*.pipeline.yaml`, trainhub/pipelines/spec.py) as the pipeline editor's
 * graph: steps as nodes, `depends_on` and `inputs` wiring as edges. Pure: the text is read and
 * changed through the `yaml` package's Document, so what a person wrote (comments, key order,
 * flow or block style) stays as it was wherever the editor did not change it.
 */
import { Document, isMap, isScalar, isSeq, parseDocument, YAMLMap, YAMLSeq } from 'yaml';

import { IFieldError } from './models';
import { slugName } from './naming';

/** A step's name, as spec.py takes it (part of its jobs' names). */
export const STEP_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const MAX_STEP_NAME = 30;

/** One step, as the canvas and the side form read it. */
export interface IStepNode {
  name: string;
  notebook: string;
  dependsOn: string[];
  /** input name -> '<step>.<output>' */
  inputs: Record<string, string>;
  outputs: string[];
  parameters: Record<string, unknown>;
  /** The step's whole mapping as plain data (resources, image, queue, retry...). */
  data: Record<string, unknown>;
}

/** upstream -> downstream; `inputs` names the inputs the downstream step takes from it. */
export interface IEdge {
  from: string;
  to: string;
  inputs: string[];
  /** Written in `depends_on` (else only implied by inputs). */
  explicit: boolean;
}

function plain(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The step an input takes from: `prepare.data` -> ['prepare', 'data'] (null: not that form). */
export function inputSource(ref: unknown): [string, string] | null {
  if (typeof ref !== 'string') {
    return null;
  }
  const dot = ref.indexOf('.');
  return dot > 0 && dot < ref.length - 1 ? [ref.slice(0, dot), ref.slice(dot + 1)] : null;
}

/** A new step's name for a notebook: its file name as a valid step name, not taken yet. */
export function stepNameFor(notebookPath: string, taken: Iterable<string>): string {
  const file = notebookPath.split('/').pop() ?? '';
  const base = file.replace(/\.ipynb$/, '');
  const stem = slugName(base, 'step').slice(0, MAX_STEP_NAME).replace(/-+$/, '') || 'step';
  const used = new Set(taken);
  if (!used.has(stem)) {
    return stem;
  }
  for (let i = 2; ; i++) {
    const suffix = `-${i}`;
    const name = stem.slice(0, MAX_STEP_NAME - suffix.length).replace(/-+$/, '') + suffix;
    if (!used.has(name)) {
      return name;
    }
  }
}

/** A pipeline file's text, read and changed as a graph; `toString()` is the text to save. */
export class PipelineDocument {
  readonly doc: Document;

  constructor(text: string) {
    this.doc = parseDocument(text, { uniqueKeys: true });
  }

  /** YAML mistakes (with their line), as the server names them: field `pipeline`. */
  get syntaxErrors(): IFieldError[] {
    return this.doc.errors.map(e => {
      const line = e.linePos?.[0];
      const where = line ? ` (line ${line.line}, column ${line.col})` : '';
      const said = e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
      return { field: 'pipeline', message: `is not valid YAML: ${said}${where}` };
    });
  }

  get ok(): boolean {
    return this.doc.errors.length === 0;
  }

  toString(): string {
    // `{epochs: 3}` as people (and spec.py's examples) write flow collections, no line folding.
    return this.doc.toString({ lineWidth: 0, flowCollectionPadding: false });
  }

  /** The whole file as plain data (what the server reads). */
  data(): Record<string, unknown> {
    return plain(this.ok ? this.doc.toJS() : {});
  }

  private stepsMap(create = false): YAMLMap | null {
    const steps = this.doc.get('steps', true);
    if (isMap(steps)) {
      return steps;
    }
    if (!create) {
      return null;
    }
    if (!isMap(this.doc.contents)) {
      this.doc.contents = this.doc.createNode({}) as YAMLMap;
    }
    const map = this.doc.createNode({}) as YAMLMap;
    this.doc.set('steps', map);
    return map;
  }

  stepNames(): string[] {
    const steps = this.stepsMap();
    return steps ? steps.items.map(p => String(isScalar(p.key) ? p.key.value : p.key)) : [];
  }

  steps(): IStepNode[] {
    const steps = plain(this.data().steps);
    return Object.entries(steps).map(([name, value]) => {
      const data = plain(value);
      return {
        name,
        notebook: typeof data.notebook === 'string' ? data.notebook : '',
        dependsOn: strings(data.depends_on),
        inputs: Object.fromEntries(
          Object.entries(plain(data.inputs)).map(([k, v]) => [k, String(v)])
        ),
        outputs: strings(data.outputs),
        parameters: plain(data.parameters),
        data
      };
    });
  }

  step(name: string): IStepNode | undefined {
    return this.steps().find(s => s.name === name);
  }

  /** Every dependency once: written in depends_on, implied by inputs, or both. */
  edges(): IEdge[] {
    const steps = this.steps();
    const names = new Set(steps.map(s => s.name));
    const edges = new Map<string, IEdge>();
    const edge = (from: string, to: string): IEdge => {
      const key = `${from}\u0000${to}`;
      let e = edges.get(key);
      if (!e) {
        e = { from, to, inputs: [], explicit: false };
        edges.set(key, e);
      }
      return e;
    };
    for (const s of steps) {
      for (const d of s.dependsOn) {
        if (names.has(d)) {
          edge(d, s.name).explicit = true;
        }
      }
      for (const [input, ref] of Object.entries(s.inputs)) {
        const src = inputSource(ref);
        if (src && names.has(src[0])) {
          edge(src[0], s.name).inputs.push(input);
        }
      }
    }
    return [...edges.values()];
  }

  /** Add a step running `notebook`; returns its name. */
  addStep(notebook: string, name?: string): string {
    const stepName = name ?? stepNameFor(notebook, this.stepNames());
    if (this.stepNames().includes(stepName)) {
      throw new Error(`a step ${stepName} exists already`);
    }
    this.stepsMap(true)!.set(stepName, this.doc.createNode({ notebook }));
    return stepName;
  }

  /** Remove a step and every mention of it: other steps' depends_on and inputs. */
  removeStep(name: string): void {
    const steps = this.stepsMap();
    if (!steps?.has(name)) {
      return;
    }
    steps.delete(name);
    for (const other of this.stepNames()) {
      this.disconnect(name, other);
    }
  }

  /** Whether `to` (transitively) depends on `from`. */
  dependsOn(to: string, from: string): boolean {
    const ups = new Map<string, string[]>();
    for (const e of this.edges()) {
      ups.set(e.to, [...(ups.get(e.to) ?? []), e.from]);
    }
    const seen = new Set<string>();
    const stack = [to];
    while (stack.length) {
      const s = stack.pop()!;
      for (const u of ups.get(s) ?? []) {
        if (u === from) {
          return true;
        }
        if (!seen.has(u)) {
          seen.add(u);
          stack.push(u);
        }
      }
    }
    return false;
  }

  /**
   * `to` runs after `from` (its depends_on gains `from`). Refused, with the sentence why, when
   * it would make a cycle; nothing changes when the dependency is there already.
   */
  connect(from: string, to: string): string | null {
    const names = this.stepNames();
    if (!names.includes(from) || !names.includes(to)) {
      return `no step ${names.includes(from) ? to : from}`;
    }
    if (from === to || this.dependsOn(from, to)) {
      return `${to} cannot run after ${from}: ${from} runs after ${to}`;
    }
    if (this.edges().some(e => e.from === from && e.to === to)) {
      return null;
    }
    const deps = this.doc.getIn(['steps', to, 'depends_on'], true);
    if (isSeq(deps)) {
      deps.add(from);
    } else {
      const seq = this.doc.createNode([from]) as YAMLSeq;
      seq.flow = true;
      this.doc.setIn(['steps', to, 'depends_on'], seq);
    }
    return null;
  }

  /** `to` no longer runs after `from`: its depends_on entry and inputs from `from` go. */
  disconnect(from: string, to: string): void {
    const deps = this.doc.getIn(['steps', to, 'depends_on'], true);
    if (isSeq(deps)) {
      deps.items = deps.items.filter(i => !(isScalar(i) && i.value === from));
      if (!deps.items.length) {
        this.doc.deleteIn(['steps', to, 'depends_on']);
      }
    }
    const inputs = this.doc.getIn(['steps', to, 'inputs'], true);
    if (isMap(inputs)) {
      inputs.items = inputs.items.filter(
        p => !(isScalar(p.value) && inputSource(p.value.value)?.[0] === from)
      );
      if (!inputs.items.length) {
        this.doc.deleteIn(['steps', to, 'inputs']);
      }
    }
  }

  /**
   * Set (or, with undefined, remove) a field of a step: `['resources', 'workers']`. A mapping
   * set whole is merged key by key, so the comments and order of the keys it keeps stay.
   */
  setStepField(name: string, path: string[], value: unknown): void {
    const at = ['steps', name, ...path];
    if (value === undefined || (isPlainObject(value) && !Object.keys(value).length)) {
      if (this.doc.hasIn(at)) {
        this.doc.deleteIn(at);
      }
      return;
    }
    const node = this.doc.getIn(at, true);
    if (isPlainObject(value) && isMap(node)) {
      for (const p of [...node.items]) {
        const key = String(isScalar(p.key) ? p.key.value : p.key);
        if (!(key in value)) {
          node.delete(key);
        }
      }
      for (const [k, v] of Object.entries(value)) {
        this.setStepField(name, [...path, k], v);
      }
      return;
    }
    if (isScalar(node) && !isPlainObject(value) && !Array.isArray(value)) {
      if (node.value !== value) {
        node.value = value;
      }
      return;
    }
    if (Array.isArray(value) && isSeq(node) && sameJSON(node.toJSON(), value)) {
      return;
    }
    this.doc.setIn(at, this.doc.createNode(value));
  }

  /** Rename a step, keeping its place in the file and every mention of it. */
  renameStep(from: string, to: string): string | null {
    const names = this.stepNames();
    if (!STEP_NAME.test(to) || to.length > MAX_STEP_NAME) {
      return `${to}: a step's name is lowercase letters, digits and dashes, at most ${MAX_STEP_NAME}`;
    }
    if (names.includes(to)) {
      return `a step ${to} exists already`;
    }
    const steps = this.stepsMap();
    const pair = steps?.items.find(p => (isScalar(p.key) ? p.key.value : p.key) === from);
    if (!pair) {
      return `no step ${from}`;
    }
    pair.key = this.doc.createNode(to);
    for (const other of this.stepNames()) {
      const deps = this.doc.getIn(['steps', other, 'depends_on'], true);
      if (isSeq(deps)) {
        for (const i of deps.items) {
          if (isScalar(i) && i.value === from) {
            i.value = to;
          }
        }
      }
      const inputs = this.doc.getIn(['steps', other, 'inputs'], true);
      if (isMap(inputs)) {
        for (const p of inputs.items) {
          const src = isScalar(p.value) ? inputSource(p.value.value) : null;
          if (src && src[0] === from && isScalar(p.value)) {
            p.value.value = `${to}.${src[1]}`;
          }
        }
      }
    }
    return null;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function sameJSON(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Each step's column (longest path from a first step) and row within the column. */
export interface INodePlace {
  layer: number;
  row: number;
}

/**
 * A layered layout of the DAG: a step's layer is the length of the longest path to it (first
 * steps in layer 0), rows in the order of the file within a layer, nudged toward the mean row
 * of their upstream steps. Steps on a cycle (a mistake the checks name) go after the others.
 */
export function layout(names: string[], edges: IEdge[]): Record<string, INodePlace> {
  const ups = new Map<string, string[]>(names.map(n => [n, []]));
  for (const e of edges) {
    if (ups.has(e.to) && ups.has(e.from)) {
      ups.get(e.to)!.push(e.from);
    }
  }
  const layer = new Map<string, number>();
  const visiting = new Set<string>();
  const depth = (n: string): number => {
    if (layer.has(n)) {
      return layer.get(n)!;
    }
    if (visiting.has(n)) {
      return -1; // a cycle: broken here
    }
    visiting.add(n);
    let d = 0;
    for (const u of ups.get(n) ?? []) {
      const du = depth(u);
      if (du >= 0) {
        d = Math.max(d, du + 1);
      }
    }
    visiting.delete(n);
    layer.set(n, d);
    return d;
  };
  names.forEach(depth);
  const byLayer = new Map<number, string[]>();
  for (const n of names) {
    const l = layer.get(n)!;
    byLayer.set(l, [...(byLayer.get(l) ?? []), n]);
  }
  const places: Record<string, INodePlace> = {};
  for (const l of [...byLayer.keys()].sort((a, b) => a - b)) {
    const members = byLayer.get(l)!;
    const wanted = (n: string): number => {
      const rows = (ups.get(n) ?? []).filter(u => places[u]).map(u => places[u].row);
      return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : Infinity;
    };
    const ordered = members
      .map((n, i) => ({ n, i, w: wanted(n) }))
      .sort((a, b) => (a.w === b.w ? a.i - b.i : a.w - b.w));
    ordered.forEach(({ n }, row) => {
      places[n] = { layer: l, row };
    });
  }
  return places;
}

/**
 * What the editor can tell without the server, each mistake by step and field as the server
 * names them: a step without a notebook, depends_on or an input naming no step, an input
 * naming an output its step does not declare, a cycle.
 */
export function localChecks(pipeline: PipelineDocument): IFieldError[] {
  if (!pipeline.ok) {
    return pipeline.syntaxErrors;
  }
  const steps = pipeline.steps();
  if (!steps.length) {
    return [{ field: 'steps', message: 'a pipeline has at least one step' }];
  }
  const byName = new Map(steps.map(s => [s.name, s]));
  const errors: IFieldError[] = [];
  for (const s of steps) {
    const at = `steps.${s.name}`;
    if (!STEP_NAME.test(s.name) || s.name.length > MAX_STEP_NAME) {
      errors.push({
        field: at,
        message: `a step's name is lowercase letters, digits and dashes, at most ${MAX_STEP_NAME}`
      });
    }
    if (!s.notebook) {
      errors.push({ field: `${at}.notebook`, message: 'Field required' });
    } else if (!s.notebook.endsWith('.ipynb')) {
      errors.push({
        field: `${at}.notebook`,
        message: `'${s.notebook}' is not a notebook (.ipynb)`
      });
    }
    s.dependsOn.forEach((d, i) => {
      if (d === s.name) {
        errors.push({ field: `${at}.depends_on.${i}`, message: 'a step cannot depend on itself' });
      } else if (!byName.has(d)) {
        errors.push({ field: `${at}.depends_on.${i}`, message: `no step '${d}'` });
      }
    });
    for (const [input, ref] of Object.entries(s.inputs)) {
      const src = inputSource(ref);
      const field = `${at}.inputs.${input}`;
      if (!src) {
        errors.push({ field, message: `'${ref}' is not '<step>.<output>'` });
      } else if (src[0] === s.name) {
        errors.push({ field, message: 'a step cannot take its own output' });
      } else if (!byName.has(src[0])) {
        errors.push({ field, message: `no step '${src[0]}'` });
      } else if (!byName.get(src[0])!.outputs.includes(src[1])) {
        const declared = byName.get(src[0])!.outputs;
        const has = declared.length
          ? `it declares ${declared.join(', ')}`
          : 'it declares no outputs';
        errors.push({ field, message: `step '${src[0]}' has no output '${src[1]}'; ${has}` });
      }
    }
  }
  for (const s of steps) {
    if (!s.dependsOn.includes(s.name) && pipeline.dependsOn(s.name, s.name)) {
      errors.push({ field: `steps.${s.name}.depends_on`, message: 'is part of a cycle' });
    }
  }
  return errors;
}

/** The step a field error is about (`steps.train.inputs.data` -> train), or null. */
export function stepOfError(field: string, names: string[]): string | null {
  if (!field.startsWith('steps.')) {
    return null;
  }
  const rest = field.slice('steps.'.length);
  // Step names have no dots, so the first segment is the step.
  const name = rest.split('.')[0];
  return names.includes(name) ? name : null;
}

/** Errors by step (those of no step under ''), the step's prefix taken off each field. */
export function errorsByStep(
  errors: IFieldError[],
  names: string[]
): Record<string, IFieldError[]> {
  const out: Record<string, IFieldError[]> = {};
  for (const e of errors) {
    const step = stepOfError(e.field, names);
    const key = step ?? '';
    const field = step ? e.field.slice(`steps.${step}.`.length) || 'step' : e.field;
    (out[key] ??= []).push({ field, message: e.message });
  }
  return out;
}

/**
 * The editor's own findings and the server's last answer in one list: where the server named
 * a field, its sentence stands for the editor's on that field (the same mistake said once).
 */
export function mergeErrors(local: IFieldError[], server: IFieldError[]): IFieldError[] {
  const named = new Set(server.map(e => e.field));
  return [...local.filter(e => !named.has(e.field)), ...server];
}
