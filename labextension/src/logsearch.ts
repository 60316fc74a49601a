/**
 * Search in a log: every occurrence of the query (case-insensitive, literal), counted over
 * all rows so the view can say "k of n", step to the next or previous one, and mark each
 * occurrence in the rows it draws. Matching is on the text as shown (escape codes removed).
 */
import { IAnsiSpan } from './ansi';

/** A literal, case-insensitive, global pattern for `query` (null for an empty query). */
export function compileQuery(query: string): RegExp | null {
  if (!query) {
    return null;
  }
  return new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi');
}

/** [start, end) of each occurrence in `text`, not overlapping. */
export function matchRanges(text: string, pattern: RegExp): [number, number][] {
  const out: [number, number][] = [];
  pattern.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = pattern.exec(text)) !== null) {
    out.push([m.index, m.index + m[0].length]);
  }
  return out;
}

export function countIn(text: string, pattern: RegExp): number {
  pattern.lastIndex = 0;
  let n = 0;
  while (pattern.exec(text) !== null) {
    n++;
  }
  return n;
}

/**
 * Spans cut at the occurrences' edges, occurrences marked ('current' for the one with index
 * `current` among them). Offsets count characters of the spans' joined text.
 */
export function markSpans(
  spans: IAnsiSpan[],
  ranges: [number, number][],
  current = -1
): IAnsiSpan[] {
  if (!ranges.length) {
    return spans;
  }
  const out: IAnsiSpan[] = [];
  let pos = 0;
  let r = 0;
  for (const span of spans) {
    const end = pos + span.text.length;
    let at = pos;
    while (at < end) {
      while (r < ranges.length && ranges[r][1] <= at) {
        r++;
      }
      const range = ranges[r];
      if (!range || range[0] >= end) {
        out.push({ text: span.text.slice(at - pos), style: span.style });
        break;
      }
      if (range[0] > at) {
        out.push({ text: span.text.slice(at - pos, range[0] - pos), style: span.style });
        at = range[0];
      }
      const stop = Math.min(range[1], end);
      out.push({
        text: span.text.slice(at - pos, stop - pos),
        style: span.style,
        mark: r === current ? 'current' : 'match'
      });
      at = stop;
    }
    pos = end;
  }
  return out;
}

/** Rows of a log, for the search: the number of rows and each row's text as shown. */
export interface ISearchable {
  readonly length: number;
  text(row: number): string;
}

/**
 * The occurrences of one query over a log's rows, as the row of each occurrence in order
 * (a row appears once per occurrence). Counted in slices of `slice` rows, so a million-line
 * log never blocks the page; `extend` goes on over rows appended since.
 */
export class SearchResults {
  readonly pattern: RegExp;
  /** Row of each occurrence found so far. */
  rows: number[] = [];
  /** Rows scanned so far. */
  scanned = 0;
  /** The current occurrence (-1: none chosen yet). */
  current = -1;

  constructor(readonly query: string) {
    this.pattern = compileQuery(query)!;
  }

  get count(): number {
    return this.rows.length;
  }

  /** Scan up to `slice` more rows; true when every row is scanned. */
  scan(rows: ISearchable, slice = 100_000): boolean {
    // The last row may have been a line still being written: count it again.
    if (this.scanned > 0 && this.scanned >= rows.length - 1) {
      const last = this.scanned - 1;
      while (this.rows.length && this.rows[this.rows.length - 1] === last) {
        this.rows.pop();
      }
      this.scanned = last;
    }
    const stop = Math.min(rows.length, this.scanned + slice);
    for (let i = this.scanned; i < stop; i++) {
      const n = countIn(rows.text(i), this.pattern);
      for (let k = 0; k < n; k++) {
        this.rows.push(i);
      }
    }
    this.scanned = stop;
    return stop >= rows.length;
  }

  /** Index of the first occurrence in `row` (count when none at or after it). */
  firstIn(row: number): number {
    let lo = 0;
    let hi = this.rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.rows[mid] < row) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Step to the next (or previous) occurrence, wrapping; with none chosen yet, the first one
   * at or after `fromRow` (going back: the last before it). Returns its row, or -1.
   */
  step(forward: boolean, fromRow = 0): number {
    const n = this.rows.length;
    if (!n) {
      this.current = -1;
      return -1;
    }
    if (this.current < 0) {
      const at = this.firstIn(fromRow);
      this.current = forward ? at % n : (at - 1 + n) % n;
    } else {
      this.current = (this.current + (forward ? 1 : -1) + n) % n;
    }
    return this.rows[this.current];
  }

  /** "k of n" (k = 0 before a step), with "+" while rows are still being counted. */
  label(done: boolean): string {
    const n = `${this.count.toLocaleString('en-US')}${done ? '' : '+'}`;
    return this.count || !done ? `${this.current + 1} of ${n}` : 'no match';
  }
}
