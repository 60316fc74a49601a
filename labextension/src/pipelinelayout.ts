/**
 * Where the pipeline editor's canvas draws each step: a layered layout of the DAG
 * (pipelinegraph.ts). Pure.
 */
import { IEdge } from './pipelinegraph';

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
