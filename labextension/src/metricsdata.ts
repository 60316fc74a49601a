/** Metric records -> chart series (pure). */
import { ISeries, Point } from './charts';
import { IGpuRecord, IScalarRecord, ISystemRecord } from './models';

type Reading<R> = (r: R) => number | null | undefined;

const GIB = 2 ** 30;
const gib = (v: number | null | undefined) => (v === null || v === undefined ? null : v / GIB);

export const GPU_CHARTS: {
  title: string;
  unit: string;
  value: Reading<IGpuRecord>;
  yRange?: [number, number];
}[] = [
  { title: 'GPU utilization', unit: '%', value: r => r.utilization, yRange: [0, 100] },
  { title: 'GPU memory', unit: 'GiB', value: r => gib(r.memory_used) },
  { title: 'Power', unit: 'W', value: r => r.power_w },
  { title: 'Temperature', unit: '°C', value: r => r.temperature_c }
];

/**
 * CPU and memory of the job's processes (each rank with its children; metrics/system.jsonl)
 * and of the machine they run on.
 */
export const SYSTEM_CHARTS: {
  title: string;
  unit: string;
  /** Rank records, or the machine's (rank null). */
  of: 'ranks' | 'machine';
  value: Reading<ISystemRecord>;
  yRange?: [number, number];
}[] = [
  { title: 'CPU of the ranks', unit: '% of a core', of: 'ranks', value: r => r.cpu_percent },
  { title: 'Memory of the ranks', unit: 'GiB', of: 'ranks', value: r => gib(r.rss_bytes) },
  { title: 'Machine CPU', unit: '%', of: 'machine', value: r => r.cpu_percent, yRange: [0, 100] },
  { title: 'Machine memory', unit: 'GiB', of: 'machine', value: r => gib(r.memory_used) }
];

/** One series per key of `records` (sorted), x = seconds since `t0`. */
function seriesBy<R extends { time: number }>(
  records: R[],
  key: (r: R) => number | string | null,
  label: (k: number | string) => string,
  value: Reading<R>,
  t0: number
): ISeries[] {
  const groups = new Map<number | string, Point[]>();
  for (const r of records) {
    const k = key(r);
    const v = value(r);
    if (k === null || v === null || v === undefined || !Number.isFinite(v)) {
      continue;
    }
    let points = groups.get(k);
    if (!points) {
      points = [];
      groups.set(k, points);
    }
    points.push([r.time - t0, v]);
  }
  return [...groups.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([k, points]) => ({ label: label(k), points }));
}

/** The time sampled charts count from: the earliest of the first samples given. */
export function firstTime(...lists: { time: number }[][]): number {
  const firsts = lists.filter(l => l.length).map(l => l[0].time);
  return firsts.length ? Math.min(...firsts) : 0;
}

/** Series per GPU for one reading; time relative to `t0` (default: the first sample). */
export function gpuSeries(
  records: IGpuRecord[],
  value: Reading<IGpuRecord>,
  t0?: number
): ISeries[] {
  return seriesBy(
    records,
    r => r.gpu,
    k => `GPU ${k}`,
    value,
    t0 ?? firstTime(records)
  );
}

/** Series per rank (or per machine) of one system chart. */
export function systemSeries(
  records: ISystemRecord[],
  chart: (typeof SYSTEM_CHARTS)[number],
  t0?: number
): ISeries[] {
  const ranks = chart.of === 'ranks';
  return seriesBy(
    records,
    r =>
      ranks
        ? typeof r.rank === 'number'
          ? r.rank
          : null
        : r.rank === null
          ? (r.host ?? 'machine')
          : null,
    k => (ranks ? `rank ${k}` : String(k)),
    chart.value,
    t0 ?? firstTime(records)
  );
}

/** The ranks that logged scalars, in order (records without a rank are rank 0's). */
export function scalarRanks(records: IScalarRecord[]): number[] {
  const ranks = new Set<number>();
  for (const r of records) {
    ranks.add(r.rank ?? 0);
  }
  return [...ranks].sort((a, b) => a - b);
}

/** Steps -> value, the latest record winning when a step repeats (a retried attempt). */
function byStep(records: IScalarRecord[], keep: (r: IScalarRecord) => string | null) {
  const out = new Map<string, Map<number, number>>();
  for (const r of records) {
    if (typeof r.value !== 'number' || !Number.isFinite(r.value)) {
      continue;
    }
    const k = keep(r);
    if (k === null) {
      continue;
    }
    let steps = out.get(k);
    if (!steps) {
      steps = new Map();
      out.set(k, steps);
    }
    steps.set(r.step, r.value);
  }
  return out;
}

const sortedPoints = (steps: Map<number, number>): Point[] =>
  [...steps.entries()].sort((a, b) => a[0] - b[0]);

/** One series per scalar name, by step (the latest value wins when a step repeats). */
export function scalarSeries(records: IScalarRecord[]): Map<string, ISeries> {
  const out = new Map<string, ISeries>();
  const names = byStep(records, r => r.name);
  for (const name of [...names.keys()].sort()) {
    out.set(name, { label: name, points: sortedPoints(names.get(name)!) });
  }
  return out;
}

/**
 * Per scalar name, the series of one rank, or of every rank ('all': one series per rank,
 * coloured by rank).
 */
export function scalarSeriesOf(
  records: IScalarRecord[],
  rank: number | 'all'
): Map<string, ISeries[]> {
  const groups = byStep(records, r =>
    rank === 'all' || (r.rank ?? 0) === rank ? `${r.name}\u0000${r.rank ?? 0}` : null
  );
  const out = new Map<string, ISeries[]>();
  const keys = [...groups.keys()]
    .map(k => k.split('\u0000'))
    .sort((a, b) => (a[0] === b[0] ? Number(a[1]) - Number(b[1]) : a[0] < b[0] ? -1 : 1));
  for (const [name, r] of keys) {
    const list = out.get(name) ?? [];
    const points = sortedPoints(groups.get(`${name}\u0000${r}`)!);
    list.push({ label: rank === 'all' ? `rank ${r}` : name, points, color: Number(r) });
    out.set(name, list);
  }
  return out;
}

/**
 * A fork's curves continue its parent's: each of the parent's series, cut at the step it
 * forked from (or, when the step is not known, before the job's own first step), is put in
 * front of the job's own, dashed and in the same colour.
 */
export function withParent(
  own: Map<string, ISeries[]>,
  parent: Map<string, ISeries[]>,
  forkStep: number | null,
  parentLabel: string
): Map<string, ISeries[]> {
  const out = new Map<string, ISeries[]>();
  const names = [...new Set([...own.keys(), ...parent.keys()])].sort();
  for (const name of names) {
    const mine = own.get(name) ?? [];
    const firstOwn = Math.min(...mine.filter(s => s.points.length).map(s => s.points[0][0]));
    const before = (step: number) =>
      forkStep !== null ? step <= forkStep : !Number.isFinite(firstOwn) || step < firstOwn;
    const history = (parent.get(name) ?? [])
      .map((s, i) => ({
        label: `${s.label} · ${parentLabel}`,
        points: s.points.filter(p => before(p[0])),
        color: s.color ?? mine[i]?.color ?? i,
        dashed: true
      }))
      .filter(s => s.points.length);
    out.set(name, [...history, ...mine.map((s, i) => ({ ...s, color: s.color ?? i }))]);
  }
  return out;
}
