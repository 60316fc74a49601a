import { decimate, extent, lineChart } from '../charts';
import { GPU_CHARTS, gpuSeries, scalarSeries } from '../metricsdata';
import { IGpuRecord } from '../models';

describe('gpuSeries', () => {
  it('splits samples per GPU with time from the first sample', () => {
    const records: IGpuRecord[] = [
      { time: 100, gpu: 0, utilization: 50, memory_used: 2 ** 30 },
      { time: 100, gpu: 1, utilization: 70, memory_used: null },
      { time: 101, gpu: 0, utilization: 55, memory_used: 2 * 2 ** 30 }
    ];
    expect(gpuSeries(records, r => r.utilization)).toEqual([
      { label: 'GPU 0', points: [[0, 50], [1, 55]] },
      { label: 'GPU 1', points: [[0, 70]] }
    ]);
    const memory = GPU_CHARTS.find(c => c.title === 'GPU memory')!;
    expect(gpuSeries(records, memory.value)).toEqual([
      { label: 'GPU 0', points: [[0, 1], [1, 2]] }
    ]);
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
    expect(s.get('loss')!.points).toEqual([[0, 0.9], [10, 0.4]]);
  });
});

describe('chart helpers', () => {
  it('thins long series keeping both ends', () => {
    const pts = Array.from({ length: 10000 }, (_, i) => [i, i] as [number, number]);
    const d = decimate(pts, 100);
    expect(d).toHaveLength(100);
    expect(d[0]).toEqual([0, 0]);
    expect(d[99]).toEqual([9999, 9999]);
  });

  it('widens a flat extent so a constant line is drawable', () => {
    expect(extent([3, 3])).toEqual([2.7, 3.3]);
    expect(extent([0, 0])).toEqual([-1, 1]);
    expect(extent([])).toEqual([0, 1]);
  });
});

describe('lineChart', () => {
  it('draws a path per series, marks sparse points, and writes labels as text', () => {
    const svg = lineChart(
      [
        { label: '<b>loss</b>', points: [[0, 1], [10, 0.5]] },
        { label: 'acc', points: [[5, 0.7]] }
      ],
      { title: 'loss', xLabel: 'step' }
    );
    expect(svg.querySelectorAll('path')).toHaveLength(2);
    expect(svg.querySelectorAll('circle')).toHaveLength(3);
    expect(svg.querySelector('b')).toBeNull();
    expect(svg.textContent).toContain('<b>loss</b>');
    const empty = lineChart([], { title: 'x' });
    expect(empty.textContent).toContain('no data yet');
  });
});
