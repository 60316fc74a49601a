/**
 * Line charts for metrics, drawn by uPlot (a small canvas chart library, fast with series of
 * 10^5 points): several named series, axes with the unit in the title and the x quantity
 * under the plot, hover values, EMA smoothing (TensorBoard's, debiased; the raw curve faint
 * behind), a log y axis, drag-to-zoom (double-click resets; y fits what is visible) and a
 * legend below the plot, so it never covers the end of a curve.
 *
 * Each series is decimated to the plot's pixel width over the visible x range before uPlot
 * gets it (chartmath.ts), so 10 series of 100,000 points whose x differ (runs against time)
 * join into a few thousand rows, not a million. All text goes in with textContent; colours
 * are the theme's (style/metrics-logs.css), read again when the theme changes.
 */
import uPlot from 'uplot';

import { decimate, extent, formatValue, nearestIndex, Point, smooth } from './chartmath';
import { PALETTE_SIZE, plotOptions, Y_AXIS } from './chartoptions';

export type { Point } from './chartmath';
export { PALETTE_SIZE } from './chartoptions';

export interface ISeries {
  label: string;
  /** Points in increasing x. */
  points: Point[];
  /** Palette index (0-9; default: the series' position): curves of one run share it. */
  color?: number;
  /** Drawn dashed and faint, e.g. a fork's parent before the step it forked from. */
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

/** One line handed to uPlot: a series' curve, or its raw curve faint behind the smoothed one. */
export interface ICurve {
  label: string;
  color: number;
  raw: boolean;
  dashed: boolean;
  /** Each point marked: few samples (a single one is visible at all), or a scatter. */
  dots: boolean;
  line: boolean;
}

/** Series with at most this many points shown get a dot at each. */
const FEW_POINTS = 30;

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

/**
 * One chart: `node` holds the title, the plot, the legend and the hover box. Call `setSeries`
 * when the data changes and `setOptions` for smoothing or the log axis; zoom is the chart's own.
 */
export class LineChart {
  readonly node: HTMLDivElement;
  private readonly title: HTMLDivElement;
  private readonly hint: HTMLSpanElement;
  private readonly area: HTMLDivElement;
  private readonly empty: HTMLDivElement;
  private readonly xLabel: HTMLDivElement;
  private readonly legend: HTMLDivElement;
  private readonly tip: HTMLDivElement;
  private readonly themeWatch: MutationObserver;
  private options: IChartOptions;
  private series: ISeries[] = [];
  /** Each series smoothed (or raw), at full resolution, for hover and the legend. */
  private drawn: Point[][] = [];
  private shown: ICurve[] = [];
  private plot: uPlot | null = null;
  /** The x range of all the data. */
  private full: [number, number] = [0, 1];
  private zoom: [number, number] | null = null;

  constructor(options: IChartOptions) {
    this.options = options;
    this.node = html('div', 'jp-trainhub-chart-box');
    const head = html('div', 'jp-trainhub-chart-head');
    this.title = html('div', 'jp-trainhub-chart-title');
    this.hint = html('span', 'jp-trainhub-chart-hint');
    head.append(this.title, this.hint);
    this.area = html('div', 'jp-trainhub-chart');
    this.area.setAttribute('role', 'img');
    this.empty = html('div', 'jp-trainhub-chart-empty');
    this.xLabel = html('div', 'jp-trainhub-chart-xlabel');
    this.legend = html('div', 'jp-trainhub-chart-legend');
    this.tip = html('div', 'jp-trainhub-chart-tip');
    this.tip.hidden = true;
    this.node.append(head, this.area, this.empty, this.xLabel, this.legend, this.tip);
    this.area.addEventListener('dblclick', () => this.setZoom(null));
    // Canvas colours are read once per drawing: draw again when the theme changes.
    this.themeWatch = new MutationObserver(() => this.draw());
    this.themeWatch.observe(document.body, {
      attributes: true,
      attributeFilter: ['data-jp-theme-name']
    });
  }

  /** The visible x range while zoomed, else null. */
  get zoomRange(): [number, number] | null {
    return this.zoom;
  }

  /** What the plot draws, one entry per line (raw curves behind smoothed ones included). */
  get curves(): readonly ICurve[] {
    return this.shown;
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
    this.themeWatch.disconnect();
    this.plot?.destroy();
    this.node.remove();
  }

  private get width(): number {
    return this.options.width ?? 360;
  }

  private fmt(v: number): string {
    return (this.options.format ?? formatValue)(v);
  }

  private keep = (p: Point): boolean => Number.isFinite(p[1]) && (!this.options.logY || p[1] > 0);

  private draw(): void {
    const o = this.options;
    this.title.textContent = o.unit ? `${o.title} (${o.unit})` : o.title;
    this.xLabel.textContent = o.xLabel ?? '';
    this.hint.textContent = this.zoom ? 'zoomed · double-click to reset' : '';
    this.drawn = this.series.map(s => smooth(s.points, o.smoothing ?? 0));
    this.full = extent(
      this.series.flatMap(s =>
        s.points.length ? [s.points[0][0], s.points[s.points.length - 1][0]] : []
      )
    );
    this.plot?.destroy();
    this.plot = null;
    this.tip.hidden = true;
    const hasData = this.series.some(s => s.points.some(this.keep));
    this.area.hidden = !hasData;
    this.empty.hidden = hasData;
    this.empty.textContent =
      o.logY && this.series.some(s => s.points.length)
        ? 'no positive values for a log axis'
        : 'no data yet';
    this.shown = [];
    if (hasData) {
      const data = this.data();
      const options = plotOptions(o, this.shown, this.width, {
        cursor: u => this.onCursor(u),
        select: u => this.onSelect(u),
        drawn: yTicks => this.describe(yTicks)
      });
      this.plot = new uPlot(options, data, this.area);
      if (this.zoom) {
        this.plot.setScale('x', { min: this.zoom[0], max: this.zoom[1] });
      }
    }
    this.node.classList.toggle(
      'jp-mod-smoothed',
      this.shown.some(c => c.raw)
    );
    this.renderLegend(null);
  }

  /** The curves of the visible range, decimated to the plot's width and joined on one x. */
  private data(): uPlot.AlignedData {
    const [x0, x1] = this.zoom ?? this.full;
    const columns = Math.max(this.width - Y_AXIS, 1);
    const smoothing = (this.options.smoothing ?? 0) > 0;
    const tables: uPlot.AlignedData[] = [];
    const add = (points: Point[], curve: ICurve) => {
      const kept = decimate(points, x0, x1, columns).filter(this.keep);
      tables.push([kept.map(p => p[0]), kept.map(p => p[1])]);
      this.shown.push({ ...curve, dots: curve.dots || kept.length <= FEW_POINTS });
    };
    this.series.forEach((s, i) => {
      const curve = {
        label: s.label,
        color: (s.color ?? i) % PALETTE_SIZE,
        dashed: !!s.dashed,
        dots: !!s.dotsOnly,
        line: !s.dotsOnly
      };
      if (smoothing && !s.dotsOnly) {
        add(s.points, { ...curve, raw: true, dots: false });
      }
      add(this.drawn[i], { ...curve, raw: false });
    });
    return uPlot.join(tables);
  }

  /** A drag over the plot selected an x range: zoom to it, decimated anew for that range. */
  private onSelect(u: uPlot): void {
    const { left, width } = u.select;
    if (width < 4) {
      return; // a click, not a drag
    }
    const range: [number, number] = [u.posToVal(left, 'x'), u.posToVal(left + width, 'x')];
    queueMicrotask(() => this.setZoom(range)); // after uPlot has finished its mouseup
  }

  /** Screen readers get what the canvas shows: the curves, the axes and their ticks. */
  private describe(yTicks: number[]): void {
    const o = this.options;
    this.area.setAttribute(
      'aria-label',
      `${this.title.textContent}: ${this.series.map(s => s.label).join(', ')} against ${
        o.xLabel ?? 'x'
      }; y axis${o.logY ? ' (log)' : ''} ticks ${yTicks.map(v => this.fmt(v)).join(', ')}`
    );
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

  /** Hover: each series' value nearest the pointer's x, in the box and the legend. */
  private onCursor(u: uPlot): void {
    const idx = u.cursor.idx;
    const x = idx === null || idx === undefined ? undefined : u.data[0][idx];
    if (x === undefined) {
      this.tip.hidden = true;
      this.renderLegend(null);
      return;
    }
    const rows: [ISeries, number, Point][] = [];
    this.series.forEach((s, i) => {
      const pts = this.drawn[i];
      const k = nearestIndex(pts, x);
      if (k >= 0 && this.keep(pts[k])) {
        rows.push([s, i, pts[k]]);
      }
    });
    if (!rows.length) {
      return;
    }
    this.tip.textContent = '';
    this.tip.appendChild(
      html('div', 'jp-trainhub-chart-tip-x', `${this.options.xLabel ?? 'x'} ${formatValue(x)}`)
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
    const over = u.over.getBoundingClientRect();
    const left = over.left - box.left + (u.cursor.left ?? 0);
    const top = over.top - box.top + (u.cursor.top ?? 0);
    this.tip.style.left = `${left + 12}px`;
    this.tip.style.top = `${Math.max(top - 10, 0)}px`;
    if (left > box.width / 2) {
      this.tip.style.left = `${Math.max(left - 12 - this.tip.offsetWidth, 0)}px`;
    }
    this.renderLegend(x);
  }
}

/** A chart of `series` in one call (for charts that are redrawn whole). */
export function lineChart(series: ISeries[], options: IChartOptions): HTMLDivElement {
  return new LineChart(options).setSeries(series).node;
}
