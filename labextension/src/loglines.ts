/**
 * Who wrote a log line: the job, or trainhub itself (the forms of trainhub/rank/logmarks.py).
 *
 * - `[trainhub] <message>`: the runner's own line, hidden unless asked for;
 * - `[trainhub] cell <n> started at <UTC ISO time>`: a cell starts, drawn as a separator;
 * - `[trainhub: <notice>]`: output was cut (log limits), always shown;
 * - anything else is the job's output.
 */

export type LineKind = 'output' | 'internal' | 'cell' | 'notice';

export const INTERNAL_PREFIX = '[trainhub] ';
const NOTICE_PREFIX = '[trainhub: ';
const OPEN_BRACKET = 91; // '['
const CELL = /^\[trainhub\] cell (\d+) started at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)$/;

export interface ICellMarker {
  /** The cell's number in the notebook, from 1. */
  cell: number;
  /** When it started, epoch milliseconds. */
  time: number;
}

/**
 * A line as a terminal leaves it after a progress bar's redraws ("\r" + bar, many times):
 * from its last carriage return on (one that ends the line, or comes before a "\n", is kept,
 * since the next text redraws over it). The rank's copier already keeps few redraws in the
 * stored log (trainhub/rank/redraws.py, whose latest_redraw is this rule for the notebook
 * widget); this keeps the view's line one updating line.
 */
export function latestRedraw(line: string): string {
  const cr = line.length > 1 ? line.lastIndexOf('\r', line.length - 2) : -1;
  return cr >= 0 ? line.slice(cr + 1) : line;
}

export function parseCellMarker(line: string): ICellMarker | null {
  const m = CELL.exec(line.endsWith('\r') ? line.slice(0, -1) : line);
  if (!m) {
    return null;
  }
  const time = Date.parse(m[2]);
  return Number.isFinite(time) ? { cell: Number(m[1]), time } : null;
}

/** The kind of one line (a cheap test first: most lines do not start with '['). */
export function lineKind(line: string): LineKind {
  if (line.charCodeAt(0) !== OPEN_BRACKET) {
    return 'output';
  }
  if (line.startsWith(INTERNAL_PREFIX)) {
    return parseCellMarker(line) ? 'cell' : 'internal';
  }
  return line.startsWith(NOTICE_PREFIX) ? 'notice' : 'output';
}

/** "cell 3 · 12:04:31" in local time (or in `timeZone`). */
export function cellSeparator(marker: ICellMarker, timeZone?: string): string {
  const clock = new Date(marker.time).toLocaleTimeString('en-GB', {
    hour12: false,
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZone
  });
  return `cell ${marker.cell} · ${clock}`;
}
