/**
 * Log text as an array of lines, plus the arithmetic of a virtual window over it: only the
 * rows in view are ever in the DOM, so a million lines cost an array, not a million nodes.
 */
import { ILogChunk } from './models';
import { ICellMarker, latestRedraw, lineKind, parseCellMarker } from './loglines';

export interface IMarkedLine extends ICellMarker {
  /** Index of the marker line. */
  line: number;
}

export class LogBuffer {
  private lines: string[] = [];
  private partial = '';
  /** Indices of trainhub's own complete lines (cell markers aside), in order. */
  internal: number[] = [];
  /** The cell markers among the complete lines, in order. */
  markers: IMarkedLine[] = [];

  /** Lines held, counting an unterminated last line. */
  get length(): number {
    return this.lines.length + (this.partial ? 1 : 0);
  }

  line(index: number): string {
    if (index < this.lines.length) {
      return this.lines[index];
    }
    return index === this.lines.length ? this.partial : '';
  }

  /**
   * Append raw text; a line without its newline yet is completed by the next append. A line
   * redrawn with "\r" (a progress bar) is held as its latest redraw: one updating line.
   */
  append(text: string): void {
    if (!text) {
      return;
    }
    const parts = (this.partial + text).split('\n');
    this.partial = latestRedraw(parts.pop() ?? '');
    const lines = this.lines;
    for (let i = 0; i < parts.length; i++) {
      const line = latestRedraw(parts[i]);
      if (line.charCodeAt(0) === 91) {
        this.classify(line, lines.length);
      }
      lines.push(line);
    }
  }

  clear(): void {
    this.lines = [];
    this.partial = '';
    this.internal = [];
    this.markers = [];
  }

  private classify(line: string, index: number): void {
    const kind = lineKind(line);
    if (kind === 'internal') {
      this.internal.push(index);
    } else if (kind === 'cell') {
      const m = parseCellMarker(line)!;
      this.markers.push({ ...m, line: index });
    }
  }

  /**
   * Index of the next line containing `query` (case-insensitive) after `from` going
   * forward, or before it going backward; wraps around. -1 when no line matches.
   */
  find(query: string, from: number, forward = true, text = (s: string) => s): number {
    const n = this.length;
    if (!query || n === 0) {
      return -1;
    }
    const q = query.toLowerCase();
    for (let k = 1; k <= n; k++) {
      const i = (((forward ? from + k : from - k) % n) + n) % n;
      if (text(this.line(i)).toLowerCase().includes(q)) {
        return i;
      }
    }
    return -1;
  }
}

/** Browsers stop growing an element somewhere above 16M px; keep the scroll range below. */
export const MAX_SCROLL_PX = 8_000_000;

export interface IWindow {
  /** First line index in view. */
  first: number;
  /** Number of lines to render from `first`. */
  count: number;
  /** Where the first rendered row sits, relative to the scroller's content top (px). */
  top: number;
  /** Height of the scrollable content (px). */
  scrollHeight: number;
}

export function scrollHeightFor(total: number, lineHeight: number): number {
  return Math.min(total * lineHeight, MAX_SCROLL_PX);
}

/**
 * How far the view scrolls: `maxScroll` on the scroller (its content at most MAX_SCROLL_PX
 * high), `virtualMax` over all lines at full line height; the two map linearly onto each other.
 */
function scrollRange(
  viewportHeight: number,
  total: number,
  lineHeight: number
): { scrollHeight: number; maxScroll: number; virtualMax: number } {
  const scrollHeight = scrollHeightFor(total, lineHeight);
  return {
    scrollHeight,
    maxScroll: Math.max(scrollHeight - viewportHeight, 0),
    virtualMax: Math.max(total * lineHeight - viewportHeight, 0)
  };
}

/**
 * The lines visible at `scrollTop`. Past MAX_SCROLL_PX the scroll range is scaled: the
 * scrollbar maps linearly onto all lines, and rows are still laid out at full line height.
 */
export function visibleWindow(
  scrollTop: number,
  viewportHeight: number,
  total: number,
  lineHeight: number
): IWindow {
  const { scrollHeight, maxScroll, virtualMax } = scrollRange(viewportHeight, total, lineHeight);
  const top = Math.min(Math.max(scrollTop, 0), maxScroll);
  const virtualTop = maxScroll > 0 ? (top * virtualMax) / maxScroll : 0;
  const first = Math.min(Math.floor(virtualTop / lineHeight), Math.max(total - 1, 0));
  const shift = first * lineHeight - virtualTop; // <= 0: part of the first row is above view
  const count = Math.max(
    Math.min(Math.ceil((viewportHeight - shift) / lineHeight), total - first),
    0
  );
  return { first, count, top: top + shift, scrollHeight };
}

/** The scrollTop that puts line `index` at the top of the view (or as near as it goes). */
export function scrollTopForLine(
  index: number,
  viewportHeight: number,
  total: number,
  lineHeight: number
): number {
  const { maxScroll, virtualMax } = scrollRange(viewportHeight, total, lineHeight);
  const virtualTop = Math.min(index * lineHeight, virtualMax);
  return virtualMax > 0 ? Math.round((virtualTop * maxScroll) / virtualMax) : 0;
}

/**
 * Where a streamed chunk goes given the byte offset consumed so far: append it, drop it as
 * already seen, or append it although bytes were skipped (said in the status line).
 */
export function chunkAction(consumed: number, chunk: ILogChunk): 'append' | 'skip' | 'gap' {
  if (chunk.next_offset <= consumed) {
    return 'skip';
  }
  return chunk.offset === consumed ? 'append' : chunk.offset > consumed ? 'gap' : 'append';
}
