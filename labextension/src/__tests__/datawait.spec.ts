import { stallFacts } from '../datawait';
import { IDataWait } from '../models';
import { goodputSegments, IGoodputParts } from '../usage';

const waited = (over: Partial<IDataWait> = {}): IDataWait => ({
  fraction: 0.62,
  wait_s: 62,
  step_s: 100,
  ranks: { '0': 0.64, '1': 0.6 },
  num_workers: 0,
  pin_memory: false,
  advice: '62 % of each step waits for data: try num_workers=4, pin_memory=True',
  ...over
});

describe('stallFacts', () => {
  it('says the wait beside GPU utilization, with the advice', () => {
    expect(stallFacts(waited(), 38, 100)).toEqual({
      gpu: 'GPU utilization 38 %',
      wait: 'waiting for data 62 % of each step',
      ranks: null,
      advice: '62 % of each step waits for data: try num_workers=4, pin_memory=True'
    });
  });

  it('names the ranks when they differ, in rank order', () => {
    const facts = stallFacts(waited({ ranks: { '10': 0.2, '2': 0.9, '1': null } }), 0, 0);
    expect(facts.ranks).toBe('rank 2 90 %, rank 10 20 %');
    expect(facts.gpu).toBeNull(); // no GPU samples
  });

  it('says nothing of data without a DataLoader, and no advice under the threshold', () => {
    expect(stallFacts(null, 50, 100)).toEqual({
      gpu: 'GPU utilization 50 %',
      wait: null,
      ranks: null,
      advice: null
    });
    expect(stallFacts(waited({ fraction: 0.05, advice: null }), 99, 100).advice).toBeNull();
  });
});

describe('goodputSegments', () => {
  const parts = (over: Partial<IGoodputParts>): IGoodputParts => ({
    goodput: 0.5,
    productive_s: 50,
    startup_s: 10,
    checkpoint_s: 0,
    redone_s: 0,
    interrupted_s: 0,
    ...over
  });

  it('draws the wait for data as lost time', () => {
    const s = goodputSegments(parts({ data_wait_s: 40 }));
    expect(s.map(x => [x.key, x.share])).toEqual([
      ['productive', 0.5],
      ['startup', 0.1],
      ['datawait', 0.4]
    ]);
    expect(s[2].label).toBe('waiting for data');
  });

  it('reads an answer from before the wait was counted', () => {
    expect(goodputSegments(parts({})).map(x => x.key)).toEqual(['productive', 'startup']);
  });
});
