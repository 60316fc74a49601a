import {
  compareRuns,
  IRunSummary,
  IStepView,
  runDuration,
  runEdges,
  runOutcome,
  runsOfFile,
  stepDetail,
  stepJob,
  stepStateLabel
} from '../pipelineruns';

const view = (over: Partial<IStepView>): IStepView => ({
  step: 's',
  status: 'waiting',
  depends_on: [],
  retry: 0,
  ...over
});

const summary = (over: Partial<IRunSummary>): IRunSummary => ({
  id: 'p-1',
  name: 'train-eval',
  user: 'alice',
  file: 'a.pipeline.yaml',
  state: 'succeeded',
  created_at: 100,
  finished_at: 190,
  steps: 3,
  succeeded: 3,
  reused: [],
  failed: [],
  retries: 0,
  shared: 'private',
  ...over
});

describe('a step of the run graph', () => {
  it('says its state in a word', () => {
    expect(stepStateLabel(view({ status: 'active', job_id: 'j', job_state: 'queued' }))).toBe(
      'queued'
    );
    expect(stepStateLabel(view({ status: 'active', job_id: 'j', job_state: 'running' }))).toBe(
      'running'
    );
    expect(stepStateLabel(view({ status: 'active' }))).toBe('submitting');
    expect(stepStateLabel(view({ status: 'not_run' }))).toBe('not run');
    expect(stepStateLabel(view({ status: 'reused' }))).toBe('reused');
  });

  it('says why it waits, how it failed, whose result it reuses', () => {
    expect(stepDetail(view({ reason: 'waits for prepare' }))).toBe('waits for prepare');
    expect(
      stepDetail(view({ status: 'failed', failure_class: 'code', reason: 'NameError in cell 2' }))
    ).toBe('code: NameError in cell 2');
    expect(stepDetail(view({ status: 'reused', reused_from: 'train-1a2b' }))).toBe(
      'reused from train-1a2b'
    );
  });

  it('says why its job waits in the queue, or how long it has run', () => {
    const job = {
      id: 'j',
      name: 'tiny-train',
      user: 'alice',
      priority: 'normal',
      gpus: 0,
      world_size: 1,
      created_at: 100,
      attempt: 1,
      source: 'train.ipynb'
    };
    const active = view({ status: 'active', job_id: 'j' });
    expect(stepDetail(active, { ...job, state: 'queued', position: 2 }, 200)).toBe('2 jobs ahead');
    expect(stepDetail(active, { ...job, state: 'running', started_at: 130 }, 200)).toBe(
      'running for 1m 10s'
    );
    expect(stepDetail(active)).toBe('');
  });

  it('opens its own job, or the one it reuses', () => {
    expect(stepJob(view({ job_id: 'a' }))).toBe('a');
    expect(stepJob(view({ reused_from: 'b' }))).toBe('b');
    expect(stepJob(view({}))).toBeNull();
  });

  it('draws the dependencies as edges', () => {
    expect(
      runEdges({ step_views: [view({ step: 'a' }), view({ step: 'b', depends_on: ['a'] })] })
    ).toEqual([{ from: 'a', to: 'b', inputs: [], explicit: true }]);
  });
});

describe('the runs list', () => {
  it('says duration and outcome', () => {
    expect(runDuration(summary({}), 1000)).toBe('1m 30s');
    expect(runDuration(summary({ finished_at: null }), 110)).toBe('10s');
    expect(runOutcome(summary({ reused: ['prepare'] }))).toBe('succeeded, 1 of 3 reused');
    expect(runOutcome(summary({ state: 'failed', failed: ['train'] }))).toBe('failed at train');
    expect(runOutcome(summary({ state: 'running', succeeded: 1 }))).toBe('running, 1 of 3 done');
  });

  it('keeps the runs of one file', () => {
    const runs = [summary({ id: 'a' }), summary({ id: 'b', file: 'other.pipeline.yaml' })];
    expect(runsOfFile(runs, 'a.pipeline.yaml').map(r => r.id)).toEqual(['a']);
  });
});

describe('two runs side by side', () => {
  it('pairs their steps, says which stand on the same job', () => {
    const first = {
      step_views: [
        view({ step: 'prep', status: 'succeeded', job_id: 'p1', started_at: 10, finished_at: 25 }),
        view({ step: 'train', status: 'failed', job_id: 't1', failure_class: 'code', reason: 'x' })
      ]
    };
    const second = {
      step_views: [
        view({
          step: 'prep',
          status: 'reused',
          reused_from: 'p1',
          started_at: 10,
          finished_at: 25
        }),
        view({ step: 'train', status: 'succeeded', job_id: 't2', started_at: 30, finished_at: 90 }),
        view({ step: 'report', status: 'not_run', reason: 'not run: step train failed' })
      ]
    };
    const rows = compareRuns(first, second);
    expect(rows.map(r => [r.step, r.a?.state ?? null, r.b?.state ?? null, r.sameResult])).toEqual([
      ['prep', 'succeeded', 'reused', true],
      ['train', 'failed', 'succeeded', false],
      ['report', null, 'not run', false]
    ]);
    expect(rows[0].a!.duration).toBe('15s');
    expect(rows[0].b!.duration).toBe('');
    expect(rows[1].b).toMatchObject({ duration: '1m 00s', job: 't2' });
    expect(rows[1].a!.detail).toBe('code: x');
  });
});
