/**
 * The rows the log view shows, over the lines of one or more rank logs (LogBuffer): one
 * rank's lines, or all ranks' merged with a rank prefix; trainhub's own lines left out
 * unless asked for. Rows map to lines by binary search over the few hidden lines and cell
 * markers, so a million-line log costs no second array.
 */
import { LogBuffer } from './logbuffer';
import { LineKind, lineKind } from './loglines';

export interface ILogRows {
  readonly length: number;
  /** The row's raw text, escape codes included. */
  text(row: number): string;
  kind(row: number): LineKind;
  /** The rank whose line it is, when several are shown together (else null). */
  rank(row: number): number | null;
  /** The line's number in its rank's log, from 1. */
  lineNumber(row: number): number;
  /** True while rows only ever grow at the end (so a search can go on from where it was). */
  readonly appendOnly: boolean;
}

/** How many of `sorted` are <= `v`. */
export function countAtMost(sorted: ArrayLike<number>, v: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] <= v) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/**
 * The line of visible row `row` when the lines `hidden` (sorted) are left out: the smallest
 * line with `row` visible lines before it. hidden[j] - j visible lines come before hidden[j].
 */
export function lineOfRow(hidden: number[], row: number): number {
  let lo = 0;
  let hi = hidden.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (hidden[mid] - mid <= row) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return row + lo;
}

const NONE: number[] = [];

/** One rank's log. */
export class RankRows implements ILogRows {
  readonly appendOnly = true;

  constructor(
    readonly buffer: LogBuffer,
    readonly showInternal = false
  ) {}

  private get hidden(): number[] {
    return this.showInternal ? NONE : this.buffer.internal;
  }

  get length(): number {
    return this.buffer.length - this.hidden.length;
  }

  private line(row: number): number {
    return lineOfRow(this.hidden, row);
  }

  text(row: number): string {
    return this.buffer.line(this.line(row));
  }

  kind(row: number): LineKind {
    return lineKind(this.text(row));
  }

  rank(): number | null {
    return null;
  }

  lineNumber(row: number): number {
    return this.line(row) + 1;
  }
}

interface ISegment {
  rank: number;
  /** Lines [start, end) of the rank's log. */
  start: number;
  end: number;
  /** The cell marker's time that opens it (-Infinity before the first marker). */
  time: number;
  /** Rows before this segment, in the merged order. */
  before: number;
  rows: number;
}

/**
 * All ranks' logs together, each line prefixed with its rank, merged by time at the
 * granularity the logs carry: each rank's log is cut at its cell markers, and the pieces are
 * ordered by the time their cell started (ties by rank); the lines before a rank's first
 * marker come first. Within a piece the rank's lines keep their order.
 */
export class MergedRows implements ILogRows {
  readonly appendOnly = false;
  private segments: ISegment[] = [];
  private signature = '';

  constructor(
    readonly buffers: Map<number, LogBuffer>,
    readonly showInternal = false
  ) {}

  get length(): number {
    const s = this.table();
    const last = s[s.length - 1];
    return last ? last.before + last.rows : 0;
  }

  text(row: number): string {
    const [seg, line] = this.locate(row);
    return seg ? this.buffers.get(seg.rank)!.line(line) : '';
  }

  kind(row: number): LineKind {
    return lineKind(this.text(row));
  }

  rank(row: number): number | null {
    return this.locate(row)[0]?.rank ?? null;
  }

  lineNumber(row: number): number {
    return this.locate(row)[1] + 1;
  }

  private hidden(rank: number): number[] {
    return this.showInternal ? NONE : this.buffers.get(rank)!.internal;
  }

  private locate(row: number): [ISegment | undefined, number] {
    const s = this.table();
    let lo = 0;
    let hi = s.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (s[mid].before <= row) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const seg = s[lo];
    if (!seg) {
      return [undefined, 0];
    }
    const hidden = this.hidden(seg.rank);
    // Visible rows of the rank's log before the segment, plus the offset into it.
    const first = seg.start - countAtMost(hidden, seg.start - 1);
    return [seg, lineOfRow(hidden, first + row - seg.before)];
  }

  /** The segments in merged order; rebuilt when any log grew. */
  private table(): ISegment[] {
    const ranks = [...this.buffers.keys()].sort((a, b) => a - b);
    const signature = ranks.map(r => `${r}:${this.buffers.get(r)!.length}`).join(',');
    if (signature === this.signature) {
      return this.segments;
    }
    this.signature = signature;
    const segments: ISegment[] = [];
    for (const rank of ranks) {
      const buffer = this.buffers.get(rank)!;
      const hidden = this.hidden(rank);
      const cuts = [
        { line: 0, time: -Infinity },
        ...buffer.markers.map(m => ({ line: m.line, time: m.time }))
      ];
      cuts.forEach((cut, i) => {
        const end = i + 1 < cuts.length ? cuts[i + 1].line : buffer.length;
        const rows =
          end - cut.line - (countAtMost(hidden, end - 1) - countAtMost(hidden, cut.line - 1));
        if (rows > 0) {
          segments.push({ rank, start: cut.line, end, time: cut.time, before: 0, rows });
        }
      });
    }
    segments.sort((a, b) => a.time - b.time || a.rank - b.rank || a.start - b.start);
    let before = 0;
    for (const s of segments) {
      s.before = before;
      before += s.rows;
    }
    this.segments = segments;
    return segments;
  }
}
