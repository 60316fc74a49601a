import {
  cellsRun,
  codeCells,
  freePath,
  IExecutedNotebook,
  notebookRanks,
  positionOfCell
} from '../executednotebook';

const nb: IExecutedNotebook = {
  cells: [
    { metadata: { trainhub: { cell_index: null, status: 'ok' } } }, // injected parameters
    { metadata: { trainhub: { cell_index: 1, status: 'ok' } } },
    { metadata: { trainhub: { cell_index: 3, status: 'error' } } },
    { metadata: { trainhub: { cell_index: 4, status: 'not run' } } }
  ],
  metadata: { trainhub: { state: 'failed' } },
  nbformat: 4,
  nbformat_minor: 5
};

describe('the executed notebook', () => {
  it('finds a submitted cell by its index, past injected cells and markdown left out', () => {
    expect(positionOfCell(nb, 3)).toBe(2);
    expect(positionOfCell(nb, 1)).toBe(1);
    expect(positionOfCell(nb, 2)).toBe(-1); // a markdown cell: not in the executed notebook
  });

  it('counts the cells that ran to their end', () => {
    expect(cellsRun(nb)).toBe(3);
  });

  it('counts code cells only as cells to run, the markdown and raw cells kept beside them', () => {
    const whole: IExecutedNotebook = {
      ...nb,
      cells: [
        { cell_type: 'markdown' },
        ...nb.cells.map(c => ({ ...c, cell_type: 'code' })),
        { cell_type: 'raw' }
      ]
    };
    expect(codeCells(whole)).toBe(4);
    expect(cellsRun(whole)).toBe(3);
  });

  it("lists the ranks the spec asks for, rank 0's by default", () => {
    const job = (notebook_ranks?: number[] | 'all') =>
      ({ spec: { notebook_ranks }, world_size: 3 }) as unknown as Parameters<
        typeof notebookRanks
      >[0];
    expect(notebookRanks(job())).toEqual([0]);
    expect(notebookRanks(job([2, 0]))).toEqual([0, 2]);
    expect(notebookRanks(job('all'))).toEqual([0, 1, 2]);
    expect(notebookRanks(job([]))).toEqual([]);
  });

  it('names a copy so that nothing is overwritten', async () => {
    const taken = new Set(['work/nb-j1.ipynb', 'work/nb-j1-2.ipynb']);
    const exists = async (path: string) => taken.has(path);
    expect(await freePath(exists, 'work', 'nb-j1')).toBe('work/nb-j1-3.ipynb');
    expect(await freePath(exists, '', 'nb-j1')).toBe('nb-j1.ipynb');
  });
});
