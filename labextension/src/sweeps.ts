/**
 * Sweeps: the answers of trainhub/api/sweeps (trainhub/experiments/models.py DescribeSweep),
 * the calls that ask for them, and the pure functions the sweep view works with (sorting
 * trials, the scatter of a parameter against a metric). The submit dialog's sweep fields turn
 * into a sweep's spec in ./sweepdraft.
 */
import { ServerConnection } from '@jupyterlab/services';

import { ISeries, Point } from './charts';
import { FailureClass, IJobSpec, JobState } from './models';
import { requestAPI } from './request';

export type DimensionKind = 'list' | 'range' | 'uniform' | 'loguniform' | 'choice';

export interface IDimension {
  kind: DimensionKind;
  values?: unknown[];
  start?: number;
  stop?: number;
  step?: number;
  scale?: 'linear' | 'log';
  low?: number;
  high?: number;
}

export interface IEarlyStop {
  rule: 'median' | 'halving';
  metric: string;
  mode?: 'min' | 'max';
  min_steps?: number;
  min_trials?: number;
  eta?: number;
}

export interface ISweepSpec {
  space: Record<string, IDimension>;
  sampler?: 'grid' | 'random';
  trials?: number | null;
  max_running?: number;
  seed?: number | null;
  early_stop?: IEarlyStop | null;
  metric?: string | null;
  mode?: 'min' | 'max';
}

export interface IScalarStat {
  last: number;
  min: number;
  max: number;
  step: number;
}

export interface ITrialView {
  trial: number;
  parameters: Record<string, unknown>;
  job_id?: string | null;
  state?: JobState | null;
  failure_class?: FailureClass | null;
  reason?: string | null;
  wait_reason?: string | null;
  error?: string | null;
  scalars: Record<string, IScalarStat>;
  value?: number | null;
  best: boolean;
}

export type SweepState = 'running' | 'finished' | 'cancelled';

export interface ISweepSummary {
  id: string;
  name: string;
  user: string;
  state: SweepState;
  created_at: number;
  finished_at?: number | null;
  sampler: string;
  trials: number;
  submitted: number;
  active: number;
  ended: number;
  stopped_early: number;
  metric?: string | null;
  mode: 'min' | 'max';
}

export interface IDescribeSweep extends ISweepSummary {
  sweep: ISweepSpec;
  job: IJobSpec;
  seed: number;
  best_trial?: number | null;
  trial_views: ITrialView[];
  cancel_reason?: string | null;
}

// --- calls ----------------------------------------------------------------------------------

export function getSweep(
  settings: ServerConnection.ISettings,
  id: string
): Promise<IDescribeSweep> {
  return requestAPI<IDescribeSweep>(['sweeps', id], {}, settings);
}

export function createSweep(
  settings: ServerConnection.ISettings,
  body: { job: IJobSpec; sweep: ISweepSpec }
): Promise<IDescribeSweep> {
  return requestAPI<IDescribeSweep>(['sweeps'], { method: 'POST', body }, settings);
}

export function cancelSweep(
  settings: ServerConnection.ISettings,
  id: string
): Promise<IDescribeSweep> {
  return requestAPI<IDescribeSweep>(
    ['sweeps', id, 'cancel'],
    { method: 'POST', body: {} },
    settings
  );
}

// --- the trials table -----------------------------------------------------------------------

/** What a trial's state says in the table: a trial its rule stopped says so, not "cancelled". */
export function trialStateLabel(t: ITrialView): string {
  if (t.error) {
    return 'refused';
  }
  if (!t.state) {
    return 'submitting';
  }
  return t.failure_class === 'stopped_early' ? 'stopped early' : t.state;
}

/** Every scalar any trial logged, the sweep's metric first. */
export function scalarNames(sweep: IDescribeSweep): string[] {
  const names = new Set<string>();
  for (const t of sweep.trial_views) {
    Object.keys(t.scalars).forEach(n => names.add(n));
  }
  const sorted = [...names].sort();
  const metric = sweep.metric;
  return metric && names.has(metric) ? [metric, ...sorted.filter(n => n !== metric)] : sorted;
}

export type SortKey = 'trial' | 'state' | `param:${string}` | `scalar:${string}`;

/** The value a column sorts by: a parameter, a scalar's last value (the metric's best). */
export function sortValue(
  t: ITrialView,
  key: SortKey,
  sweep?: Pick<IDescribeSweep, 'metric' | 'mode'>
): number | string | null {
  if (key === 'trial') {
    return t.trial;
  }
  if (key === 'state') {
    return trialStateLabel(t);
  }
  if (key.startsWith('param:')) {
    const v = t.parameters[key.slice(6)];
    return typeof v === 'number' || typeof v === 'string'
      ? v
      : v === undefined
        ? null
        : JSON.stringify(v);
  }
  const name = key.slice(7);
  const stat = t.scalars[name];
  if (!stat) {
    return null;
  }
  if (sweep && name === sweep.metric) {
    return sweep.mode === 'max' ? stat.max : stat.min;
  }
  return stat.last;
}

/** Trials ordered by a column; trials without a value go last either way. */
export function sortTrials(
  trials: ITrialView[],
  key: SortKey,
  descending = false,
  sweep?: Pick<IDescribeSweep, 'metric' | 'mode'>
): ITrialView[] {
  const sign = descending ? -1 : 1;
  return [...trials].sort((a, b) => {
    const va = sortValue(a, key, sweep);
    const vb = sortValue(b, key, sweep);
    if (va === null || vb === null) {
      return va === vb ? a.trial - b.trial : va === null ? 1 : -1;
    }
    const c =
      typeof va === 'number' && typeof vb === 'number'
        ? va - vb
        : String(va).localeCompare(String(vb));
    return c ? sign * c : a.trial - b.trial;
  });
}

// --- the scatter ----------------------------------------------------------------------------

export interface IScatter {
  series: ISeries[];
  /** The x axis is log10 of the parameter (a log range or a log-uniform dimension). */
  logX: boolean;
  /** Category names for a parameter that is not a number, by x position. */
  categories: string[];
  xLabel: string;
}

/** Trials as points of `param` (x) against `metric` (y): the best trial, those stopped
 * early and the others as three series, drawn as dots (charts.ts). */
export function scatter(sweep: IDescribeSweep, param: string, metric: string): IScatter {
  const dim = sweep.sweep.space[param];
  const logX =
    !!dim && (dim.kind === 'loguniform' || (dim.kind === 'range' && dim.scale === 'log'));
  const values = sweep.trial_views.map(t => t.parameters[param]);
  const numeric = values.every(v => typeof v === 'number');
  const categories = numeric ? [] : [...new Set(values.map(v => JSON.stringify(v)))];
  const groups: Record<'best' | 'stopped' | 'other', Point[]> = {
    best: [],
    stopped: [],
    other: []
  };
  for (const t of sweep.trial_views) {
    const stat = t.scalars[metric];
    const v = t.parameters[param];
    if (!stat || v === undefined) {
      continue;
    }
    let x = numeric ? (v as number) : categories.indexOf(JSON.stringify(v));
    if (logX) {
      if (x <= 0) {
        continue;
      }
      x = Math.log10(x);
    }
    const y = metric === sweep.metric ? (sweep.mode === 'max' ? stat.max : stat.min) : stat.last;
    const group = t.best ? 'best' : t.failure_class === 'stopped_early' ? 'stopped' : 'other';
    groups[group].push([x, y]);
  }
  const byX = (pts: Point[]) => pts.sort((a, b) => a[0] - b[0]);
  const series: ISeries[] = [
    { label: 'trials', points: byX(groups.other), color: 0, dotsOnly: true },
    { label: 'stopped early', points: byX(groups.stopped), color: 3, dotsOnly: true },
    { label: 'best', points: byX(groups.best), color: 1, dotsOnly: true }
  ].filter(s => s.points.length);
  return { series, logX, categories, xLabel: logX ? `log10 ${param}` : param };
}
