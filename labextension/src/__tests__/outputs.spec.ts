import { IOutputEntry } from '../models';
import { outputTree, visibleRows } from '../outputs';

const entry = (path: string, kind: 'file' | 'dir', bytes = 1): IOutputEntry => ({
  path,
  kind,
  bytes,
  mtime: 1700000000
});

// As the server lists them: a folder, then what it holds, by name.
const LISTING = [
  entry('a.txt', 'file'),
  entry('eval', 'dir', 3),
  entry('eval/deep', 'dir', 2),
  entry('eval/deep/x.bin', 'file', 2),
  entry('eval/results.json', 'file'),
  entry('z', 'dir', 0)
];

describe('outputTree', () => {
  it('nests entries under their folders, folders first then files by name', () => {
    const tree = outputTree(LISTING);
    expect(tree.map(n => n.name)).toEqual(['eval', 'z', 'a.txt']);
    const evalNode = tree[0];
    expect(evalNode.children.map(n => [n.name, n.depth])).toEqual([
      ['deep', 1],
      ['results.json', 1]
    ]);
    expect(evalNode.children[0].children.map(n => [n.entry.path, n.depth])).toEqual([
      ['eval/deep/x.bin', 2]
    ]);
  });

  it('keeps an entry whose folder was not listed at the top rather than losing it', () => {
    const tree = outputTree([entry('cut/off.txt', 'file')]);
    expect(tree.map(n => n.entry.path)).toEqual(['cut/off.txt']);
  });
});

describe('visibleRows', () => {
  const tree = outputTree(LISTING);
  it('shows only the top level while every folder is closed', () => {
    expect(visibleRows(tree, new Set()).map(n => n.entry.path)).toEqual(['eval', 'z', 'a.txt']);
  });

  it('shows what an open folder holds, and a nested folder only when it is open too', () => {
    expect(visibleRows(tree, new Set(['eval'])).map(n => n.entry.path)).toEqual([
      'eval',
      'eval/deep',
      'eval/results.json',
      'z',
      'a.txt'
    ]);
    expect(visibleRows(tree, new Set(['eval/deep'])).map(n => n.entry.path)).toEqual([
      'eval',
      'z',
      'a.txt'
    ]);
    expect(visibleRows(tree, new Set(['eval', 'eval/deep'])).map(n => n.entry.path)).toContain(
      'eval/deep/x.bin'
    );
  });
});
