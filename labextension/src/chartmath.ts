/**
 * The arithmetic of the charts, pure and jest-tested: extents, the nearest point for hover,
 * TensorBoard's debiased EMA smoothing, decimation to a pixel width (first, lowest, highest
 * and last point of each column, so spikes survive), round linear and log ticks, and compact
 * number formatting.
 */

export type Point = [number, number];

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
