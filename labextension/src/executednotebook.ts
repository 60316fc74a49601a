/** The executed notebook of a job, as the server answers it: finding cells, ranks, a free name. */
import { IDescribeJob } from './models';

/** nbformat JSON as GET jobs/{id}/notebook answers it (each cell's metadata.trainhub). */
export interface IExecutedNotebook {
  cells: {
    cell_type?: string;
    metadata?: { trainhub?: { cell_index?: number | null; status?: string } };
  }[];
  metadata: { trainhub?: { state?: string; truncated?: boolean } };
  nbformat: number;
  nbformat_minor: number;
}

/** The position in the executed notebook of the submitted notebook's cell `cellIndex` (-1). */
export function positionOfCell(nb: IExecutedNotebook, cellIndex: number): number {
  return nb.cells.findIndex(c => c.metadata?.trainhub?.cell_index === cellIndex);
}

/** How many cells have run to their end (ok or error). */
export function cellsRun(nb: IExecutedNotebook): number {
  return nb.cells.filter(c => ['ok', 'error'].includes(c.metadata?.trainhub?.status ?? '')).length;
}

/** How many code cells the notebook holds: the cells a job runs (markdown and raw cells are kept
 * in the executed notebook, never run). */
export function codeCells(nb: IExecutedNotebook): number {
  return nb.cells.filter(c => c.cell_type === 'code').length;
}

/** The ranks that keep an executed notebook: the spec's notebook_ranks ([0] unless it says). */
export function notebookRanks(job: Pick<IDescribeJob, 'spec' | 'world_size'>): number[] {
  const ranks = job.spec.notebook_ranks ?? [0];
  if (ranks === 'all') {
    return Array.from({ length: job.world_size }, (_, r) => r);
  }
  return [...ranks].sort((a, b) => a - b);
}

/** A path for a copy that overwrites nothing: `dir/stem.ipynb`, else `dir/stem-2.ipynb`, ... */
export async function freePath(
  exists: (path: string) => Promise<boolean>,
  dir: string,
  stem: string
): Promise<string> {
  for (let n = 1; ; n++) {
    const name = `${stem}${n === 1 ? '' : `-${n}`}.ipynb`;
    const path = dir && dir !== '.' ? `${dir}/${name}` : name;
    if (!(await exists(path))) {
      return path;
    }
  }
}
