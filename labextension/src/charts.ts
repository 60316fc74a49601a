/**
 * Line charts for metrics, in SVG without a chart library: several named series, hover
 * values, EMA smoothing (TensorBoard's, debiased), a log y axis, drag-to-zoom (double-click
 * resets) and a legend below the plot, so it never covers the end of a curve.
 *
 * Fast with large series: smoothing is one pass, and what is drawn is decimated to the
 * plot's pixel width (the first, minimum, maximum and last point of each pixel column), so
 * a chart of 10 series x 100,000 points draws a few thousand path vertices.
 * All text goes in with textContent; colours are theme variables (style/metrics-logs.css).
 */

export type Point = [number, number];

export interface ISeries {
  label: string;
  /** Points in increasing x. */
  points: Point[];
  /** Palette index (0-9; default: the series' position): curves of one run share it. */
  color?: number;
  /** Drawn dashed and faint, e.g. a resumed job's parent before the resume step. */
  dashed?: boolean;
  /** Drawn as dots without a line: a scatter (the sweep view's parameter against a metric). */
  dotsOnly?: boolean;
}

export interface IChartOptions {
  title: string;
  unit?: string;
  width?: number;
  height?: number;
  /** Fixed y range, e.g. [0, 100] for percentages (ignored on a log axis). */
  yRange?: [number, number];
  xLabel?: string;
  /** EMA weight in [0, 1): 0 draws the raw values; above, the raw curve stays faint. */
  smoothing?: number;
  logY?: boolean;
  /** Format of values in ticks, hover and legend (default: a few significant digits). */
  format?: (v: number) => string;
}

export const PALETTE_SIZE = 10;
const SVG = 'http://www.w3.org/2000/svg';
const PAD = { left: 48, right: 12, top: 22, bottom: 24 };

// --- pure helpers -------------------------------------------------------------------------

export function extent(values: Iterable<number>): [number, number] {
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
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) {
    return [0, 1];
  }
  if (lo === hi) {
    const pad = Math.abs(lo) * 0.1 || 1;
    return [lo - pad, hi + pad];
  }
  return [lo, hi];
}

/** First index with x >= `x` in points sorted by x (points.length when none). */
export function lowerBound(points: Point[], x: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid][0] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/** Index of the point whose x is nearest to `x` (-1 for no points). */
export function nearestIndex(points: Point[], x: number): number {
  if (!points.length) {
    return -1;
  }
  const i = lowerBound(points, x);
  if (i === 0) {
    return 0;
  }
  if (i === points.length) {
    return i - 1;
  }
  return x - points[i - 1][0] <= points[i][0] - x ? i - 1 : i;
}

/**
 * TensorBoard's smoothing: an exponential moving average debiased for its start, so the
 * first values are not pulled towards 0. Non-finite values pass through untouched.
 */
export function smooth(points: Point[], weight: number): Point[] {
  if (!(weight > 0) || points.length < 2) {
    return points;
  }
  const w = Math.min(weight, 0.999);
  const out: Point[] = new Array(points.length);
  let last = 0;
  let n = 0;
  for (let i = 0; i < points.length; i++) {
    const [x, y] = points[i];
    if (!Number.isFinite(y)) {
      out[i] = [x, y];
      continue;
    }
    last = last * w + (1 - w) * y;
    n++;
    out[i] = [x, last / (1 - Math.pow(w, n))];
  }
  return out;
}

/**
 * The points of [x0, x1] worth drawing at `columns` pixels: per pixel column its first,
 * lowest, highest and last point, in x order (so spikes survive, and lines join as before).
 * Points just outside the range are kept so the curve reaches the edges.
 */
export function decimate(points: Point[], x0: number, x1: number, columns: number): Point[] {
  const from = Math.max(lowerBound(points, x0) - 1, 0);
  let to = lowerBound(points, x1);
  while (to < points.length && points[to][0] <= x1) {
    to++;
  }
  to = Math.min(to + 1, points.length); // exclusive
  if (to - from <= columns * 4 || !(x1 > x0)) {
    return points.slice(from, to);
  }
  const out: Point[] = [];
  const scale = columns / (x1 - x0);
  let col = NaN;
  let first = 0;
  let lo = 0;
  let hi = 0;
  let last = 0;
  const flush = () => {
    const picks = [first, lo, hi, last].sort((a, b) => a - b);
    let prev = -1;
    for (const k of picks) {
      if (k !== prev) {
        out.push(points[k]);
        prev = k;
      }
    }
  };
  for (let i = from; i < to; i++) {
    const y = points[i][1];
    const c = Math.floor((points[i][0] - x0) * scale);
    if (c !== col) {
      if (i > from) {
        flush();
      }
      col = c;
      first = lo = hi = last = i;
      continue;
    }
    last = i;
    if (y < points[lo][1]) {
      lo = i;
    }
    if (y > points[hi][1]) {
      hi = i;
    }
  }
  flush();
  return out;
}

/** About `count` round ticks (1, 2 or 5 x 10^k apart) covering [lo, hi]. */
export function linearTicks(lo: number, hi: number, count = 4): number[] {
  if (!(hi > lo)) {
    return [lo];
  }
  const raw = (hi - lo) / Math.max(count, 1);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push(Math.abs(t) < step * 1e-9 ? 0 : Number(t.toPrecision(12)));
  }
  return ticks;
}

/**
 * Ticks of a log axis over [lo, hi] (both > 0): the powers of ten inside it, thinned to at
 * most `count`; with fewer than two decades, 1-2-5 steps of each decade as well.
 */
export function logTicks(lo: number, hi: number, count = 5): number[] {
  if (!(lo > 0) || !(hi > lo)) {
    return lo > 0 ? [lo] : [];
  }
  const e0 = Math.ceil(Math.log10(lo) - 1e-9);
  const e1 = Math.floor(Math.log10(hi) + 1e-9);
  if (e1 - e0 >= 1) {
    const every = Math.ceil((e1 - e0 + 1) / count);
    const ticks: number[] = [];
    for (let e = e0; e <= e1; e += every) {
      ticks.push(Number(Math.pow(10, e).toPrecision(12)));
    }
    return ticks;
  }
  const ticks: number[] = [];
  for (let e = e0 - 1; e <= e1; e++) {
    for (const m of [1, 2, 5]) {
      const t = Number((m * Math.pow(10, e)).toPrecision(12));
      if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) {
        ticks.push(t);
      }
    }
  }
  return ticks.length ? ticks : [lo, hi];
}

export function formatValue(v: number): string {
  if (!Number.isFinite(v)) {
    return String(v);
  }
  const a = Math.abs(v);
  if (a >= 1e9) {
    return `${Number((v / 1e9).toPrecision(3))}G`;
  }
  if (a >= 1e6) {
    return `${Number((v / 1e6).toPrecision(3))}M`;
  }
  if (a >= 1e4) {
    return `${Number((v / 1e3).toPrecision(3))}k`;
  }
  if (Number.isInteger(v)) {
    return String(v);
  }
  if (a !== 0 && (a < 1e-3 || a >= 1e3)) {
    return v.toExponential(2);
  }
  return String(Number(v.toPrecision(4)));
}

// --- the chart ---------------------------------------------------------------------------

function svg<K extends keyof SVGElementTagNameMap>(
  name: K,
  attrs: Record<string, string | number>
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, String(v));
  }
  return node;
}

function html<K extends keyof HTMLElementTagNameMap>(
  name: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(name);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

const colorClass = (s: ISeries, i: number) => `jp-trainhub-c${(s.color ?? i) % PALETTE_SIZE}`;

interface IScale {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
  sx: (x: number) => number;
  sy: (y: number) => number;
  invX: (px: number) => number;
}

/**
 * One chart: `node` holds the SVG, the legend and the hover box. Call `setSeries` when the
 * data changes and `setOptions` for smoothing or the log axis; zoom is the chart's own.
 */
export class LineChart {
  readonly node: HTMLDivElement;
  private readonly plot: SVGSVGElement;
  private readonly legend: HTMLDivElement;
  private readonly tip: HTMLDivElement;
  private options: IChartOptions;
  private series: ISeries[] = [];
  /** What is drawn: each series smoothed (or raw), for hover and the legend. */
  private drawn: Point[][] = [];
  private zoom: [number, number] | null = null;
  private scale: IScale | null = null;
  private dragFrom: number | null = null;
  private selection: SVGRectElement | null = null;
  private hover: SVGGElement | null = null;

  constructor(options: IChartOptions) {
    this.options = options;
    this.node = html('div', 'jp-trainhub-chart-box');
    const width = options.width ?? 360;
    const height = options.height ?? 180;
    this.plot = svg('svg', {
      viewBox: `0 0 ${width} ${height}`,
      width,
      height,
      class: 'jp-trainhub-chart',
      role: 'img'
    });
    this.legend = html('div', 'jp-trainhub-chart-legend');
    this.tip = html('div', 'jp-trainhub-chart-tip');
    this.tip.hidden = true;
    this.node.append(this.plot, this.legend, this.tip);
    this.plot.addEventListener('mousedown', this.onDown);
    this.plot.addEventListener('mousemove', this.onMove);
    this.plot.addEventListener('mouseleave', this.onLeave);
    this.plot.addEventListener('dblclick', this.onReset);
    window.addEventListener('mouseup', this.onUp);
  }

  /** The visible x range while zoomed, else null. */
  get zoomRange(): [number, number] | null {
    return this.zoom;
  }

  setSeries(series: ISeries[]): this {
    this.series = series;
    this.draw();
    return this;
  }

  setOptions(options: Partial<IChartOptions>): this {
    this.options = { ...this.options, ...options };
    this.draw();
    return this;
  }

  /** Show [x0, x1] only (null: everything). */
  setZoom(range: [number, number] | null): this {
    this.zoom = range && range[1] > range[0] ? range : null;
    this.draw();
    return this;
  }

  dispose(): void {
    window.removeEventListener('mouseup', this.onUp);
    this.node.remove();
  }

  private get width(): number {
    return this.options.width ?? 360;
  }

  private get height(): number {
    return this.options.height ?? 180;
  }

  private fmt(v: number): string {
    return (this.options.format ?? formatValue)(v);
  }

  private draw(): void {
    const { width, height } = this;
    const o = this.options;
    this.plot.textContent = '';
    this.hover = null;
    this.selection = null;
    const title = svg('text', { x: PAD.left, y: 14, class: 'jp-trainhub-chart-title' });
    title.textContent = o.unit ? `${o.title} (${o.unit})` : o.title;
    this.plot.appendChild(title);
    if (this.zoom) {
      const hint = svg('text', {
        x: width - PAD.right,
        y: 14,
        'text-anchor': 'end',
        class: 'jp-trainhub-chart-tick'
      });
      hint.textContent = 'zoomed · double-click to reset';
      this.plot.appendChild(hint);
    }

    const logY = !!o.logY;
    const keep = (p: Point) => Number.isFinite(p[1]) && (!logY || p[1] > 0);
    this.drawn = this.series.map(s => smooth(s.points, o.smoothing ?? 0));
    let [x0, x1] = extent(
      (function* (all: ISeries[]) {
        for (const s of all) {
          if (s.points.length) {
            yield s.points[0][0];
            yield s.points[s.points.length - 1][0];
          }
        }
      })(this.series)
    );
    if (!this.series.some(s => s.points.some(keep))) {
      const empty = svg('text', {
        x: width / 2,
        y: height / 2,
        'text-anchor': 'middle',
        class: 'jp-trainhub-chart-empty'
      });
      empty.textContent =
        logY && this.series.some(s => s.points.length)
          ? 'no positive values for a log axis'
          : 'no data yet';
      this.plot.appendChild(empty);
      this.renderLegend(null);
      this.scale = null;
      return;
    }
    if (this.zoom) {
      [x0, x1] = this.zoom;
    }
    const columns = Math.max(width - PAD.left - PAD.right, 1);
    // Decimate raw and smoothed alike; the y range fits what is visible.
    const raw = this.series.map(s => decimate(s.points, x0, x1, columns).filter(keep));
    const shown = this.drawn.map(d => decimate(d, x0, x1, columns).filter(keep));
    let [y0, y1] =
      o.yRange && !logY
        ? o.yRange
        : extent(
            (function* () {
              for (const list of [raw, shown]) {
                for (const pts of list) {
                  for (const p of pts) {
                    if (p[0] >= x0 && p[0] <= x1) {
                      yield p[1];
                    }
                  }
                }
              }
            })()
          );
    if (logY) {
      y0 = Math.max(y0, Number.MIN_VALUE);
      if (y1 <= y0) {
        y1 = y0 * 10;
      }
    }
    const ty = logY ? Math.log10 : (v: number) => v;
    const [t0, t1] = [ty(y0), ty(y1)];
    const plotW = width - PAD.left - PAD.right;
    const plotH = height - PAD.top - PAD.bottom;
    const sx = (x: number) => PAD.left + ((x - x0) / (x1 - x0)) * plotW;
    const sy = (y: number) => height - PAD.bottom - ((ty(y) - t0) / (t1 - t0 || 1)) * plotH;
    const invX = (px: number) => x0 + ((px - PAD.left) / plotW) * (x1 - x0);
    this.scale = { x0, x1, y0, y1, sx, sy, invX };

    for (const v of logY ? logTicks(y0, y1) : linearTicks(y0, y1)) {
      const y = sy(v).toFixed(1);
      this.plot.appendChild(
        svg('line', {
          x1: PAD.left,
          x2: width - PAD.right,
          y1: y,
          y2: y,
          class: 'jp-trainhub-chart-grid'
        })
      );
      const t = svg('text', {
        x: PAD.left - 4,
        y: Number(y) + 3,
        'text-anchor': 'end',
        class: 'jp-trainhub-chart-tick'
      });
      t.textContent = this.fmt(v);
      this.plot.appendChild(t);
    }
    for (const v of linearTicks(x0, x1, 4)) {
      const t = svg('text', {
        x: sx(v),
        y: height - 8,
        'text-anchor': 'middle',
        class: 'jp-trainhub-chart-tick'
      });
      t.textContent = formatValue(v);
      this.plot.appendChild(t);
    }
    const xl = svg('text', {
      x: width - PAD.right,
      y: height - 8,
      'text-anchor': 'end',
      class: 'jp-trainhub-chart-tick jp-trainhub-chart-xlabel'
    });
    xl.textContent = o.xLabel ?? '';
    this.plot.appendChild(xl);

    const clip = `jp-trainhub-clip-${Math.random().toString(36).slice(2)}`;
    const defs = svg('defs', {});
    const clipPath = svg('clipPath', { id: clip });
    clipPath.appendChild(
      svg('rect', { x: PAD.left, y: PAD.top - 2, width: plotW, height: plotH + 4 })
    );
    defs.appendChild(clipPath);
    this.plot.appendChild(defs);
    const lines = svg('g', { 'clip-path': `url(#${clip})` });
    const path = (pts: Point[]) =>
      pts.map((p, j) => `${j ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join('');
    const smoothing = (o.smoothing ?? 0) > 0;
    this.series.forEach((s, i) => {
      const cls = `${colorClass(s, i)}${s.dashed ? ' jp-mod-dashed' : ''}`;
      if (smoothing && raw[i].length && !s.dotsOnly) {
        lines.appendChild(
          svg('path', { d: path(raw[i]), class: `jp-trainhub-chart-line jp-mod-raw ${cls}` })
        );
      }
      if (shown[i].length && !s.dotsOnly) {
        lines.appendChild(
          svg('path', { d: path(shown[i]), class: `jp-trainhub-chart-line ${cls}` })
        );
      }
      if (shown[i].length <= 30 || s.dotsOnly) {
        // Few samples: mark each, so a single one is visible at all.
        for (const p of shown[i]) {
          lines.appendChild(
            svg('circle', {
              cx: sx(p[0]).toFixed(1),
              cy: sy(p[1]).toFixed(1),
              r: 2.5,
              class: `jp-trainhub-chart-dot ${cls}`
            })
          );
        }
      }
    });
    this.plot.appendChild(lines);
    this.renderLegend(null);
  }

  /** The legend: each series with its value at `x` (hover) or its last value. */
  private renderLegend(x: number | null): void {
    this.legend.textContent = '';
    this.series.forEach((s, i) => {
      const pts = this.drawn[i] ?? s.points;
      const k = x === null ? pts.length - 1 : nearestIndex(pts, x);
      const entry = html(
        'span',
        `jp-trainhub-chart-key ${colorClass(s, i)}${s.dashed ? ' jp-mod-dashed' : ''}`
      );
      entry.append(
        html('span', 'jp-trainhub-chart-swatch'),
        html('span', 'jp-trainhub-chart-key-label', s.label)
      );
      if (k >= 0) {
        entry.append(html('span', 'jp-trainhub-chart-key-value', this.fmt(pts[k][1])));
      }
      this.legend.appendChild(entry);
    });
  }

  private pointerX(e: MouseEvent): number | null {
    const rect = this.plot.getBoundingClientRect();
    if (!rect.width) {
      return null;
    }
    return ((e.clientX - rect.left) / rect.width) * this.width;
  }

  private onDown = (e: MouseEvent): void => {
    const px = this.pointerX(e);
    if (e.button !== 0 || px === null || !this.scale) {
      return;
    }
    e.preventDefault();
    this.dragFrom = Math.min(Math.max(px, PAD.left), this.width - PAD.right);
  };

  private onMove = (e: MouseEvent): void => {
    const px = this.pointerX(e);
    const scale = this.scale;
    if (px === null || !scale) {
      return;
    }
    const clamped = Math.min(Math.max(px, PAD.left), this.width - PAD.right);
    if (this.dragFrom !== null) {
      if (!this.selection) {
        this.selection = svg('rect', {
          y: PAD.top,
          height: this.height - PAD.top - PAD.bottom,
          class: 'jp-trainhub-chart-selection'
        });
        this.plot.appendChild(this.selection);
      }
      this.selection.setAttribute('x', String(Math.min(this.dragFrom, clamped)));
      this.selection.setAttribute('width', String(Math.abs(clamped - this.dragFrom)));
    }
    this.showHover(scale.invX(clamped), e);
  };

  private onUp = (e: MouseEvent): void => {
    if (this.dragFrom === null) {
      return;
    }
    const from = this.dragFrom;
    this.dragFrom = null;
    const px = this.pointerX(e);
    const scale = this.scale;
    this.selection?.remove();
    this.selection = null;
    if (px === null || !scale) {
      return;
    }
    const to = Math.min(Math.max(px, PAD.left), this.width - PAD.right);
    if (Math.abs(to - from) >= 4) {
      this.setZoom([scale.invX(Math.min(from, to)), scale.invX(Math.max(from, to))]);
    }
  };

  private onLeave = (): void => {
    this.hover?.remove();
    this.hover = null;
    this.tip.hidden = true;
    this.renderLegend(null);
  };

  private onReset = (): void => {
    this.setZoom(null);
  };

  private showHover(x: number, e: MouseEvent): void {
    const scale = this.scale!;
    this.hover?.remove();
    this.hover = svg('g', { class: 'jp-trainhub-chart-hover' });
    const rows: [ISeries, number, Point][] = [];
    this.series.forEach((s, i) => {
      const pts = this.drawn[i];
      const k = nearestIndex(pts, x);
      if (k >= 0 && Number.isFinite(pts[k][1]) && (!this.options.logY || pts[k][1] > 0)) {
        rows.push([s, i, pts[k]]);
      }
    });
    if (!rows.length) {
      return;
    }
    // The vertical rule sits at the nearest point of any series.
    const at = rows.reduce((a, b) => (Math.abs(b[2][0] - x) < Math.abs(a[2][0] - x) ? b : a))[2][0];
    const rx = scale.sx(at).toFixed(1);
    this.hover.appendChild(
      svg('line', {
        x1: rx,
        x2: rx,
        y1: PAD.top,
        y2: this.height - PAD.bottom,
        class: 'jp-trainhub-chart-rule'
      })
    );
    for (const [s, i, p] of rows) {
      if (p[0] >= scale.x0 && p[0] <= scale.x1) {
        this.hover.appendChild(
          svg('circle', {
            cx: scale.sx(p[0]).toFixed(1),
            cy: scale.sy(p[1]).toFixed(1),
            r: 3.5,
            class: `jp-trainhub-chart-dot ${colorClass(s, i)}`
          })
        );
      }
    }
    this.plot.appendChild(this.hover);
    this.tip.textContent = '';
    this.tip.appendChild(
      html('div', 'jp-trainhub-chart-tip-x', `${this.options.xLabel ?? 'x'} ${formatValue(at)}`)
    );
    for (const [s, i, p] of rows) {
      const row = html('div', `jp-trainhub-chart-key ${colorClass(s, i)}`);
      row.append(
        html('span', 'jp-trainhub-chart-swatch'),
        html('span', 'jp-trainhub-chart-key-label', s.label),
        html('span', 'jp-trainhub-chart-key-value', this.fmt(p[1]))
      );
      this.tip.appendChild(row);
    }
    this.tip.hidden = false;
    const box = this.node.getBoundingClientRect();
    const left = e.clientX - box.left;
    this.tip.style.left = `${left + 12}px`;
    this.tip.style.top = `${Math.max(e.clientY - box.top - 10, 0)}px`;
    if (left > box.width / 2) {
      this.tip.style.left = `${Math.max(left - 12 - this.tip.offsetWidth, 0)}px`;
    }
    this.renderLegend(at);
  }
}

/** A chart of `series` in one call (for charts that are redrawn whole). */
export function lineChart(series: ISeries[], options: IChartOptions): HTMLDivElement {
  return new LineChart(options).setSeries(series).node;
}
