import {
  GPU_CHARTS,
  SYSTEM_CHARTS,
  gpuSeries,
  scalarRanks,
  scalarSeries,
  scalarSeriesOf,
  systemSeries,
  withParent
} from '../metricsdata';
import { IGpuRecord, IScalarRecord, ISystemRecord } from '../models';

describe('gpuSeries', () => {
  it('splits samples per GPU with time from the first sample', () => {
    const records: IGpuRecord[] = [
      { time: 100, gpu: 0, utilization: 50, memory_used: 2 ** 30 },
      { time: 100, gpu: 1, utilization: 70, memory_used: null },
      { time: 101, gpu: 0, utilization: 55, memory_used: 2 * 2 ** 30 }
    ];
    expect(gpuSeries(records, r => r.utilization)).toEqual([
      {
        label: 'GPU 0',
        points: [
          [0, 50],
          [1, 55]
        ]
      },
      { label: 'GPU 1', points: [[0, 70]] }
    ]);
    const memory = GPU_CHARTS.find(c => c.title === 'GPU memory')!;
    expect(gpuSeries(records, memory.value)).toEqual([
      {
        label: 'GPU 0',
        points: [
          [0, 1],
          [1, 2]
        ]
      }
    ]);
    expect(gpuSeries(records, r => r.utilization, 90)[0].points[0]).toEqual([10, 50]);
  });
});

describe('systemSeries', () => {
  const records: ISystemRecord[] = [
    { time: 10, rank: 0, pid: 5, cpu_percent: null, rss_bytes: 2 ** 30 },
    { time: 10, rank: 1, pid: 6, cpu_percent: null, rss_bytes: 2 ** 29 },
    {
      time: 10,
      rank: null,
      host: 'box',
      cpu_percent: 12,
      memory_used: 4 * 2 ** 30,
      memory_total: 8 * 2 ** 30
    },
    { time: 11, rank: 0, pid: 5, cpu_percent: 180, rss_bytes: 2 * 2 ** 30 },
    { time: 11, rank: 1, pid: 6, cpu_percent: 95.5, rss_bytes: 2 ** 29 }
  ];
  const chart = (title: string) => SYSTEM_CHARTS.find(c => c.title === title)!;

  it('charts CPU and memory per rank, leaving out the first reading without an interval', () => {
    expect(systemSeries(records, chart('CPU of the ranks'))).toEqual([
      { label: 'rank 0', points: [[1, 180]] },
      { label: 'rank 1', points: [[1, 95.5]] }
    ]);
    expect(systemSeries(records, chart('Memory of the ranks'))).toEqual([
      {
        label: 'rank 0',
        points: [
          [0, 1],
          [1, 2]
        ]
      },
      {
        label: 'rank 1',
        points: [
          [0, 0.5],
          [1, 0.5]
        ]
      }
    ]);
  });

  it('charts the machine apart, named by its host', () => {
    expect(systemSeries(records, chart('Machine memory'))).toEqual([
      { label: 'box', points: [[0, 4]] }
    ]);
    expect(chart('Machine CPU').yRange).toEqual([0, 100]);
  });
});

describe('scalarSeries', () => {
  it('groups by name, orders by step, and lets a repeated step take the latest value', () => {
    const s = scalarSeries([
      { time: 1, step: 10, name: 'loss', value: 0.5 },
      { time: 1, step: 0, name: 'loss', value: 0.9 },
      { time: 2, step: 10, name: 'loss', value: 0.4 },
      { time: 2, step: 10, name: 'acc', value: 0.8 }
    ]);
    expect([...s.keys()]).toEqual(['acc', 'loss']);
    expect(s.get('loss')!.points).toEqual([
      [0, 0.9],
      [10, 0.4]
    ]);
  });
});

describe('scalars of one rank or all ranks', () => {
  const records: IScalarRecord[] = [
    { time: 1, step: 0, name: 'loss', value: 1, rank: 0 },
    { time: 1, step: 0, name: 'loss', value: 2, rank: 1 },
    { time: 2, step: 1, name: 'loss', value: 0.5, rank: 0 },
    { time: 2, step: 1, name: 'loss', value: 1.5, rank: 1 },
    { time: 2, step: 1, name: 'lr', value: 0.1 }
  ];

  it('lists the ranks that logged', () => {
    expect(scalarRanks(records)).toEqual([0, 1]);
  });

  it('plots one rank by name, or every rank as its own series', () => {
    const one = scalarSeriesOf(records, 1);
    expect([...one.keys()]).toEqual(['loss']);
    expect(one.get('loss')).toEqual([
      {
        label: 'loss',
        points: [
          [0, 2],
          [1, 1.5]
        ],
        color: 1
      }
    ]);
    const all = scalarSeriesOf(records, 'all');
    expect(all.get('loss')!.map(s => [s.label, s.color])).toEqual([
      ['rank 0', 0],
      ['rank 1', 1]
    ]);
    expect(all.get('lr')).toEqual([{ label: 'rank 0', points: [[1, 0.1]], color: 0 }]);
  });
});

describe('withParent', () => {
  const series = (points: [number, number][]) => new Map([['loss', [{ label: 'loss', points }]]]);

  it("puts the parent's points up to the step it forked from in front, dashed, in the same colour", () => {
    const joined = withParent(
      series([
        [75, 0.4],
        [76, 0.3]
      ]),
      series([
        [0, 1],
        [74, 0.5],
        [75, 0.45],
        [90, 0.2]
      ]),
      74,
      'parent train-1'
    );
    expect(joined.get('loss')).toEqual([
      {
        label: 'loss · parent train-1',
        points: [
          [0, 1],
          [74, 0.5]
        ],
        color: 0,
        dashed: true
      },
      {
        label: 'loss',
        points: [
          [75, 0.4],
          [76, 0.3]
        ],
        color: 0
      }
    ]);
  });

  it("cuts before the job's own first step when the step it forked from is not known", () => {
    const joined = withParent(
      series([[50, 0.4]]),
      series([
        [0, 1],
        [49, 0.6],
        [60, 0.1]
      ]),
      null,
      'p'
    );
    expect(joined.get('loss')![0].points).toEqual([
      [0, 1],
      [49, 0.6]
    ]);
    // Nothing of its own yet: the whole history shows.
    const early = withParent(
      new Map(),
      series([
        [0, 1],
        [60, 0.1]
      ]),
      null,
      'p'
    );
    expect(early.get('loss')![0].points).toHaveLength(2);
  });
});
