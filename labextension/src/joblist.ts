/**
 * What the Jobs panel lists: pages of the server's search, kept current by the live job
 * updates, held still while the pointer is over the list (arrivals wait as "N new jobs"),
 * a sweep's trials grouped into one entry, flattened into equal rows for a windowed list.
 */
import type { IListOptions } from './api';
import { IJobPage, IJobSummary, JobState, TERMINAL_STATES } from './models';

export type StateFilter = '' | 'active' | JobState;

export interface IListQuery {
  /** Words found in name, tags, note and parameters (the server's rule). */
  q: string;
  state: StateFilter;
  sweep: string;
}

export const EMPTY_QUERY: IListQuery = { q: '', state: '', sweep: '' };
// Not ended: a suspended job is work still to do.
const ACTIVE: JobState[] = ['queued', 'starting', 'running', 'retrying', 'suspended'];

/** The list request of a query (one page, from `before`). */
export function listOptions(
  query: IListQuery,
  options: { limit?: number; before?: number | null; scalar?: string } = {}
): IListOptions {
  const states: JobState[] | undefined = !query.state
    ? undefined
    : query.state === 'active'
      ? ACTIVE
      : [query.state];
  return {
    states,
    q: query.q.trim() || undefined,
    sweep: query.sweep.trim() || undefined,
    limit: options.limit,
    before: options.before ?? undefined,
    scalar: options.scalar?.trim() || undefined
  };
}

function valueText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** What a search looks in (trainhub/jobs/search.py search_text), lower case. */
export function searchText(job: IJobSummary): string {
  const params = Object.entries(job.parameters ?? {}).map(([k, v]) => `${k}=${valueText(v)}`);
  return [job.name, ...(job.tags ?? []), job.note ?? '', ...params].join('\n').toLowerCase();
}

/** Whether the query finds the job, as the server decides it (for live arrivals). */
export function matchesQuery(job: IJobSummary, query: IListQuery): boolean {
  const wrongState =
    query.state === 'active'
      ? TERMINAL_STATES.has(job.state)
      : !!query.state && job.state !== query.state;
  if (wrongState) {
    return false;
  }
  if (query.sweep.trim() && job.sweep_id !== query.sweep.trim()) {
    return false;
  }
  const text = searchText(job);
  return query.q
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every(word => text.includes(word));
}

function newerFirst(a: IJobSummary, b: IJobSummary): number {
  return (b.seq ?? 0) - (a.seq ?? 0) || b.created_at - a.created_at;
}

/**
 * The listed jobs of one query. Pages come from the server; live updates change rows in
 * place, and add a job the query finds when it is newer than the last page's end. While
 * held, nothing is added or taken away (rows only change in place): new jobs wait in
 * `pending` and a job that no longer matches stays until released.
 */
export class JobList {
  private rows = new Map<string, IJobSummary>();
  private shown: IJobSummary[] = [];
  private readonly waiting = new Map<string, IJobSummary>();
  private held = false;
  /** seq to load the next page from; null when the last page is loaded. */
  nextBefore: number | null = null;
  total = 0;

  constructor(readonly query: IListQuery = EMPTY_QUERY) {}

  /** The jobs to show, newest first. */
  get jobs(): IJobSummary[] {
    return this.shown;
  }

  /** New jobs waiting for the hold to end. */
  get pending(): number {
    return this.waiting.size;
  }

  get isHeld(): boolean {
    return this.held;
  }

  get(id: string): IJobSummary | undefined {
    return this.rows.get(id);
  }

  /** Add a page of the server's answer (the first one, or the next). */
  addPage(page: IJobPage): void {
    for (const job of page.jobs) {
      this.rows.set(job.id, job);
      this.waiting.delete(job.id);
    }
    this.nextBefore = page.next_before ?? null;
    this.total = page.total;
    this.rebuild();
  }

  /** A live update of one job. Returns whether what is shown changed. */
  update(job: IJobSummary): boolean {
    const known = this.rows.get(job.id);
    if (known) {
      // Live updates and an edit's answer carry no scalar (the list asked for it; the server
      // writes none as null): keep the one the page had.
      job = job.scalar == null && known.scalar ? { ...job, scalar: known.scalar } : job;
      this.rows.set(job.id, job);
      if (!this.held && !matchesQuery(job, this.query)) {
        this.rows.delete(job.id);
        this.total = Math.max(0, this.total - 1);
      }
      this.rebuild();
      return true;
    }
    if (!matchesQuery(job, this.query) || !this.withinLoaded(job)) {
      return false;
    }
    if (this.held) {
      this.waiting.set(job.id, job);
      return true;
    }
    this.rows.set(job.id, job);
    this.total += 1;
    this.rebuild();
    return true;
  }

  /** Hold the list still (the pointer is over it), or let what waited in. */
  hold(held: boolean): void {
    if (this.held === held) {
      return;
    }
    this.held = held;
    if (!held) {
      this.release();
    }
  }

  /** Show the jobs that waited, and drop those that no longer match. */
  release(): void {
    for (const job of this.waiting.values()) {
      if (!this.rows.has(job.id)) {
        this.total += 1;
      }
      this.rows.set(job.id, job);
    }
    this.waiting.clear();
    for (const [id, job] of this.rows) {
      if (!matchesQuery(job, this.query)) {
        this.rows.delete(id);
        this.total = Math.max(0, this.total - 1);
      }
    }
    this.rebuild();
  }

  /** A job older than the last loaded page belongs to a page not loaded yet. */
  private withinLoaded(job: IJobSummary): boolean {
    if (this.nextBefore === null) {
      return true;
    }
    return (job.seq ?? 0) >= this.nextBefore;
  }

  private rebuild(): void {
    this.shown = [...this.rows.values()].sort(newerFirst);
  }
}

/** One entry of the panel: a job, or a sweep's trials as one. */
export type ListEntry =
  { kind: 'job'; job: IJobSummary } | { kind: 'sweep'; sweepId: string; trials: IJobSummary[] };

/** Group a sweep's trials into one entry, placed where its newest trial is. */
export function groupSweeps(jobs: IJobSummary[]): ListEntry[] {
  const out: ListEntry[] = [];
  const sweeps = new Map<string, { kind: 'sweep'; sweepId: string; trials: IJobSummary[] }>();
  for (const job of jobs) {
    const id = job.sweep_id;
    if (!id) {
      out.push({ kind: 'job', job });
      continue;
    }
    let entry = sweeps.get(id);
    if (!entry) {
      entry = { kind: 'sweep', sweepId: id, trials: [] };
      sweeps.set(id, entry);
      out.push(entry);
    }
    entry.trials.push(job);
  }
  return out;
}

/** A row of the windowed list: every row is the same height. */
export type ListRow =
  | { kind: 'job'; job: IJobSummary; trial: boolean }
  | { kind: 'sweep'; sweepId: string; trials: IJobSummary[]; expanded: boolean };

export function flattenEntries(entries: ListEntry[], expanded: ReadonlySet<string>): ListRow[] {
  const rows: ListRow[] = [];
  for (const e of entries) {
    if (e.kind === 'job') {
      rows.push({ kind: 'job', job: e.job, trial: false });
      continue;
    }
    const open = expanded.has(e.sweepId);
    rows.push({ kind: 'sweep', sweepId: e.sweepId, trials: e.trials, expanded: open });
    if (open) {
      rows.push(...e.trials.map(job => ({ kind: 'job' as const, job, trial: true })));
    }
  }
  return rows;
}

/** The rows of a windowed list to render: those in view plus `overscan` on each side. */
export function visibleRange(
  scrollTop: number,
  viewHeight: number,
  rowHeight: number,
  count: number,
  overscan = 6
): { start: number; end: number } {
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const inView = Math.ceil(Math.max(viewHeight, rowHeight) / rowHeight);
  return {
    start: Math.max(0, first - overscan),
    end: Math.min(count, first + inView + overscan)
  };
}

/** How many states each of a sweep's trials is in: "3 running · 5 succeeded". */
export function trialStates(trials: IJobSummary[]): string {
  const counts = new Map<JobState, number>();
  for (const t of trials) {
    counts.set(t.state, (counts.get(t.state) ?? 0) + 1);
  }
  return [...counts].map(([s, n]) => `${n} ${s}`).join(' · ');
}

/** A scalar's value, short: 4 significant digits. */
export function scalarText(value: number): string {
  return Math.abs(value) >= 1e5 || (value !== 0 && Math.abs(value) < 1e-3)
    ? value.toExponential(2)
    : String(Number(value.toPrecision(4)));
}

/** Tags as typed: separated by commas or spaces, each once, in order. */
export function parseTags(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter(Boolean))];
}
