/**
 * What a job's overview says first, built by pure functions from its description, events,
 * scalars and checkpoints: progress while it runs, its result once it has ended, the
 * parameters that differ from the notebook's, and a timeline that says each thing once.
 */
import { cellLabel, formatDuration } from './format';
import { ICheckpointInfo, IJobSpec, IScalarRecord, ITimelineEvent, IVerdict } from './models';
import { workerText } from './specform';

/** Scalars where smaller is better; every other scalar counts larger as better. */
const SMALLER_IS_BETTER = /loss|err|perplexity|mse|mae|rmse|nll|wer|cer/i;

export function smallerIsBetter(name: string): boolean {
  return SMALLER_IS_BETTER.test(name);
}

export interface IScalarSummary {
  name: string;
  last: { step: number; value: number };
  best: { step: number; value: number };
  /** Whether "best" means the smallest value. */
  minimize: boolean;
}

/** Last and best value of each scalar (one rank's records; latest attempt wins a step). */
export function summarizeScalars(records: Iterable<IScalarRecord>): IScalarSummary[] {
  const byName = new Map<string, Map<number, number>>();
  for (const r of records) {
    if (!Number.isFinite(r.value)) {
      continue;
    }
    let steps = byName.get(r.name);
    if (!steps) {
      steps = new Map();
      byName.set(r.name, steps);
    }
    steps.set(r.step, r.value);
  }
  const out: IScalarSummary[] = [];
  for (const [name, steps] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    const points = [...steps].sort(([a], [b]) => a - b);
    const minimize = smallerIsBetter(name);
    let best = points[0];
    for (const p of points) {
      if (minimize ? p[1] < best[1] : p[1] > best[1]) {
        best = p;
      }
    }
    const last = points[points.length - 1];
    out.push({
      name,
      last: { step: last[0], value: last[1] },
      best: { step: best[0], value: best[1] },
      minimize
    });
  }
  return out;
}

/** The latest step any scalar reached, or null before the first. */
export function latestStep(scalars: IScalarSummary[]): number | null {
  return scalars.length ? Math.max(...scalars.map(s => s.last.step)) : null;
}

/**
 * Cells rank 0 finished without an error in its latest attempt (a retry starts the count
 * again; a cell that raised is not done).
 */
export function cellsDone(events: Iterable<Record<string, unknown>>): number {
  let attempt = -1;
  let done = new Set<number>();
  for (const e of events) {
    if (e.type !== 'cell' || Number(e.rank ?? 0) !== 0) {
      continue;
    }
    const a = Number(e.attempt ?? 0);
    if (a > attempt) {
      attempt = a;
      done = new Set();
    }
    if (a === attempt && e.phase === 'end' && e.ok !== false) {
      done.add(Number(e.cell_index));
    }
  }
  return done.size;
}

/**
 * The checkpoint with the best value of a metric it recorded (the first loss-like metric,
 * else the first one); the latest checkpoint when none recorded metrics.
 */
export function bestCheckpoint(
  checkpoints: ICheckpointInfo[]
): { checkpoint: ICheckpointInfo; metric: string | null } | null {
  if (!checkpoints.length) {
    return null;
  }
  const names = [...new Set(checkpoints.flatMap(c => Object.keys(c.metrics)))].sort();
  const metric = names.find(smallerIsBetter) ?? names[0] ?? null;
  const latest = checkpoints.reduce((a, b) => (b.step > a.step ? b : a));
  if (metric === null) {
    return { checkpoint: latest, metric: null };
  }
  const minimize = smallerIsBetter(metric);
  let best: ICheckpointInfo | null = null;
  for (const c of checkpoints) {
    const v = c.metrics[metric];
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      continue;
    }
    const b = best?.metrics[metric];
    if (best === null || (minimize ? v < (b as number) : v > (b as number))) {
      best = c;
    }
  }
  return { checkpoint: best ?? latest, metric: best ? metric : null };
}

export interface IParameterRow {
  name: string;
  value: unknown;
  /** The notebook's value, when the notebook has this parameter. */
  notebook?: unknown;
  changed: boolean;
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The job's parameters against the notebook's parameters cell: those that differ first
 * (then by name), then the notebook's own values the job ran with unchanged.
 */
export function parameterRows(
  submitted: Record<string, unknown>,
  notebook: Record<string, unknown>
): IParameterRow[] {
  const rows: IParameterRow[] = [];
  for (const [name, value] of Object.entries(submitted)) {
    const has = Object.prototype.hasOwnProperty.call(notebook, name);
    rows.push({
      name,
      value,
      ...(has ? { notebook: notebook[name] } : {}),
      changed: !has || !same(value, notebook[name])
    });
  }
  for (const [name, value] of Object.entries(notebook)) {
    if (!Object.prototype.hasOwnProperty.call(submitted, name)) {
      rows.push({ name, value, notebook: value, changed: false });
    }
  }
  return rows.sort((a, b) => Number(b.changed) - Number(a.changed) || a.name.localeCompare(b.name));
}

/** The spec's settings as key/value pairs, leaving out what is empty or the default. */
export function specRows(spec: IJobSpec): [string, string][] {
  const r = spec.resources ?? {};
  const rows: [string, string | null | undefined | false][] = [
    ['source', `${spec.source.kind} ${spec.source.path}`],
    [
      'cells',
      spec.source.kind === 'notebook' && spec.source.cells && spec.source.cells.mode !== 'all'
        ? spec.source.cells.mode === 'indices'
          ? (spec.source.cells.indices ?? []).map(i => cellLabel(i)).join(', ')
          : `tagged ${(spec.source.cells.tags ?? []).join(', ')}`
        : null
    ],
    [
      'args',
      spec.source.kind === 'script' && spec.source.args?.length ? spec.source.args.join(' ') : null
    ],
    ['workers', workerText(r)],
    ['processes per worker', r.processes_per_worker ? String(r.processes_per_worker) : null],
    ['GPUs per worker', r.gpus_per_worker ? String(r.gpus_per_worker) : null],
    ['CPU', r.cpu ? String(r.cpu) : null],
    ['memory', r.memory],
    ['image', spec.image],
    ['team', spec.team],
    ['queue', spec.queue],
    ['priority', spec.priority && spec.priority !== 'normal' ? spec.priority : null],
    [
      'max runtime',
      spec.max_runtime !== null && spec.max_runtime !== undefined ? String(spec.max_runtime) : null
    ],
    ['tags', spec.tags?.length ? spec.tags.join(', ') : null],
    [
      'forked from',
      spec.fork_from
        ? `${spec.fork_from.job_id}${
            spec.fork_from.step !== null && spec.fork_from.step !== undefined
              ? ` at step ${spec.fork_from.step}`
              : ''
          }`
        : null
    ],
    [
      'environment',
      spec.env && Object.keys(spec.env).length ? Object.keys(spec.env).join(', ') : null
    ]
  ];
  return rows.filter((row): row is [string, string] => typeof row[1] === 'string' && row[1] !== '');
}

/** The timeline without an event repeated right after itself (same content, later time). */
export function dedupeTimeline(events: ITimelineEvent[]): ITimelineEvent[] {
  const key = (e: ITimelineEvent) => {
    // eslint-disable-next-line @typescript-eslint/no-unused-vars
    const { time, ...rest } = e;
    return JSON.stringify(rest, Object.keys(rest).sort());
  };
  const out: ITimelineEvent[] = [];
  let previous = '';
  for (const e of events) {
    const k = key(e);
    if (k !== previous) {
      out.push(e);
    }
    previous = k;
  }
  return out;
}

/** "KeyError 'validation'" / "ValueError: not the answer: 41" / the verdict's reason. */
export function failureWhat(verdict: IVerdict): string {
  const message = (verdict.message ?? '').trim().split('\n')[0];
  if (!verdict.exception) {
    return message || verdict.reason;
  }
  if (!message) {
    return verdict.exception;
  }
  // A KeyError's message is the quoted key itself.
  return /^['"]/.test(message)
    ? `${verdict.exception} ${message}`
    : `${verdict.exception}: ${message}`;
}

/** Where a failure happened, for people: "cell 3, line 2" or "rank 1". */
export function failureWhere(verdict: IVerdict): string {
  if (verdict.cell_index !== null && verdict.cell_index !== undefined) {
    return `${cellLabel(verdict.cell_index)}${verdict.line ? `, line ${verdict.line}` : ''}`;
  }
  return verdict.rank !== null && verdict.rank !== undefined ? `rank ${verdict.rank}` : '';
}

/** The notification of a failed job: "Job x failed in cell 3: KeyError 'validation'". */
export function failureNotice(name: string, verdict: IVerdict | null | undefined): string {
  if (!verdict) {
    return `Job ${name} failed.`;
  }
  const where = failureWhere(verdict);
  const what = verdict.exception ? failureWhat(verdict) : verdict.reason;
  return `Job ${name} failed${where ? ` in ${where}` : ''}: ${what}`;
}

/** One sentence per timeline event. */
export function describeEvent(e: ITimelineEvent): string {
  const f = e as Record<string, unknown>;
  switch (e.type) {
    case 'submitted':
      return `submitted by ${String(f.user ?? '?')}`;
    case 'state':
      return `${String(f.state)}${f.attempt ? ` (attempt ${Number(f.attempt) + 1})` : ''}${
        f.reason ? `: ${String(f.reason)}` : ''
      }`;
    case 'verdict':
      return f.failure_class === 'cancelled'
        ? `cancelled${f.reason ? `: ${String(f.reason)}` : ''}`
        : `${String(f.failure_class)} failure: ${String(f.reason ?? '')}`;
    case 'retry':
      return `retry${f.delay ? ` in ${formatDuration(Number(f.delay))}` : ''}${
        f.reason ? `: ${String(f.reason)}` : ''
      }`;
    case 'resize':
      return String(f.reason ?? 'resized');
    case 'cancel_requested':
      return `cancel requested${f.reason ? `: ${String(f.reason)}` : ''}`;
    case 'suspend_requested':
      return `suspend requested${f.reason ? `: ${String(f.reason)}` : ''}`;
    case 'suspended':
      return f.step === null || f.step === undefined
        ? 'suspended (no checkpoint yet)'
        : `suspended at step ${String(f.step)}`;
    case 'pip_install':
      return `pip install ${String(f.phase ?? '')}${f.ok === false ? ' (failed)' : ''}`;
    default:
      return e.type;
  }
}
