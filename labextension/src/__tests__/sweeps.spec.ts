import { dimensionOf, EMPTY_SWEEP_FORM, sweepRequest } from '../sweepdraft';
import {
  IDescribeSweep,
  ITrialView,
  scalarNames,
  scatter,
  sortTrials,
  trialStateLabel
} from '../sweeps';

function trial(
  n: number,
  lr: number,
  loss: number | null,
  extra: Partial<ITrialView> = {}
): ITrialView {
  return {
    trial: n,
    parameters: { lr, opt: n % 2 ? 'sgd' : 'adam' },
    job_id: `t${n}`,
    state: 'succeeded',
    scalars:
      loss === null
        ? {}
        : {
            loss: { last: loss + 0.1, min: loss, max: loss + 1, step: 9 },
            acc: { last: 1 - loss, min: 0, max: 1 - loss, step: 9 }
          },
    value: loss,
    best: false,
    ...extra
  };
}

function sweep(trials: ITrialView[]): IDescribeSweep {
  return {
    id: 's-1',
    name: 's',
    user: 'ada',
    state: 'running',
    created_at: 0,
    sampler: 'random',
    trials: trials.length,
    submitted: trials.length,
    active: 0,
    ended: trials.length,
    stopped_early: 1,
    metric: 'loss',
    mode: 'min',
    sweep: {
      space: {
        lr: { kind: 'loguniform', low: 1e-4, high: 1 },
        opt: { kind: 'choice', values: ['adam', 'sgd'] }
      }
    },
    job: { name: 's', source: { kind: 'notebook', path: 's.ipynb' } },
    seed: 1,
    best_trial: 1,
    trial_views: trials
  };
}

const TRIALS = [
  trial(0, 0.01, 0.5),
  trial(1, 0.1, 0.2, { best: true }),
  trial(2, 0.001, 0.9, { state: 'cancelled', failure_class: 'stopped_early' }),
  trial(3, 1, null, { state: 'running' })
];

describe('the trials table', () => {
  it('says stopped early, not cancelled, for a trial its rule stopped', () => {
    expect(TRIALS.map(trialStateLabel)).toEqual([
      'succeeded',
      'succeeded',
      'stopped early',
      'running'
    ]);
    expect(
      trialStateLabel(trial(4, 1, 1, { state: 'cancelled', failure_class: 'cancelled' }))
    ).toBe('cancelled');
    expect(trialStateLabel(trial(5, 1, 1, { state: null, error: 'refused' }))).toBe('refused');
  });

  it('lists every scalar, the metric first', () => {
    expect(scalarNames(sweep(TRIALS))).toEqual(['loss', 'acc']);
  });

  it('sorts by any scalar or parameter, trials without a value last', () => {
    const s = sweep(TRIALS);
    const ids = (key: Parameters<typeof sortTrials>[1], desc = false) =>
      sortTrials(TRIALS, key, desc, s).map(t => t.trial);
    expect(ids('scalar:loss')).toEqual([1, 0, 2, 3]); // the metric sorts by its best (min)
    expect(ids('scalar:loss', true)).toEqual([2, 0, 1, 3]);
    expect(ids('scalar:acc', true)).toEqual([1, 0, 2, 3]); // another scalar by its last value
    expect(ids('param:lr')).toEqual([2, 0, 1, 3]);
    expect(ids('param:opt')).toEqual([0, 2, 1, 3]);
    expect(ids('trial', true)).toEqual([3, 2, 1, 0]);
  });
});

describe('the scatter', () => {
  it('draws log parameters on a log10 axis, the best and stopped trials apart', () => {
    const s = scatter(sweep(TRIALS), 'lr', 'loss');
    expect(s.logX).toBe(true);
    expect(s.xLabel).toBe('log10 lr');
    const byLabel = Object.fromEntries(s.series.map(x => [x.label, x.points]));
    expect(byLabel['best']).toEqual([[-1, 0.2]]);
    expect(byLabel['stopped early']).toEqual([[-3, 0.9]]);
    expect(byLabel['trials']).toEqual([[-2, 0.5]]); // trial 3 has no loss yet
    expect(s.series.every(x => x.dotsOnly)).toBe(true);
  });

  it('places a parameter that is not a number by category', () => {
    const s = scatter(sweep(TRIALS), 'opt', 'acc');
    expect(s.categories).toEqual(['"adam"', '"sgd"']);
    const all = s.series.flatMap(x => x.points).sort((a, b) => a[1] - b[1]);
    expect(all.map(([x, y]) => [x, Math.round(y * 10) / 10])).toEqual([
      [0, 0.1],
      [0, 0.5],
      [1, 0.8]
    ]);
  });
});

describe('the sweep fields of the submit dialog', () => {
  it('reads each kind of dimension', () => {
    expect(dimensionOf({ kind: 'list', text: '32, 64' })).toEqual({
      kind: 'list',
      values: [32, 64]
    });
    expect(dimensionOf({ kind: 'choice', text: 'adam, "sgd"' })).toEqual({
      kind: 'choice',
      values: ['adam', 'sgd']
    });
    expect(dimensionOf({ kind: 'range', text: '1, 9, 2' })).toEqual({
      kind: 'range',
      start: 1,
      stop: 9,
      step: 2,
      scale: 'linear'
    });
    expect(dimensionOf({ kind: 'logrange', text: '1e-4,1e-1,10' })).toEqual({
      kind: 'range',
      start: 1e-4,
      stop: 0.1,
      step: 10,
      scale: 'log'
    });
    expect(dimensionOf({ kind: 'loguniform', text: '1e-4, 1' })).toEqual({
      kind: 'loguniform',
      low: 1e-4,
      high: 1
    });
    expect(dimensionOf({ kind: 'uniform', text: '1' })).toBe('give low, high as numbers');
    expect(dimensionOf({ kind: 'list', text: ' , ' })).toBe('give at least one value');
    expect(dimensionOf({ kind: 'fixed', text: 'x' })).toBeNull();
  });

  it('makes the request, the swept parameters out of the fixed ones', () => {
    const job = {
      name: 'n',
      source: { kind: 'notebook' as const, path: 'n.ipynb' },
      parameters: { lr: 0.1, epochs: 3 }
    };
    const made = sweepRequest(
      {
        ...EMPTY_SWEEP_FORM,
        enabled: true,
        vary: { lr: { kind: 'list', text: '0.1, 0.01' } },
        earlyStop: 'median',
        minSteps: '3'
      },
      job
    );
    expect(made).toEqual({
      job: { ...job, parameters: { epochs: 3 } },
      sweep: {
        space: { lr: { kind: 'list', values: [0.1, 0.01] } },
        sampler: 'grid',
        max_running: 2,
        early_stop: { rule: 'median', metric: 'loss', mode: 'min', min_steps: 3 }
      }
    });
  });

  it('names the field of each mistake', () => {
    const job = { name: 'n', source: { kind: 'notebook' as const, path: 'n.ipynb' } };
    expect(sweepRequest({ ...EMPTY_SWEEP_FORM, enabled: true }, job)).toEqual({
      errors: { 'sweep.space': 'vary at least one parameter' }
    });
    const bad = sweepRequest(
      {
        ...EMPTY_SWEEP_FORM,
        enabled: true,
        vary: { lr: { kind: 'range', text: '1, x' } },
        maxRunning: '1.5',
        earlyStop: 'halving',
        metric: ' '
      },
      job
    );
    expect(bad).toEqual({
      errors: {
        'sweep.space.lr': 'give start, stop, step as numbers',
        'sweep.max_running': 'must be a whole number',
        'sweep.early_stop.metric': 'name the scalar the notebook logs'
      }
    });
  });
});
