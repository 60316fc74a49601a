import {
  initialScheduleFields,
  ISchedule,
  IScheduleRun,
  lastRunText,
  localTimeText,
  nextText,
  runOutcome,
  runOutcomeKey,
  runWhen,
  scheduleErrors,
  scheduleRequest,
  targetPath,
  whenText
} from '../schedules';
import { initialForm } from '../specform';
import { fieldErrors, localConfig as config } from './fixtures';

const run = (patch: Partial<IScheduleRun>): IScheduleRun => ({
  at: 1796000000,
  at_local: '2026-12-07T02:00:00+01:00',
  claimed_at: 1796000001,
  state: 'submitted',
  job_state: null,
  outcome: null,
  job_id: 'nightly-1a2b',
  reason: null,
  ...patch
});

const schedule = (patch: Partial<ISchedule> = {}): ISchedule => ({
  id: 'nightly-x1',
  name: 'nightly',
  user: 'alice',
  team: null,
  created_at: 1795000000,
  target: {
    kind: 'notebook',
    job: { name: 'nightly', source: { kind: 'notebook', path: 'examples/train.ipynb' } }
  },
  cron: '0 2 * * *',
  cron_text: 'at 02:00 every day',
  timezone: 'Europe/Berlin',
  paused: false,
  concurrency: 'forbid',
  missed: 'run-once',
  starting_deadline_seconds: null,
  notify_failure: true,
  next_at: 1796000000,
  next_at_local: '2026-12-07T02:00:00+01:00',
  runs: [],
  ...patch
});

describe('scheduleRequest', () => {
  it('sends the job spec of the submit form as the target, and the schedule fields', () => {
    const form = { ...initialForm('examples/train.ipynb', config, []), name: 'Nightly Train' };
    const fields = {
      ...initialScheduleFields('Europe/Berlin'),
      cron: ' 30 3 * * 1 ',
      concurrency: 'replace' as const,
      missed: 'skip' as const,
      startingDeadline: '10m'
    };
    const request = scheduleRequest(form, fields, config);
    expect(request).toMatchObject({
      name: 'nightly-train',
      cron: '30 3 * * 1',
      timezone: 'Europe/Berlin',
      concurrency: 'replace',
      missed: 'skip',
      starting_deadline: '10m',
      target: { kind: 'notebook', job: { name: 'nightly-train' } }
    });
    expect(request.target.job.source).toEqual({
      kind: 'notebook',
      path: 'examples/train.ipynb',
      cells: { mode: 'all' }
    });
  });

  it('sends no deadline when none is typed, and UTC for an empty zone', () => {
    const form = initialForm('a.ipynb', config, []);
    const request = scheduleRequest(
      form,
      { ...initialScheduleFields(''), startingDeadline: '  ' },
      config
    );
    expect(request.starting_deadline).toBeNull();
    expect(request.timezone).toBe('UTC');
  });

  it('defaults to forbid and run-once in the zone given', () => {
    expect(initialScheduleFields('Asia/Tokyo')).toMatchObject({
      timezone: 'Asia/Tokyo',
      concurrency: 'forbid',
      missed: 'run-once'
    });
  });
});

describe('scheduleErrors', () => {
  it("puts the schedule's own fields under its rows and the job's under the job fields", () => {
    const { job, schedule: own } = scheduleErrors(
      fieldErrors({
        cron: 'bad cron',
        timezone: 'unknown zone',
        starting_deadline: 'not a duration',
        'target.job.resources.workers': 'too many',
        'target.job.max_runtime': 'bad runtime',
        name: 'bad name',
        'target.job': 'notebook not found'
      })
    );
    expect(own).toEqual({
      cron: ['bad cron'],
      timezone: ['unknown zone'],
      startingDeadline: ['not a duration']
    });
    expect(job.workers).toEqual(['too many']);
    expect(job.maxRuntime).toEqual(['bad runtime']);
    expect(job.name).toEqual(['bad name']);
    expect(job.general).toEqual(['notebook not found']);
  });
});

describe('what the panel says', () => {
  it('says when, next and last', () => {
    const s = schedule();
    expect(whenText(s)).toBe('At 02:00 every day (Europe/Berlin)');
    expect(nextText(s)).toBe('next 2026-12-07 02:00');
    expect(nextText({ ...s, paused: true })).toBe('paused');
    expect(nextText({ ...s, next_at_local: null })).toBe('no next run');
    expect(lastRunText(s)).toBe('no runs yet');
    expect(lastRunText({ runs: [run({ outcome: 'succeeded', job_state: 'succeeded' })] })).toBe(
      'last: succeeded'
    );
    expect(targetPath(s)).toBe('examples/train.ipynb');
    expect(targetPath({ target: { kind: 'pipeline', file: 'flows/nightly.pipeline.yaml' } })).toBe(
      'flows/nightly.pipeline.yaml'
    );
  });

  it("says a run's outcome: the job's, or why it made none", () => {
    expect(runOutcome(run({ job_state: 'running' }))).toBe('running');
    expect(runOutcome(run({ job_state: 'failed', outcome: 'failed' }))).toBe('failed');
    expect(runOutcome(run({}))).toBe('submitted');
    expect(runOutcome(run({ state: 'skipped', reason: 'the last run is still active' }))).toBe(
      'skipped: the last run is still active'
    );
    expect(runOutcome(run({ state: 'refused', reason: 'over quota', job_id: null }))).toBe(
      'refused: over quota'
    );
    expect(runOutcome(run({ state: 'claimed' }))).toBe('starting');
    expect(runOutcomeKey(run({ job_state: 'running' }))).toBe('running');
    expect(runOutcomeKey(run({ state: 'skipped' }))).toBe('skipped');
  });

  it('says when a run was meant for', () => {
    expect(runWhen(run({}))).toBe('2026-12-07 02:00');
    expect(runWhen(run({ at: null, at_local: null }))).toBe('run now');
    expect(localTimeText(null)).toBe('');
    expect(localTimeText('soon')).toBe('soon');
  });
});
