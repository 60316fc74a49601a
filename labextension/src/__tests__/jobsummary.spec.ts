import {
  bestCheckpoint,
  cellsDone,
  dedupeTimeline,
  describeEvent,
  failureNotice,
  latestStep,
  parameterRows,
  specRows,
  summarizeScalars
} from '../jobsummary';
import { ICheckpointInfo, IScalarRecord, ITimelineEvent } from '../models';

const scalar = (name: string, step: number, value: number, attempt = 0): IScalarRecord => ({
  time: step,
  step,
  name,
  value,
  attempt
});

const checkpoint = (step: number, metrics: Record<string, number>): ICheckpointInfo => ({
  step,
  time: step,
  metrics,
  files: [],
  world_size: 1,
  attempt: 0,
  format: 'torch',
  sharded: false,
  bytes: 0,
  path: ''
});

describe('summarizeScalars', () => {
  it('gives the last and the best value of each scalar, best by its kind', () => {
    const s = summarizeScalars([
      scalar('loss', 0, 2.0),
      scalar('accuracy', 0, 0.5),
      scalar('loss', 1, 0.5),
      scalar('accuracy', 1, 0.9),
      scalar('loss', 2, 0.8),
      scalar('accuracy', 2, 0.7)
    ]);
    expect(s.map(x => x.name)).toEqual(['accuracy', 'loss']);
    expect(s[1]).toMatchObject({ last: { step: 2, value: 0.8 }, best: { step: 1, value: 0.5 } });
    expect(s[0]).toMatchObject({ last: { step: 2, value: 0.7 }, best: { step: 1, value: 0.9 } });
    expect(latestStep(s)).toBe(2);
    expect(latestStep([])).toBeNull();
  });

  it('keeps the latest record of a step written again by a retry', () => {
    const s = summarizeScalars([scalar('loss', 3, 9), scalar('loss', 3, 1, 1)]);
    expect(s[0].last).toEqual({ step: 3, value: 1 });
  });
});

describe('cellsDone', () => {
  it('counts the cells rank 0 ended in its latest attempt', () => {
    const cell = (i: number, phase: string, attempt = 0, rank = 0) => ({
      type: 'cell',
      cell_index: i,
      phase,
      attempt,
      rank
    });
    expect(cellsDone([cell(0, 'end'), cell(1, 'start'), cell(1, 'end', 0, 1)])).toBe(1);
    expect(cellsDone([cell(0, 'end'), cell(1, 'end'), cell(0, 'end', 1)])).toBe(1);
  });

  it('does not count a cell that raised', () => {
    const failed = { type: 'cell', cell_index: 1, phase: 'end', attempt: 0, rank: 0, ok: false };
    const ended = { type: 'cell', cell_index: 0, phase: 'end', attempt: 0, rank: 0, ok: true };
    expect(cellsDone([ended, failed])).toBe(1);
  });
});

describe('bestCheckpoint', () => {
  it('picks the smallest loss, or the latest when none recorded metrics', () => {
    const best = bestCheckpoint([
      checkpoint(0, { loss: 2 }),
      checkpoint(5, { loss: 1 }),
      checkpoint(9, { loss: 3 })
    ]);
    expect(best?.checkpoint.step).toBe(5);
    expect(best?.metric).toBe('loss');
    expect(bestCheckpoint([checkpoint(1, {}), checkpoint(4, {})])).toMatchObject({
      checkpoint: { step: 4 },
      metric: null
    });
    expect(bestCheckpoint([])).toBeNull();
  });
});

describe('parameterRows', () => {
  it('puts what differs from the notebook first', () => {
    const rows = parameterRows(
      { lr: 0.01, epochs: 4, extra: true },
      { epochs: 4, lr: 0.1, seed: 0 }
    );
    expect(rows.map(r => [r.name, r.changed])).toEqual([
      ['extra', true],
      ['lr', true],
      ['epochs', false],
      ['seed', false]
    ]);
    expect(rows[1].notebook).toBe(0.1);
    expect(rows[0]).not.toHaveProperty('notebook');
  });
});

describe('specRows', () => {
  it('lists what was asked for, leaving defaults and empty fields out', () => {
    const rows = Object.fromEntries(
      specRows({
        name: 'x',
        source: { kind: 'notebook', path: 'a.ipynb', cells: { mode: 'indices', indices: [0, 2] } },
        resources: { workers: 1, processes_per_worker: 2, gpus_per_worker: 0 },
        priority: 'normal',
        tags: [],
        fork_from: { job_id: 'j0', step: 74 }
      })
    );
    expect(rows).toEqual({
      source: 'notebook a.ipynb',
      cells: 'cell 1, cell 3',
      workers: '1',
      'processes per worker': '2',
      'forked from': 'j0 at step 74'
    });
  });
});

describe('dedupeTimeline', () => {
  it('drops an event that repeats the one before it', () => {
    const e = (time: number, state: string) => ({ time, type: 'state', state });
    const out = dedupeTimeline([
      e(1, 'queued'),
      e(2, 'running'),
      e(3, 'running'),
      e(4, 'cancelled'),
      e(5, 'running')
    ]);
    expect(out.map(x => x.time)).toEqual([1, 2, 4, 5]);
  });
});

describe('failureNotice', () => {
  it('says where and what', () => {
    expect(
      failureNotice('train', {
        failure_class: 'code',
        reason: 'KeyError in cell 3 (rank 0)',
        cell_index: 2,
        exception: 'KeyError',
        message: "'validation'"
      })
    ).toBe("Job train failed in cell 3: KeyError 'validation'");
    expect(
      failureNotice('train', {
        failure_class: 'code',
        reason: '',
        cell_index: 1,
        line: 2,
        exception: 'ValueError',
        message: 'not the answer: 41\nmore'
      })
    ).toBe('Job train failed in cell 2, line 2: ValueError: not the answer: 41');
    expect(
      failureNotice('train', {
        failure_class: 'infrastructure',
        reason: 'rank 1 was killed by SIGKILL',
        rank: 1
      })
    ).toBe('Job train failed in rank 1: rank 1 was killed by SIGKILL');
    expect(failureNotice('train', null)).toBe('Job train failed.');
  });
});

describe('describeEvent', () => {
  it("says an elastic job's membership change with its reason", () => {
    const e = {
      time: 1,
      type: 'resize',
      workers: 2,
      reason: 'shrank to 2 workers: worker 2 preempted by job urgent'
    } as ITimelineEvent;
    expect(describeEvent(e)).toBe('shrank to 2 workers: worker 2 preempted by job urgent');
  });
});
