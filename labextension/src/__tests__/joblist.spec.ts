import {
  EMPTY_QUERY,
  flattenEntries,
  groupSweeps,
  JobList,
  listOptions,
  matchesQuery,
  parseTags,
  scalarText,
  trialStates,
  visibleRange
} from '../joblist';
import { IJobPage, IJobSummary } from '../models';

let seq = 0;
function job(fields: Partial<IJobSummary> = {}): IJobSummary {
  seq += 1;
  return {
    id: `job-${seq}`,
    name: `job-${seq}`,
    user: 'alice',
    state: 'succeeded',
    priority: 'normal',
    gpus: 0,
    world_size: 1,
    created_at: seq,
    attempt: 0,
    source: 'train.ipynb',
    seq,
    tags: [],
    note: '',
    parameters: {},
    ...fields
  };
}

function page(jobs: IJobSummary[], total = jobs.length, next: number | null = null): IJobPage {
  return { jobs: [...jobs].sort((a, b) => b.seq! - a.seq!), total, next_before: next };
}

describe('listOptions (the list request of the panel)', () => {
  it('sends words, states, sweep, paging and the chosen scalar', () => {
    expect(
      listOptions(
        { q: '  lr=0.01 adam ', state: 'failed', sweep: 'lr-sweep' },
        { limit: 100, before: 42, scalar: ' loss ' }
      )
    ).toEqual({
      states: ['failed'],
      q: 'lr=0.01 adam',
      sweep: 'lr-sweep',
      limit: 100,
      before: 42,
      scalar: 'loss'
    });
  });

  it('asks for every unfinished state for "not finished", and nothing it was not given', () => {
    expect(listOptions({ ...EMPTY_QUERY, state: 'active' })).toEqual({
      states: ['queued', 'starting', 'running', 'retrying', 'suspended'],
      q: undefined,
      sweep: undefined,
      limit: undefined,
      before: undefined,
      scalar: undefined
    });
  });
});

describe('matchesQuery (the server rule of trainhub/jobs/search.py)', () => {
  const j = job({
    name: 'resnet-sweep',
    tags: ['Baseline'],
    note: 'diverged at step 900',
    parameters: { lr: 0.001, optimizer: 'adam', shape: [3, 4] },
    state: 'failed',
    sweep_id: 's1'
  });

  it('finds every word in name, tags, note or name=value of a parameter, any case', () => {
    for (const q of ['resnet', 'baseline', 'DIVERGED', 'lr=0.001', '0.001 adam', 'shape=[3,4]']) {
      expect(matchesQuery(j, { ...EMPTY_QUERY, q })).toBe(true);
    }
    expect(matchesQuery(j, { ...EMPTY_QUERY, q: 'resnet sgd' })).toBe(false);
  });

  it('filters by state and sweep', () => {
    expect(matchesQuery(j, { ...EMPTY_QUERY, state: 'failed' })).toBe(true);
    expect(matchesQuery(j, { ...EMPTY_QUERY, state: 'active' })).toBe(false);
    expect(matchesQuery(j, { ...EMPTY_QUERY, sweep: 's1' })).toBe(true);
    expect(matchesQuery(j, { ...EMPTY_QUERY, sweep: 's2' })).toBe(false);
  });
});

describe('JobList', () => {
  it('adds a new matching job on top when not held', () => {
    const a = job();
    const list = new JobList();
    list.addPage(page([a]));
    const b = job();
    expect(list.update(b)).toBe(true);
    expect(list.jobs.map(x => x.id)).toEqual([b.id, a.id]);
    expect(list.total).toBe(2);
  });

  it('holds still under the pointer: arrivals wait as pending, rows change in place', () => {
    const a = job({ state: 'running' });
    const b = job({ state: 'running' });
    const list = new JobList({ ...EMPTY_QUERY, state: 'active' });
    list.addPage(page([a, b]));
    list.hold(true);
    const c = job({ state: 'queued' });
    list.update(c);
    list.update({ ...a, state: 'succeeded' }); // no longer matches: stays while held
    expect(list.jobs.map(x => x.id)).toEqual([b.id, a.id]);
    expect(list.jobs[1].state).toBe('succeeded');
    expect(list.pending).toBe(1);
    list.hold(false);
    expect(list.jobs.map(x => x.id)).toEqual([c.id, b.id]);
    expect(list.pending).toBe(0);
    expect(list.total).toBe(2);
  });

  it('lets the waiting jobs in on "N new jobs" while still held', () => {
    const list = new JobList();
    list.addPage(page([job()]));
    list.hold(true);
    list.update(job());
    list.update(job());
    expect(list.pending).toBe(2);
    list.release();
    expect(list.jobs).toHaveLength(3);
    expect(list.isHeld).toBe(true);
  });

  it('ignores jobs the query does not find, and old ones that belong to a page not loaded', () => {
    const old = job();
    const newer = [job(), job(), job()];
    const list = new JobList({ ...EMPTY_QUERY, q: 'resnet' });
    list.addPage(
      page(
        newer.map(j => ({ ...j, name: `resnet-${j.seq}` })),
        10,
        newer[0].seq!
      )
    );
    expect(list.update(job({ name: 'other' }))).toBe(false);
    expect(list.update({ ...old, name: 'resnet-old' })).toBe(false); // older than the page
    expect(list.jobs).toHaveLength(3);
    list.addPage(page([{ ...old, name: 'resnet-old' }], 10, null)); // the next page brings it
    expect(list.jobs.map(j => j.id).at(-1)).toBe(old.id);
  });

  it('keeps the scalar a page had when a live update carries none', () => {
    const a = job({ scalar: { name: 'loss', step: 9, value: 0.5 } });
    const list = new JobList();
    list.addPage(page([a]));
    list.update({ ...a, state: 'failed', scalar: undefined });
    expect(list.jobs[0].scalar).toEqual({ name: 'loss', step: 9, value: 0.5 });
  });

  it("keeps it too through an edit's answer, which says none (null)", () => {
    const a = job({ scalar: { name: 'loss', step: 9, value: 0.5 } });
    const list = new JobList();
    list.addPage(page([a]));
    list.update({ ...a, tags: ['keep'], scalar: null });
    expect(list.jobs[0].scalar).toEqual({ name: 'loss', step: 9, value: 0.5 });
  });
});

describe('sweeps as one entry', () => {
  it('groups trials where the newest trial is, and flattens only what is unfolded', () => {
    const t2 = job({ sweep_id: 'sw', state: 'running' });
    const solo = job();
    const t1 = job({ sweep_id: 'sw', state: 'succeeded' });
    const jobs = [t1, solo, t2].sort((a, b) => b.seq! - a.seq!);
    const entries = groupSweeps(jobs);
    expect(entries.map(e => (e.kind === 'job' ? e.job.id : `sweep ${e.sweepId}`))).toEqual([
      'sweep sw',
      solo.id
    ]);
    expect(flattenEntries(entries, new Set())).toHaveLength(2);
    const open = flattenEntries(entries, new Set(['sw']));
    expect(open.map(r => r.kind)).toEqual(['sweep', 'job', 'job', 'job']);
    expect(open.filter(r => r.kind === 'job' && r.trial)).toHaveLength(2);
    expect(trialStates([t1, t2])).toBe('1 succeeded · 1 running');
  });
});

describe('visibleRange (the windowed list renders what is in view)', () => {
  it('renders a screenful plus overscan of 10,000 rows', () => {
    const { start, end } = visibleRange(86 * 5000, 600, 86, 10_000);
    expect(start).toBe(4994);
    expect(end).toBe(5000 + 7 + 6);
    expect(end - start).toBeLessThan(30);
  });

  it('stays within the list', () => {
    expect(visibleRange(0, 600, 86, 3)).toEqual({ start: 0, end: 3 });
    expect(visibleRange(-50, 600, 86, 100).start).toBe(0);
  });
});

describe('small things', () => {
  it('parses tags typed with commas or spaces, each once', () => {
    expect(parseTags(' best, lr-sweep  best,,keep ')).toEqual(['best', 'lr-sweep', 'keep']);
  });

  it('writes a scalar short', () => {
    expect(scalarText(0.123456)).toBe('0.1235');
    expect(scalarText(12)).toBe('12');
    expect(scalarText(0.00001234)).toBe('1.23e-5');
  });
});
