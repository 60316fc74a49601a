import {
  cellLabel,
  Clock,
  elapsedSeconds,
  formatBytes,
  formatDuration,
  formatElapsed,
  formatResources,
  waitExplanation
} from '../format';
import { IJobSummary } from '../models';

const job = (patch: Partial<IJobSummary>): IJobSummary => ({
  id: 'j1',
  name: 'train-ddp',
  user: 'alice',
  state: 'queued',
  priority: 'normal',
  gpus: 2,
  world_size: 2,
  created_at: 1000,
  attempt: 0,
  source: 'examples/train_ddp.ipynb',
  ...patch
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [42.9, '42s'],
    [185, '3m 05s'],
    [3720, '1h 02m'],
    [2 * 86400 + 3 * 3600 + 59, '2d 3h'],
    [-1, '—'],
    [NaN, '—']
  ])('%s s -> %s', (s, text) => expect(formatDuration(s)).toBe(text));
});

describe('elapsed', () => {
  it('counts waiting time until the job starts', () => {
    expect(elapsedSeconds(job({}), 1090)).toBe(90);
    expect(formatElapsed(job({}), 1090)).toBe('waiting 1m 30s');
  });

  it('counts running time from start, and stops at the finish', () => {
    expect(formatElapsed(job({ state: 'running', started_at: 1010 }), 1070)).toBe('1m 00s');
    const done = job({ state: 'succeeded', started_at: 1010, finished_at: 1040 });
    expect(formatElapsed(done, 99999)).toBe('30s');
  });

  it('shows no run time for a job cancelled while it waited', () => {
    const cancelled = job({ state: 'cancelled', finished_at: 1050 });
    expect(formatElapsed(cancelled, 99999)).toBe('did not run');
  });
});

describe('resources', () => {
  it('names GPUs only for jobs that asked for them', () => {
    expect(formatResources({ gpus: 0, world_size: 4 })).toBe('4 proc');
    expect(formatResources({ gpus: 1, world_size: 1 })).toBe('1 GPU · 1 proc');
    expect(formatResources({ gpus: 2, world_size: 2 })).toBe('2 GPUs · 2 proc');
  });
});

describe('Clock', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('ticks every listener with the same time from one timer, and stops with the last', () => {
    const c = new Clock(1000);
    const a: number[] = [];
    const b: number[] = [];
    const stopA = c.subscribe(now => a.push(now));
    const stopB = c.subscribe(now => b.push(now));
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(3000);
    expect(a).toHaveLength(3);
    expect(a).toEqual(b);
    stopA();
    jest.advanceTimersByTime(1000);
    expect(a).toHaveLength(3);
    expect(b).toHaveLength(4);
    stopB();
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('waitExplanation', () => {
  it('says why a queued job waits and how many are ahead, once', () => {
    // The backend's reason names the jobs ahead itself: it is not said a second time.
    expect(
      waitExplanation(job({ wait_reason: 'needs 1 CPU slot, 0 free; 1 job ahead', position: 1 }))
    ).toBe('needs 1 CPU slot, 0 free; 1 job ahead');
    expect(waitExplanation(job({ position: 0 }))).toBe('next in line');
    expect(waitExplanation(job({ position: 1 }))).toBe('1 job ahead');
    expect(waitExplanation(job({}))).toBe('waiting for admission');
    expect(waitExplanation(job({ state: 'running', wait_reason: 'stale' }))).toBe('');
  });

  it('says why a starting job waits on its pods, or that they are on their way', () => {
    const untolerated = 'worker 0 cannot be scheduled: the nodes its pool selects are tainted x';
    expect(waitExplanation(job({ state: 'starting', wait_reason: untolerated }))).toBe(untolerated);
    // A job that starts normally is not silent: the backend says what happens.
    for (const onItsWay of [
      'worker 0 is being scheduled',
      "worker 1's container is starting on node gpu-7",
      'starting its ranks'
    ]) {
      expect(waitExplanation(job({ state: 'starting', wait_reason: onItsWay }))).toBe(onItsWay);
    }
    expect(waitExplanation(job({ state: 'starting', position: 0 }))).toBe('');
  });
});

describe('sizes and cells', () => {
  it('formats bytes in binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(300 * 2 ** 20)).toBe('300 MiB');
  });

  it('names cells from 1 for people', () => {
    expect(cellLabel(0)).toBe('cell 1');
  });
});
