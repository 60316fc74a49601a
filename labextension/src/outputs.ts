/** A job's outputs as a tree: pure, built from the server's flat listing (parents first). */
import { IOutputEntry } from './models';

export interface IOutputNode {
  entry: IOutputEntry;
  name: string;
  depth: number;
  children: IOutputNode[];
}

/** The listing as nested nodes: folders first, then files, each by name. */
export function outputTree(entries: IOutputEntry[]): IOutputNode[] {
  const roots: IOutputNode[] = [];
  const folders = new Map<string, IOutputNode>();
  for (const entry of entries) {
    const cut = entry.path.lastIndexOf('/');
    const parentPath = cut < 0 ? '' : entry.path.slice(0, cut);
    const parent = parentPath ? folders.get(parentPath) : undefined;
    const node: IOutputNode = {
      entry,
      name: entry.path.slice(cut + 1),
      depth: parent ? parent.depth + 1 : 0,
      children: []
    };
    (parent ? parent.children : roots).push(node);
    if (entry.kind === 'dir') {
      folders.set(entry.path, node);
    }
  }
  const order = (nodes: IOutputNode[]): IOutputNode[] => {
    nodes.sort((a, b) =>
      a.entry.kind !== b.entry.kind
        ? a.entry.kind === 'dir'
          ? -1
          : 1
        : a.name.localeCompare(b.name)
    );
    nodes.forEach(n => order(n.children));
    return nodes;
  };
  return order(roots);
}

/** The rows to draw: every node whose folders above it are all open, in tree order. */
export function visibleRows(tree: IOutputNode[], open: ReadonlySet<string>): IOutputNode[] {
  const rows: IOutputNode[] = [];
  const walk = (nodes: IOutputNode[]): void => {
    for (const node of nodes) {
      rows.push(node);
      if (node.entry.kind === 'dir' && open.has(node.entry.path)) {
        walk(node.children);
      }
    }
  };
  walk(tree);
  return rows;
}
