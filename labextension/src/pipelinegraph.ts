/**
 * A pipeline's graph (trainhub/pipelines/spec.py): steps as nodes, `depends_on` and `inputs`
 * wiring as edges, and what follows from them alone (no YAML here: pipelinedocument.ts reads
 * and changes the file). Pure.
 */
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

/** Every dependency once: written in depends_on, implied by inputs, or both. */
export function edgesOf(steps: IStepNode[]): IEdge[] {
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

/** Whether `to` (transitively) depends on `from`, along `edges`. */
export function reaches(edges: IEdge[], to: string, from: string): boolean {
  const ups = new Map<string, string[]>();
  for (const e of edges) {
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
