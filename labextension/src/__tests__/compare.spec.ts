import {
  cellText,
  codeSummary,
  compareIds,
  curves,
  defaultScalar,
  diffLineKind,
  differingFirst,
  IComparison,
  jobLabels,
  pointText,
  verdictCell
} from '../compare';

function comparison(): IComparison {
  const job = (id: string, name: string) => ({
    id,
    name,
    state: 'succeeded' as const,
    source: 'train.ipynb',
    created_at: 0,
    attempts: 1,
    notes: []
  });
  return {
    jobs: [job('a-1', 'train'), job('b-2', 'train'), job('c-3', 'other')],
    parameters: [],
    lineage: [],
    packages: [],
    packages_same: 0,
    datasets: [],
    resources: [],
    outcome: [],
    code: [],
    scalars: [
      { name: 'accuracy', goal: 'max', last: [], best: [] },
      { name: 'loss', goal: 'min', last: [], best: [] }
    ],
    series: [
      {
        name: 'loss',
        job_id: 'c-3',
        points: [
          [0, 5, 2],
          [1, 9, 1]
        ],
        total: 2
      },
      {
        name: 'loss',
        job_id: 'a-1',
        points: [
          [0, 0, 3],
          [1, 30, 2.5],
          [2, 20, 2]
        ],
        total: 9
      },
      { name: 'accuracy', job_id: 'a-1', points: [[0, 0, 0.1]], total: 1 }
    ]
  };
}

describe('compareIds', () => {
  it('takes 2 to 10 different ids, each once', () => {
    expect(compareIds({ ids: ['a', 'b', 'a'] })).toEqual(['a', 'b']);
    expect(() => compareIds({ ids: ['a', 'a'] })).toThrow('Select 2 to 10 different jobs');
    expect(() => compareIds({ ids: 'abcdefghijk'.split('') })).toThrow('2 to 10');
    expect(() => compareIds({ ids: 'a,b' })).toThrow('{ids: [job ids]}');
    expect(() => compareIds({ ids: ['a', 3] })).toThrow('{ids: [job ids]}');
    expect(() => compareIds(null)).toThrow();
  });
});

describe('tables', () => {
  it('puts differing rows first, keeping the order within each group', () => {
    const rows = [
      { name: 'a', values: [1, 1], differs: false },
      { name: 'b', values: [1, 2], differs: true },
      { name: 'c', values: [1, 1], differs: false },
      { name: 'd', values: [null, 2], differs: true }
    ];
    expect(differingFirst(rows).map(r => r.name)).toEqual(['b', 'd', 'a', 'c']);
  });

  it('says values as text', () => {
    expect(
      [null, undefined, true, false, 3, 0.1 + 0.2, 'x<b>', [1, 2], { a: 1 }].map(cellText)
    ).toEqual(['—', '—', 'yes', 'no', '3', '0.3', 'x<b>', '[1,2]', '{"a":1}']);
    expect(pointText({ step: 4, value: 0.25, time: 1 })).toBe('0.25 @ step 4');
    expect(pointText(null)).toBe('—');
  });

  it('labels columns by name, by id where names repeat', () => {
    expect(jobLabels(comparison().jobs)).toEqual(['a-1', 'b-2', 'other']);
  });
});

describe('curves', () => {
  it('overlays one series per job, coloured by its column, against step or time', () => {
    const c = comparison();
    const bySteps = curves(c, 'loss', 'step');
    expect(bySteps.map(s => [s.label, s.color])).toEqual([
      ['a-1', 0],
      ['other', 2]
    ]);
    expect(bySteps[0].points).toEqual([
      [0, 3],
      [1, 2.5],
      [2, 2]
    ]);
    // Seconds since the start, in time order (step 2 was logged again before step 1's time).
    expect(curves(c, 'loss', 'time')[0].points).toEqual([
      [0, 3],
      [20, 2],
      [30, 2.5]
    ]);
    expect(curves(c, 'nothing', 'step')).toEqual([]);
  });

  it('shows a loss-like scalar first', () => {
    expect(defaultScalar(comparison().scalars)).toBe('loss');
    expect(defaultScalar([{ name: 'acc', goal: 'max', last: [], best: [] }])).toBe('acc');
    expect(defaultScalar([])).toBeNull();
  });
});

describe('code diffs', () => {
  it('marks each line of a unified diff', () => {
    const lines = [
      '--- cell 2',
      '+++ cell 2',
      '@@ -1 +1 @@',
      '-x = 1',
      '+x = 2',
      ' y',
      'added cell 3'
    ];
    expect(lines.map(diffLineKind)).toEqual([
      'header',
      'header',
      'header',
      'remove',
      'add',
      'context',
      'header'
    ]);
  });

  it('sums a job up against the baseline', () => {
    const base = { job_id: 'b', against: 'a', identical: false, truncated: false, changes: [] };
    const change = (kind: 'changed' | 'added' | 'removed') => ({
      change: kind,
      before: null,
      after: null,
      diff: ''
    });
    expect(codeSummary({ ...base, identical: true })).toBe('the same code');
    expect(
      codeSummary({ ...base, changes: [change('changed'), change('changed'), change('added')] })
    ).toBe('2 cells changed, 1 cell added');
    expect(codeSummary({ ...base, changes: [change('removed')], truncated: true })).toBe(
      '1 cell removed (diff cut short)'
    );
    expect(codeSummary({ ...base, note: 'the code of b could not be read' })).toBe(
      'the code of b could not be read'
    );
  });
});

describe('verdictCell', () => {
  it('shows a succeeded job as succeeded, a failure as an error, a live job as not ended', () => {
    expect(verdictCell({ state: 'succeeded' })).toEqual({ text: 'succeeded', failed: false });
    expect(
      verdictCell({
        state: 'failed',
        verdict: { failure_class: 'code', reason: 'cell 3 raised ValueError' } as Parameters<
          typeof verdictCell
        >[0]['verdict']
      })
    ).toEqual({ text: 'code: cell 3 raised ValueError', failed: true });
    expect(verdictCell({ state: 'running' })).toEqual({ text: 'not ended yet', failed: false });
    expect(verdictCell({ state: 'cancelled' })).toEqual({ text: 'cancelled', failed: false });
  });
});
