/**
 * Comparing runs: the answer of GET trainhub/api/compare (trainhub/experiments/compare.py
 * Comparison) and the pure functions the compare view draws it with.
 */
import { ISeries, Point } from './charts';
import { FailureClass, IVerdict, JobState, TERMINAL_STATES } from './models';

export const MIN_COMPARED = 2;
export const MAX_COMPARED = 10;

export interface ICompareRow {
  name: string;
  /** One value per job, in the jobs' order; null where the job has none. */
  values: unknown[];
  differs: boolean;
}

export interface IComparePoint {
  step: number;
  value: number;
  /** Seconds since the job started. */
  time: number;
}

export interface IScalarRow {
  name: string;
  goal: 'min' | 'max';
  last: (IComparePoint | null)[];
  best: (IComparePoint | null)[];
  best_job?: string | null;
}

export interface ICompareSeries {
  name: string;
  job_id: string;
  /** [step, seconds since the job started, value] */
  points: [number, number, number][];
  total: number;
}

export interface ICellChange {
  change: 'changed' | 'added' | 'removed';
  before: number | null;
  after: number | null;
  diff: string;
}

export interface ICodeDiff {
  job_id: string;
  against: string;
  identical: boolean;
  changes: ICellChange[];
  truncated: boolean;
  note?: string | null;
}

export interface IComparedJob {
  id: string;
  name: string;
  state: JobState;
  failure_class?: FailureClass | null;
  verdict?: IVerdict | null;
  source: string;
  created_at: number;
  started_at?: number | null;
  finished_at?: number | null;
  elapsed_s?: number | null;
  attempts: number;
  notes: string[];
}

export interface IComparison {
  jobs: IComparedJob[];
  parameters: ICompareRow[];
  lineage: ICompareRow[];
  packages: ICompareRow[];
  packages_same: number;
  datasets: ICompareRow[];
  resources: ICompareRow[];
  outcome: ICompareRow[];
  code: ICodeDiff[];
  scalars: IScalarRow[];
  series: ICompareSeries[];
}

export type XAxis = 'step' | 'time';

/**
 * The ids a `trainhub:compare` command was given, each once in order; an error sentence
 * when there are not 2 to 10 of them.
 */
export function compareIds(args: unknown): string[] {
  const given = (args as { ids?: unknown } | null)?.ids;
  if (!Array.isArray(given) || !given.every(id => typeof id === 'string' && id)) {
    throw new Error('trainhub:compare takes {ids: [job ids]}');
  }
  const ids = [...new Set(given as string[])];
  if (ids.length < MIN_COMPARED || ids.length > MAX_COMPARED) {
    throw new Error(`Select ${MIN_COMPARED} to ${MAX_COMPARED} different jobs to compare.`);
  }
  return ids;
}

/** Differing rows first, each group in the server's order. */
export function differingFirst<T extends { differs: boolean }>(rows: T[]): T[] {
  return [...rows.filter(r => r.differs), ...rows.filter(r => !r.differs)];
}

/** A value as a table cell says it: `—` for none, JSON for lists and objects. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) {
    return '—';
  }
  if (typeof value === 'boolean') {
    return value ? 'yes' : 'no';
  }
  if (typeof value === 'number') {
    return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * The verdict row's cell: a failure's class and reason (shown as an error), else what the
 * job's state says — a succeeded job reads "succeeded", one still going "not ended yet".
 */
export function verdictCell(job: Pick<IComparedJob, 'state' | 'verdict'>): {
  text: string;
  failed: boolean;
} {
  if (job.verdict) {
    return { text: `${job.verdict.failure_class}: ${job.verdict.reason}`, failed: true };
  }
  return { text: TERMINAL_STATES.has(job.state) ? job.state : 'not ended yet', failed: false };
}

/** Column headings: the job names, with the id where two jobs share a name. */
export function jobLabels(jobs: Pick<IComparedJob, 'id' | 'name'>[]): string[] {
  const counts = new Map<string, number>();
  jobs.forEach(j => counts.set(j.name, (counts.get(j.name) ?? 0) + 1));
  return jobs.map(j => ((counts.get(j.name) ?? 0) > 1 ? j.id : j.name));
}

/** The scalar a chart shows first: the first loss-like one, else the first. */
export function defaultScalar(scalars: IScalarRow[]): string | null {
  return (scalars.find(s => s.goal === 'min') ?? scalars[0])?.name ?? null;
}

/**
 * One chart series per job for scalar `name` against steps or seconds since the start,
 * coloured by the job's column (so a job keeps its colour in every chart).
 */
export function curves(comparison: IComparison, name: string, x: XAxis): ISeries[] {
  const labels = jobLabels(comparison.jobs);
  const out: ISeries[] = [];
  comparison.jobs.forEach((job, i) => {
    const s = comparison.series.find(c => c.job_id === job.id && c.name === name);
    if (!s) {
      return;
    }
    const points: Point[] = s.points.map(p => [x === 'step' ? p[0] : p[1], p[2]]);
    if (x === 'time') {
      points.sort((a, b) => a[0] - b[0]); // a retried step is logged again, later
    }
    out.push({ label: labels[i], points, color: i });
  });
  return out;
}

/** How the last/best cell of a scalar reads: `0.25 @ step 100`. */
export function pointText(point: IComparePoint | null): string {
  return point ? `${cellText(point.value)} @ step ${point.step}` : '—';
}

/** A line of a unified diff and how it is marked: added, removed, a header, or context. */
export function diffLineKind(line: string): 'add' | 'remove' | 'header' | 'context' {
  if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('@@')) {
    return 'header';
  }
  if (line.startsWith('+')) {
    return 'add';
  }
  if (line.startsWith('-')) {
    return 'remove';
  }
  return /^(added|removed) /.test(line) ? 'header' : 'context';
}

/** A job's code against the baseline in a few words. */
export function codeSummary(diff: ICodeDiff): string {
  if (diff.note) {
    return diff.note;
  }
  if (diff.identical) {
    return 'the same code';
  }
  const count = (kind: ICellChange['change']) => diff.changes.filter(c => c.change === kind).length;
  const parts = (['changed', 'added', 'removed'] as const)
    .filter(k => count(k))
    .map(k => `${count(k)} cell${count(k) === 1 ? '' : 's'} ${k}`);
  return parts.join(', ') + (diff.truncated ? ' (diff cut short)' : '');
}
