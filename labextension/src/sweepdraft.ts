/**
 * The submit dialog's sweep fields as the person types them (what each parameter varies over,
 * the sampler, early stopping) and the sweep spec they make, or the errors by field: pure, so
 * the form and its tests share them.
 */
import { IJobSpec } from './models';
import { IDimension, ISweepSpec } from './sweeps';

export type VaryKind =
  'fixed' | 'list' | 'range' | 'logrange' | 'uniform' | 'loguniform' | 'choice';

export interface IVaryRow {
  kind: VaryKind;
  /** list and choice: values separated by commas; range: start, stop, step; uniform: low, high */
  text: string;
}

export interface ISweepForm {
  enabled: boolean;
  vary: Record<string, IVaryRow>;
  sampler: 'grid' | 'random';
  trials: string;
  maxRunning: string;
  seed: string;
  earlyStop: '' | 'median' | 'halving';
  metric: string;
  mode: 'min' | 'max';
  minSteps: string;
}

export const EMPTY_SWEEP_FORM: ISweepForm = {
  enabled: false,
  vary: {},
  sampler: 'grid',
  trials: '',
  maxRunning: '2',
  seed: '',
  earlyStop: '',
  metric: 'loss',
  mode: 'min',
  minSteps: '1'
};

export const VARY_HINTS: Record<VaryKind, string> = {
  fixed: '',
  list: '32, 64, 128',
  range: 'start, stop, step',
  logrange: 'start, stop, factor',
  uniform: 'low, high',
  loguniform: 'low, high',
  choice: 'adam, sgd'
};

function item(text: string): unknown {
  const t = text.trim();
  try {
    return JSON.parse(t);
  } catch {
    return t.replace(/^'(.*)'$/, '$1');
  }
}

function numbers(text: string, count: number, names: string): number[] | string {
  const parts = text
    .split(',')
    .map(s => s.trim())
    .filter(s => s);
  const values = parts.map(Number);
  if (parts.length !== count || values.some(v => !Number.isFinite(v))) {
    return `give ${names} as numbers`;
  }
  return values;
}

/** One parameter's dimension from its form row, or a sentence saying what is wrong. */
export function dimensionOf(row: IVaryRow): IDimension | string | null {
  switch (row.kind) {
    case 'fixed':
      return null;
    case 'list':
    case 'choice': {
      const values = row.text
        .split(',')
        .filter(s => s.trim())
        .map(item);
      return values.length ? { kind: row.kind, values } : 'give at least one value';
    }
    case 'range':
    case 'logrange': {
      const n = numbers(
        row.text,
        3,
        row.kind === 'range' ? 'start, stop, step' : 'start, stop, factor'
      );
      if (typeof n === 'string') {
        return n;
      }
      return {
        kind: 'range',
        start: n[0],
        stop: n[1],
        step: n[2],
        scale: row.kind === 'range' ? 'linear' : 'log'
      };
    }
    case 'uniform':
    case 'loguniform': {
      const n = numbers(row.text, 2, 'low, high');
      return typeof n === 'string' ? n : { kind: row.kind, low: n[0], high: n[1] };
    }
  }
}

function whole(text: string): number | null | string {
  if (!text.trim()) {
    return null;
  }
  const n = Number(text);
  return Number.isInteger(n) && n >= 0 ? n : 'must be a whole number';
}

/** The sweep of a submit (the job as the dialog made it), or errors by field. */
export function sweepRequest(
  form: ISweepForm,
  job: IJobSpec
): { job: IJobSpec; sweep: ISweepSpec } | { errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const space: Record<string, IDimension> = {};
  for (const [name, row] of Object.entries(form.vary)) {
    const dim = dimensionOf(row);
    if (typeof dim === 'string') {
      errors[`sweep.space.${name}`] = dim;
    } else if (dim) {
      space[name] = dim;
    }
  }
  if (!Object.keys(space).length && !Object.keys(errors).length) {
    errors['sweep.space'] = 'vary at least one parameter';
  }
  const sweep: ISweepSpec = { space, sampler: form.sampler };
  for (const [key, text] of [
    ['trials', form.trials],
    ['max_running', form.maxRunning],
    ['seed', form.seed]
  ] as const) {
    const n = whole(text);
    if (typeof n === 'string') {
      errors[`sweep.${key}`] = n;
    } else if (n !== null) {
      sweep[key] = n;
    }
  }
  if (form.earlyStop) {
    const minSteps = whole(form.minSteps);
    if (typeof minSteps === 'string') {
      errors['sweep.early_stop.min_steps'] = minSteps;
    }
    if (!form.metric.trim()) {
      errors['sweep.early_stop.metric'] = 'name the scalar the notebook logs';
    }
    sweep.early_stop = {
      rule: form.earlyStop,
      metric: form.metric.trim(),
      mode: form.mode,
      ...(typeof minSteps === 'number' ? { min_steps: Math.max(minSteps, 1) } : {})
    };
  } else if (form.metric.trim()) {
    sweep.metric = form.metric.trim();
    sweep.mode = form.mode;
  }
  if (Object.keys(errors).length) {
    return { errors };
  }
  const fixed = { ...(job.parameters ?? {}) };
  Object.keys(space).forEach(k => delete fixed[k]);
  return { job: { ...job, parameters: fixed }, sweep };
}
