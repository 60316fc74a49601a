/**
 * A pipeline file (`*.pipeline.yaml`, trainhub/pipelines/spec.py) read and changed as the
 * pipeline editor's graph (pipelinegraph.ts). Pure: the text is read and changed through the
 * `yaml` package's Document, so what a person wrote (comments, key order, flow or block style)
 * stays as it was wherever the editor did not change it.
 */
import { Document, isMap, isScalar, isSeq, parseDocument, YAMLMap, YAMLSeq } from 'yaml';

import { IFieldError } from './models';
import {
  edgesOf,
  IEdge,
  inputSource,
  IStepNode,
  MAX_STEP_NAME,
  reaches,
  STEP_NAME,
  stepNameFor
} from './pipelinegraph';

function plain(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
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
    return edgesOf(this.steps());
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
    return reaches(this.edges(), to, from);
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
