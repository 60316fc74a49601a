/** Small SVG line charts for live metrics: no chart library, just paths and text. */

export interface ISeries {
  label: string;
  points: [number, number][];
}

export interface IChartOptions {
  title: string;
  unit?: string;
  width?: number;
  height?: number;
  /** Fixed y range, e.g. [0, 100] for percentages. */
  yRange?: [number, number];
  xLabel?: string;
}

const SVG = 'http://www.w3.org/2000/svg';
const MAX_POINTS = 600;

/** Thin a series to at most `max` points, keeping the first and last (for fast redraws). */
export function decimate(points: [number, number][], max = MAX_POINTS): [number, number][] {
  if (points.length <= max) {
    return points;
  }
  const step = (points.length - 1) / (max - 1);
  const out: [number, number][] = [];
  for (let i = 0; i < max; i++) {
    out.push(points[Math.round(i * step)]);
  }
  return out;
}

export function extent(values: number[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) {
      lo = v;
    }
    if (v > hi) {
      hi = v;
    }
  }
  if (!Number.isFinite(lo)) {
    return [0, 1];
  }
  if (lo === hi) {
    const pad = Math.abs(lo) * 0.1 || 1;
    return [lo - pad, hi + pad];
  }
  return [lo, hi];
}

function el<K extends keyof SVGElementTagNameMap>(
  name: K,
  attrs: Record<string, string | number>
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, String(v));
  }
  return node;
}

function formatTick(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) {
    return `${(v / 1e9).toFixed(1)}G`;
  }
  if (a >= 1e6) {
    return `${(v / 1e6).toFixed(1)}M`;
  }
  if (a >= 1e4) {
    return `${(v / 1e3).toFixed(0)}k`;
  }
  if (a >= 100 || Number.isInteger(v)) {
    return v.toFixed(0);
  }
  return v.toPrecision(3);
}

/** Draw `series` into a fresh <svg> (all text via textContent). */
export function lineChart(series: ISeries[], options: IChartOptions): SVGSVGElement {
  const width = options.width ?? 360;
  const height = options.height ?? 180;
  const pad = { left: 44, right: 10, top: 22, bottom: 22 };
  const svg = el('svg', {
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    class: 'jp-trainhub-chart',
    role: 'img'
  });
  const title = el('text', { x: pad.left, y: 14, class: 'jp-trainhub-chart-title' });
  title.textContent = options.unit ? `${options.title} (${options.unit})` : options.title;
  svg.appendChild(title);

  const all = series.flatMap(s => s.points);
  if (!all.length) {
    const empty = el('text', {
      x: width / 2,
      y: height / 2,
      'text-anchor': 'middle',
      class: 'jp-trainhub-chart-empty'
    });
    empty.textContent = 'no data yet';
    svg.appendChild(empty);
    return svg;
  }
  const [x0, x1] = extent(all.map(p => p[0]));
  const [y0, y1] = options.yRange ?? extent(all.map(p => p[1]));
  const sx = (x: number) => pad.left + ((x - x0) / (x1 - x0)) * (width - pad.left - pad.right);
  const sy = (y: number) =>
    height - pad.bottom - ((y - y0) / (y1 - y0)) * (height - pad.top - pad.bottom);

  for (const v of [y0, (y0 + y1) / 2, y1]) {
    svg.appendChild(
      el('line', { x1: pad.left, x2: width - pad.right, y1: sy(v), y2: sy(v), class: 'jp-trainhub-chart-grid' })
    );
    const t = el('text', { x: pad.left - 4, y: sy(v) + 4, 'text-anchor': 'end', class: 'jp-trainhub-chart-tick' });
    t.textContent = formatTick(v);
    svg.appendChild(t);
  }
  const xl = el('text', { x: width - pad.right, y: height - 6, 'text-anchor': 'end', class: 'jp-trainhub-chart-tick' });
  xl.textContent = `${options.xLabel ?? 'x'} ${formatTick(x0)}–${formatTick(x1)}`;
  svg.appendChild(xl);

  series.forEach((s, i) => {
    const pts = decimate(s.points);
    if (!pts.length) {
      return;
    }
    const d = pts
      .map((p, j) => `${j ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`)
      .join('');
    svg.appendChild(el('path', { d, class: `jp-trainhub-chart-line jp-trainhub-series-${i % 8}` }));
    if (pts.length <= 30) {
      // Few samples: mark each, so a single one is visible at all.
      for (const p of pts) {
        svg.appendChild(
          el('circle', {
            cx: sx(p[0]).toFixed(1),
            cy: sy(p[1]).toFixed(1),
            r: 2.5,
            class: `jp-trainhub-chart-dot jp-trainhub-series-${i % 8}`
          })
        );
      }
    }
    const legend = el('text', {
      x: width - pad.right - 4,
      y: pad.top + 12 * (i + 1),
      'text-anchor': 'end',
      class: `jp-trainhub-chart-legend jp-trainhub-series-${i % 8}`
    });
    legend.textContent = s.label;
    svg.appendChild(legend);
  });
  return svg;
}
