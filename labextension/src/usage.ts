/**
 * The Usage panel's and the job view's goodput data (GET trainhub/api/usage/panel,
 * GET jobs/{id}/usage), and the pure arithmetic their charts draw: a goodput breakdown,
 * a quota bar per pool, bars per day. Seconds throughout, as the server sends them.
 */
import { IDataWait } from './models';

/**
 * What a job's attempts' time went to (trainhub/usage/goodput.py), in seconds of the
 * attempts: times the job's GPUs, its GPU time. The shares are the same either way.
 */
export interface IGoodputParts {
  goodput: number | null;
  productive_s: number;
  startup_s: number;
  checkpoint_s: number;
  redone_s: number;
  interrupted_s: number;
  /** Steps' time spent waiting for data (absent in answers from before it was counted). */
  data_wait_s?: number;
}

export interface IJobUsage extends IGoodputParts {
  job_id: string;
  gpus: number;
  gpu_redone_s: number;
  gpu_allocated_s: number;
  gpu_busy_s: number;
  gpu_sampled_s: number;
  gpu_waste_s: number;
  wall_s: number;
  queue_wait_s: number;
  requeue_s: number;
  steps: number;
  redone_steps: number;
  attempts: number;
  data_wait?: IDataWait | null;
}

export interface IPoolQuota {
  pool: string;
  resource: string;
  used: number;
  nominal: number | null;
  borrowed: number;
  lendable: number | null;
}

export interface IWastefulJob extends IGoodputParts {
  job_id: string;
  gpus: number;
  state: string;
  finished_at: number;
  gpu_allocated_s: number;
  gpu_waste_s: number;
}

/** The share of a GPU this session holds (trainhub/metrics/gpushare.py), null for none. */
export interface ISessionGpu {
  share: string;
  strategy: string;
  words: string;
  gpu_name: string | null;
  memory_total_bytes: number | null;
  others_bytes: number | null;
  /** "¼ of a GPU (time-sliced with 3 others) · 9.1 GiB in use by others" */
  line: string;
  reason: string | null;
}

export interface IUsagePanel {
  user: string;
  team: string | null;
  now: number;
  mine: { week: number; month: number };
  team_hours: { week: number; month: number } | null;
  daily: { day: string; mine: number; team: number | null }[];
  quotas: IPoolQuota[];
  quota_source: string;
  waiting: number;
  waiting_mine: number;
  typical_wait_s: number | null;
  ended_30d: number;
  failures: { failure_class: string; jobs: number; rate: number }[];
  goodput_30d: number | null;
  wasteful: IWastefulJob[];
  waste_utilization_pct: number;
  /** Absent in answers of servers from before shared GPUs. */
  session_gpu?: ISessionGpu | null;
}

export type GoodputKey =
  'productive' | 'startup' | 'checkpoint' | 'datawait' | 'redone' | 'interrupted';

export interface ISegment {
  key: GoodputKey;
  label: string;
  seconds: number;
  /** Share of the whole, in [0, 1]; the shares of one breakdown sum to 1. */
  share: number;
}

export const GOODPUT_LABELS: Record<GoodputKey, string> = {
  productive: 'kept progress',
  startup: 'start-up',
  checkpoint: 'checkpoint stalls',
  datawait: 'waiting for data',
  redone: 'redone steps',
  interrupted: 'interrupted attempts'
};

/**
 * The breakdown bar's segments, in a fixed order, zero parts left out; [] for a job that
 * logged no step (no goodput: nothing says what was progress).
 */
export function goodputSegments(parts: IGoodputParts): ISegment[] {
  const seconds: [GoodputKey, number][] = [
    ['productive', parts.productive_s],
    ['startup', parts.startup_s],
    ['checkpoint', parts.checkpoint_s],
    ['datawait', parts.data_wait_s ?? 0],
    ['redone', parts.redone_s],
    ['interrupted', parts.interrupted_s]
  ];
  const total = seconds.reduce((sum, [, s]) => sum + Math.max(0, s), 0);
  if (parts.goodput === null || !(total > 0)) {
    return [];
  }
  return seconds
    .filter(([, s]) => s > 0)
    .map(([key, s]) => ({ key, label: GOODPUT_LABELS[key], seconds: s, share: s / total }));
}

/** "87 %" (a share in [0, 1]); "–" when unknown. */
export function formatShare(share: number | null | undefined): string {
  if (share === null || share === undefined || !Number.isFinite(share)) {
    return '–';
  }
  const pct = share * 100;
  return `${pct > 0 && pct < 1 ? pct.toFixed(1) : Math.round(pct)} %`;
}

/** GPU-hours with the precision a small figure needs: 0.004 h, 1.25 h, 312 h. */
export function formatHours(hours: number): string {
  if (!(hours > 0)) {
    return '0 h';
  }
  if (hours < 0.01) {
    return `${hours.toFixed(4)} h`;
  }
  return `${hours < 10 ? hours.toFixed(2) : Math.round(hours)} h`;
}

/** "2 GPU-s", "1.5 GPU-min", "3.2 GPU-h". */
export function formatGpuSeconds(seconds: number): string {
  if (seconds < 90) {
    return `${Math.round(seconds)} GPU-s`;
  }
  if (seconds < 5400) {
    return `${(seconds / 60).toFixed(1)} GPU-min`;
  }
  return `${(seconds / 3600).toFixed(1)} GPU-h`;
}

export interface IQuotaBar {
  /** Fractions of the bar's width, in [0, 1]: used within the nominal quota, borrowed
   * beyond it, and free (lendable). */
  used: number;
  borrowed: number;
  free: number;
  text: string;
}

function amount(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

/**
 * The session's GPU line: the server's own sentence, and when the memory others use is not
 * known, why (its reason) in brackets; null when the session holds no share.
 */
export function sessionGpuText(s: ISessionGpu | null | undefined): string | null {
  if (!s) {
    return null;
  }
  return s.others_bytes === null && s.reason ? `${s.line} (memory in use: ${s.reason})` : s.line;
}

/** One pool's bar: the scale is the larger of the nominal quota and what is in use. */
export function quotaBar(q: IPoolQuota): IQuotaBar {
  const nominal = q.nominal ?? 0;
  const scale = Math.max(nominal, q.used, 1e-9);
  const borrowed = Math.min(Math.max(0, q.borrowed), q.used);
  const own = q.used - borrowed;
  const free = Math.max(0, q.lendable ?? nominal - own);
  const parts = [`${amount(q.used)} of ${q.nominal === null ? '?' : amount(nominal)} used`];
  if (borrowed > 0) {
    parts.push(`${amount(borrowed)} borrowed`);
  }
  if (q.lendable !== null) {
    parts.push(`${amount(q.lendable)} lendable`);
  }
  return {
    used: own / scale,
    borrowed: borrowed / scale,
    free: Math.min(free / scale, 1 - (own + borrowed) / scale),
    text: parts.join(' · ')
  };
}

export interface IBar {
  x: number;
  y: number;
  width: number;
  height: number;
  label: string;
  value: number;
}

/**
 * Bars of `values` side by side in a `width` x `height` plot (y down), scaled to the
 * largest value (at least `minMax`, so a quiet month does not draw full-height bars).
 */
export function barLayout(
  values: { label: string; value: number }[],
  width: number,
  height: number,
  minMax = 0
): IBar[] {
  if (!values.length) {
    return [];
  }
  const max = Math.max(minMax, ...values.map(v => v.value), 1e-9);
  const step = width / values.length;
  const gap = Math.min(2, step * 0.2);
  return values.map((v, i) => {
    const h = (Math.max(0, v.value) / max) * height;
    return {
      x: i * step + gap / 2,
      y: height - h,
      width: step - gap,
      height: h,
      label: v.label,
      value: v.value
    };
  });
}

/** The failure classes as bars: the class, its jobs and its share of the ended jobs. */
export function failureText(f: { failure_class: string; jobs: number; rate: number }): string {
  return `${f.failure_class}: ${f.jobs} job${f.jobs === 1 ? '' : 's'} (${formatShare(f.rate)})`;
}
