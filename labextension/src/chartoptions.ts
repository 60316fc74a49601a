/**
 * How a chart looks to uPlot: the theme's colours (read from the page), the axes with the
 * ticks of chartmath.ts, each curve's stroke, dash and dots, and the chart's own zoom.
 */
import uPlot from 'uplot';

import { formatValue, linearTicks, logTicks } from './chartmath';
import type { IChartOptions, ICurve } from './charts';

export const PALETTE_SIZE = 10;
/** Pixels the y axis takes from the plot's width. */
export const Y_AXIS = 48;

/** What the chart does on uPlot's events. */
export interface IPlotEvents {
  cursor: (u: uPlot) => void;
  select: (u: uPlot) => void;
  /** Drawn, with the y axis's ticks. */
  drawn: (yTicks: number[]) => void;
}

/**
 * The theme's value of a CSS property for an element of `className` (probed in the page: a
 * chart is drawn before it is attached, and detached elements have no computed style).
 */
function themed(className: string, property: string): string {
  const probe = document.createElement('span');
  probe.className = className;
  probe.hidden = true;
  document.body.appendChild(probe);
  const value = getComputedStyle(probe).getPropertyValue(property).trim();
  probe.remove();
  return value || 'gray'; // only where no stylesheet is loaded (jsdom)
}

/** uPlot's options for `curves`, drawn `width` pixels wide. */
export function plotOptions(
  o: IChartOptions,
  curves: readonly ICurve[],
  width: number,
  on: IPlotEvents
): uPlot.Options {
  const fmt = o.format ?? formatValue;
  let yTicks: number[] = [];
  const text = themed('jp-trainhub-chart-tick', 'color');
  const rule = themed('jp-trainhub-chart-rule', 'color');
  const background = themed('jp-trainhub-chart', 'background-color');
  const font = `10px ${themed('jp-trainhub-chart-tick', 'font-family')}`;
  const palette = Array.from({ length: PALETTE_SIZE }, (_, i) =>
    themed(`jp-trainhub-c${i}`, 'color')
  );
  const axis = {
    stroke: text,
    font,
    grid: { stroke: rule, width: 1 },
    ticks: { stroke: rule, width: 1, size: 4 }
  };
  return {
    width,
    height: o.height ?? 180,
    legend: { show: false },
    cursor: {
      y: false,
      // The chart zooms itself (onSelect), so the new range is decimated at full detail.
      drag: { x: true, y: false, setScale: false },
      // Double-click shows everything again (the area's own listener), not the decimated range.
      bind: { dblclick: () => () => null }
    },
    scales: {
      x: { time: false },
      y: o.logY
        ? { distr: 3, log: 10 }
        : o.yRange
          ? { range: () => o.yRange as [number, number] }
          : {}
    },
    axes: [
      {
        ...axis,
        size: 28,
        splits: (_u, _i, min, max) => linearTicks(min, max, 4),
        values: (_u, splits) => splits.map(formatValue)
      },
      {
        ...axis,
        size: Y_AXIS,
        splits: (_u, _i, min, max) => {
          yTicks = o.logY ? logTicks(min, max) : linearTicks(min, max);
          return yTicks;
        },
        values: (_u, splits) => splits.map(v => fmt(v))
      }
    ],
    series: [
      { label: o.xLabel ?? 'x' },
      ...curves.map(c => ({
        label: c.label,
        stroke: palette[c.color],
        width: c.raw ? 1 : 1.5,
        alpha: c.raw ? 0.25 : c.dashed ? 0.7 : 1,
        dash: c.dashed ? [4, 3] : undefined,
        paths: c.line ? undefined : () => null,
        points: { show: c.dots, size: 5, fill: palette[c.color], stroke: background }
      }))
    ],
    hooks: {
      setCursor: [on.cursor],
      setSelect: [on.select],
      draw: [() => on.drawn(yTicks)]
    }
  };
}
