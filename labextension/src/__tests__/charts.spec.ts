import {
  Point,
  decimate,
  extent,
  formatValue,
  linearTicks,
  logTicks,
  nearestIndex,
  smooth
} from '../chartmath';
import { LineChart, lineChart } from '../charts';

const noisy = (n: number): Point[] =>
  Array.from({ length: n }, (_, i) => [i, Math.sin(i / 50) + ((i * 7919) % 13) / 13]);

describe('decimate', () => {
  it('keeps at most four points per pixel column, with every extreme and both ends', () => {
    const pts = noisy(100_000);
    const d = decimate(pts, 0, 99_999, 300);
    expect(d.length).toBeLessThanOrEqual(4 * 300 + 4);
    expect(d[0]).toEqual(pts[0]);
    expect(d[d.length - 1]).toEqual(pts[pts.length - 1]);
    for (let i = 1; i < d.length; i++) {
      expect(d[i][0]).toBeGreaterThan(d[i - 1][0]);
    }
    // The highest and lowest values of the series survive (a spike is never thinned away).
    const ys = pts.map(p => p[1]);
    const kept = d.map(p => p[1]);
    expect(Math.max(...kept)).toBe(Math.max(...ys));
    expect(Math.min(...kept)).toBe(Math.min(...ys));
  });

  it('keeps a lone spike', () => {
    const pts: Point[] = Array.from({ length: 50_000 }, (_, i) => [i, i === 31_337 ? 100 : 0]);
    expect(decimate(pts, 0, 49_999, 200).some(p => p[1] === 100)).toBe(true);
  });

  it('draws a zoomed range from just outside its edges, and short series as they are', () => {
    const pts = noisy(10_000);
    const d = decimate(pts, 2000, 3000, 100);
    expect(d[0][0]).toBeLessThan(2000);
    expect(d[d.length - 1][0]).toBeGreaterThan(3000);
    expect(d.every(p => p[0] >= 1999 && p[0] <= 3001)).toBe(true);
    const few: Point[] = [
      [0, 1],
      [5, 2],
      [9, 3]
    ];
    expect(decimate(few, 0, 9, 300)).toEqual(few);
  });

  it('decimates 10 series of 100,000 points to at most 4 points a pixel column', () => {
    // Speed is measured in benchmarks/ (compare first paint), not asserted here.
    const all = Array.from({ length: 10 }, () => noisy(100_000));
    const drawn = all.map(p => decimate(smooth(p, 0.6), 0, 99_999, 600));
    expect(drawn.every(d => d.length <= 2404)).toBe(true);
  });
});

describe('smooth', () => {
  it('is the debiased exponential moving average TensorBoard draws', () => {
    const s = smooth(
      [
        [0, 1],
        [1, 1],
        [2, 1]
      ],
      0.9
    );
    // A constant stays constant: the start is not pulled towards 0.
    s.forEach(p => expect(p[1]).toBeCloseTo(1, 12));
    const t = smooth(
      [
        [0, 0],
        [1, 10]
      ],
      0.5
    );
    // EMA 0.5 * 0 + 0.5 * 10 = 5 after two values, debiased: 5 / (1 - 0.5^2).
    expect(t[1][1]).toBeCloseTo(5 / 0.75, 12);
    expect(t[0]).toEqual([0, 0]);
  });

  it('leaves raw values at weight 0 and passes non-finite values through', () => {
    const raw: Point[] = [
      [0, 3],
      [1, NaN],
      [2, 5]
    ];
    expect(smooth(raw, 0)).toBe(raw);
    const s = smooth(raw, 0.5);
    expect(Number.isNaN(s[1][1])).toBe(true);
    expect(s[2][1]).toBeCloseTo((0.25 * 3 + 0.5 * 5) / 0.75, 12);
  });
});

describe('ticks', () => {
  it('puts log ticks on powers of ten, thinned over many decades', () => {
    expect(logTicks(0.001, 10)).toEqual([0.001, 0.01, 0.1, 1, 10]);
    expect(logTicks(3e-9, 4e2)).toEqual([1e-8, 1e-5, 0.01, 10]);
    expect(logTicks(0.15, 0.9)).toEqual([0.2, 0.5]);
    expect(logTicks(2, 40)).toEqual([2, 5, 10, 20]);
    expect(logTicks(-1, 10)).toEqual([]);
  });

  it('puts linear ticks on round values', () => {
    expect(linearTicks(0, 100)).toEqual([0, 50, 100]);
    expect(linearTicks(0, 100, 5)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(linearTicks(0.13, 0.91)).toEqual([0.2, 0.4, 0.6, 0.8]);
    expect(linearTicks(-1, 1)).toEqual([-1, -0.5, 0, 0.5, 1]);
  });

  it('formats values compactly', () => {
    expect(formatValue(1234567)).toBe('1.23M');
    expect(formatValue(0.000123)).toBe('1.23e-4');
    expect(formatValue(0.5)).toBe('0.5');
    expect(formatValue(42)).toBe('42');
  });

  it('widens a flat extent so a constant line is drawable', () => {
    expect(extent([3, 3])).toEqual([2.7, 3.3]);
    expect(extent([0, 0])).toEqual([-1, 1]);
    expect(extent([])).toEqual([0, 1]);
  });

  it('finds the nearest point for hover', () => {
    const pts: Point[] = [
      [0, 1],
      [10, 2],
      [20, 3]
    ];
    expect(nearestIndex(pts, 4)).toBe(0);
    expect(nearestIndex(pts, 6)).toBe(1);
    expect(nearestIndex(pts, 99)).toBe(2);
    expect(nearestIndex([], 1)).toBe(-1);
  });
});

describe('LineChart', () => {
  it('draws each series with its legend below the plot, labels as text', () => {
    const chart = new LineChart({ title: 'loss', xLabel: 'step' }).setSeries([
      {
        label: '<b>loss</b>',
        points: [
          [0, 1],
          [10, 0.5]
        ]
      },
      { label: 'acc', points: [[5, 0.7]], dashed: true, color: 3 }
    ]);
    const node = chart.node;
    expect(chart.curves.filter(c => c.line)).toHaveLength(2);
    // Few samples: each is marked, so a single one is visible at all.
    expect(chart.curves.every(c => c.dots)).toBe(true);
    expect(chart.curves[1]).toMatchObject({ dashed: true, color: 3 });
    expect(node.querySelector('b')).toBeNull();
    const keys = [...node.querySelectorAll('.jp-trainhub-chart-legend .jp-trainhub-chart-key')];
    expect(keys.map(k => k.textContent)).toEqual(['<b>loss</b>0.5', 'acc0.7']);
    expect(keys[1].classList.contains('jp-trainhub-c3')).toBe(true);
    expect(keys[1].classList.contains('jp-mod-dashed')).toBe(true);
    expect(
      node
        .querySelector('.jp-trainhub-chart')!
        .contains(node.querySelector('.jp-trainhub-chart-legend'))
    ).toBe(false);
    expect(node.querySelector('.jp-trainhub-chart-title')!.textContent).toBe('loss');
    expect(node.querySelector('.jp-trainhub-chart-xlabel')!.textContent).toBe('step');
    expect(lineChart([], { title: 'x' }).textContent).toContain('no data yet');
  });

  it('smooths, keeping the raw curve faint behind, and draws a log axis', async () => {
    const chart = new LineChart({ title: 'loss' }).setSeries([
      {
        label: 'loss',
        points: [
          [0, 1],
          [1, 0.1],
          [2, 0.01],
          [3, 0.001]
        ]
      }
    ]);
    expect(chart.curves.filter(c => c.raw)).toHaveLength(0);
    chart.setOptions({ smoothing: 0.6, logY: true });
    expect(chart.curves.filter(c => c.raw)).toHaveLength(1);
    expect(chart.node.classList.contains('jp-mod-smoothed')).toBe(true);
    await new Promise(resolve => setTimeout(resolve, 0)); // uPlot draws in a microtask
    const label = chart.node.querySelector('.jp-trainhub-chart')!.getAttribute('aria-label');
    expect(label).toMatch(/y axis \(log\) ticks .*\b0\.01\b/);
    chart.setSeries([{ label: 'x', points: [[0, -1]] }]);
    expect(chart.node.textContent).toContain('no positive values for a log axis');
  });

  it('zooms to a range and resets on double-click', () => {
    const chart = new LineChart({ title: 't' }).setSeries([{ label: 's', points: noisy(1000) }]);
    chart.setZoom([100, 200]);
    expect(chart.zoomRange).toEqual([100, 200]);
    expect(chart.node.textContent).toContain('double-click to reset');
    chart.node.querySelector('.jp-trainhub-chart')!.dispatchEvent(new MouseEvent('dblclick'));
    expect(chart.zoomRange).toBeNull();
    expect(chart.node.textContent).not.toContain('double-click to reset');
  });
});
