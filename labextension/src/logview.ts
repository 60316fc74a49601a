/**
 * A virtualized log view in plain DOM: the lines live in LogBuffers, the view shows rows
 * over them (logrows.ts: one rank, or all ranks merged; trainhub's own lines hidden unless
 * asked for), and only the rows in view (a few dozen) are rendered, each as text spans. Cell
 * markers are drawn as separators ("cell 3 · 12:04:31"); a search marks every occurrence in
 * the rows drawn and counts them all, a slice of rows at a time. No framework, so the
 * benchmark can load it on a bare page.
 */
import { parseAnsi, renderSpans, stripAnsi } from './ansi';
import { LogBuffer, scrollHeightFor, scrollTopForLine, visibleWindow } from './logbuffer';
import { cellSeparator, parseCellMarker } from './loglines';
import { ILogRows, RankRows } from './logrows';
import { SearchResults, markSpans, matchRanges } from './logsearch';

export interface ILogViewOptions {
  lineHeight?: number;
  /** Called when following stops or starts because the person scrolled. */
  onFollowChange?: (follow: boolean) => void;
  /** Called as a search counts and steps: "k of n" ('' without a query). */
  onSearchChange?: (label: string) => void;
}

const SEARCH_SLICE = 100_000;
const RESCAN_MS = 1000;

export class LogView {
  readonly node: HTMLDivElement;
  /** The log `append` writes to (a tab showing several ranks sets `rows` over its own). */
  readonly buffer = new LogBuffer();
  private rowsShown: ILogRows = new RankRows(this.buffer);
  private readonly spacer: HTMLDivElement;
  private readonly layer: HTMLDivElement;
  private readonly lineHeight: number;
  private frame = 0;
  private followTail = true;
  private programmaticScroll = false;
  private highlighted = -1;
  private lastWindow = '';
  private results: SearchResults | null = null;
  private searching: ReturnType<typeof setTimeout> | null = null;
  private searchDone = true;

  constructor(private readonly options: ILogViewOptions = {}) {
    this.lineHeight = options.lineHeight ?? 18;
    this.node = document.createElement('div');
    this.node.className = 'jp-trainhub-logview';
    this.node.tabIndex = 0;
    this.spacer = document.createElement('div');
    this.spacer.className = 'jp-trainhub-logview-spacer';
    this.layer = document.createElement('div');
    this.layer.className = 'jp-trainhub-logview-layer';
    this.node.append(this.spacer, this.layer);
    this.node.addEventListener('scroll', this.onScroll, { passive: true });
  }

  get follow(): boolean {
    return this.followTail;
  }

  set follow(value: boolean) {
    if (value !== this.followTail) {
      this.followTail = value;
      this.options.onFollowChange?.(value);
    }
    if (value) {
      this.update();
    }
  }

  /** Rows shown. */
  get lineCount(): number {
    return this.rowsShown.length;
  }

  get rows(): ILogRows {
    return this.rowsShown;
  }

  /** Show other rows (another rank, all ranks, trainhub's lines or not); a search restarts. */
  set rows(rows: ILogRows) {
    this.rowsShown = rows;
    this.rowsReplaced();
  }

  append(text: string): void {
    this.buffer.append(text);
    this.update();
  }

  clear(): void {
    this.buffer.clear();
    this.rowsReplaced();
  }

  /** Other rows stand where the old ones were: no row highlighted, all drawn again, a search
   * run again over them. */
  private rowsReplaced(): void {
    this.highlighted = -1;
    this.lastWindow = '';
    if (this.results) {
      this.search(this.results.query);
    }
    this.update();
  }

  /** The row's text as shown (no escape codes; a cell marker as its separator). */
  shownText(row: number): string {
    const text = this.rowsShown.text(row);
    if (text.charCodeAt(0) === 91) {
      const marker = parseCellMarker(text);
      if (marker) {
        return cellSeparator(marker);
      }
    }
    return stripAnsi(text);
  }

  /** Find `query` from the highlighted row on; scrolls there and returns the row, or -1. */
  find(query: string, forward = true): number {
    const n = this.rowsShown.length;
    if (!query || !n) {
      return -1;
    }
    const q = query.toLowerCase();
    const from = this.highlighted >= 0 ? this.highlighted : forward ? -1 : n;
    for (let k = 1; k <= n; k++) {
      const i = (((forward ? from + k : from - k) % n) + n) % n;
      if (this.shownText(i).toLowerCase().includes(q)) {
        this.reveal(i);
        return i;
      }
    }
    return -1;
  }

  /**
   * Count and mark every occurrence of `query` (an empty one ends the search); the count
   * goes to onSearchChange as it grows, and the first occurrence in view or below becomes
   * the current one.
   */
  search(query: string): void {
    this.stopSearch();
    this.results = query ? new SearchResults(query) : null;
    this.lastWindow = '';
    if (!this.results) {
      this.highlighted = -1;
      this.options.onSearchChange?.('');
      this.update();
      return;
    }
    this.searchDone = false;
    this.scanSlice();
  }

  /** Step to the next (or previous) occurrence; its row, or -1. */
  searchStep(forward = true): number {
    const results = this.results;
    if (!results) {
      return -1;
    }
    const row = results.step(forward, this.firstVisibleRow());
    if (row >= 0) {
      this.reveal(row);
    }
    this.reportSearch();
    return row;
  }

  /** "k of n" of the search now ('' without one). */
  get searchLabel(): string {
    return this.results ? this.results.label(this.searchDone) : '';
  }

  scrollToLine(index: number): void {
    const top = scrollTopForLine(
      index,
      this.node.clientHeight,
      this.rowsShown.length,
      this.lineHeight
    );
    this.setScrollTop(top);
    this.render();
  }

  /** Schedule a render on the next frame (coalesces bursts of appended text). */
  update(): void {
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.render();
      });
    }
  }

  /** Render the rows in view now. */
  render(): void {
    const total = this.rowsShown.length;
    const lh = this.lineHeight;
    const viewport = this.node.clientHeight;
    const height = `${scrollHeightFor(total, lh)}px`;
    if (this.spacer.style.height !== height) {
      this.spacer.style.height = height;
    }
    if (this.followTail) {
      this.setScrollTop(this.node.scrollHeight);
    }
    this.searchNewRows(total);
    const w = visibleWindow(this.node.scrollTop, viewport, total, lh);
    // Rows already complete do not change, so an unchanged window need not be redrawn,
    // except for its last row, which may be a line still being written.
    const key = `${w.first}:${w.count}:${w.top}:${this.highlighted}:${this.results?.current}`;
    const rows = this.layer.children;
    if (key === this.lastWindow && w.count > 0) {
      this.renderRow(rows[w.count - 1] as HTMLElement, w.first + w.count - 1);
      return;
    }
    this.lastWindow = key;
    this.layer.style.transform = `translateY(${w.top}px)`;
    while (rows.length > w.count) {
      this.layer.lastChild!.remove();
    }
    while (rows.length < w.count) {
      const row = document.createElement('div');
      row.style.height = `${lh}px`;
      row.style.lineHeight = `${lh}px`;
      this.layer.appendChild(row);
    }
    for (let i = 0; i < w.count; i++) {
      this.renderRow(rows[i] as HTMLElement, w.first + i);
    }
  }

  dispose(): void {
    cancelAnimationFrame(this.frame);
    this.stopSearch();
    this.node.removeEventListener('scroll', this.onScroll);
    this.node.remove();
  }

  private renderRow(row: HTMLElement, index: number): void {
    const rows = this.rowsShown;
    const kind = rows.kind(index);
    row.textContent = '';
    row.className =
      'jp-trainhub-logview-row' +
      (kind === 'output' ? '' : ` jp-trainhub-log-${kind}`) +
      (index === this.highlighted ? ' jp-mod-highlighted' : '');
    const num = document.createElement('span');
    num.className = 'jp-trainhub-logview-lineno';
    num.textContent = String(rows.lineNumber(index));
    row.appendChild(num);
    const rank = rows.rank(index);
    if (rank !== null) {
      const badge = document.createElement('span');
      // The rank's colour marks the edge; the text keeps the theme's font colour.
      badge.className = `jp-trainhub-log-rank jp-trainhub-c${rank % 10}`;
      const name = document.createElement('span');
      name.textContent = `r${rank}`;
      badge.appendChild(name);
      row.appendChild(badge);
    }
    const label = kind === 'cell' ? document.createElement('span') : row;
    if (kind === 'cell') {
      label.className = 'jp-trainhub-log-cell-label';
      row.appendChild(label);
    }
    let spans =
      kind === 'cell' ? [{ text: this.shownText(index), style: {} }] : parseAnsi(rows.text(index));
    const results = this.results;
    if (results) {
      const ranges = matchRanges(spans.map(s => s.text).join(''), results.pattern);
      const first = results.firstIn(index);
      const current = results.rows[results.current] === index ? results.current - first : -1;
      spans = markSpans(spans, ranges, current);
    }
    renderSpans(label, spans);
  }

  private firstVisibleRow(): number {
    const w = visibleWindow(
      this.node.scrollTop,
      this.node.clientHeight,
      this.rowsShown.length,
      this.lineHeight
    );
    return w.first;
  }

  private reveal(row: number): void {
    this.follow = false;
    this.highlighted = row;
    this.scrollToLine(Math.max(row - 3, 0));
  }

  private scanSlice = (): void => {
    this.searching = null;
    const results = this.results;
    if (!results) {
      return;
    }
    const shown = { length: this.rowsShown.length, text: (i: number) => this.shownText(i) };
    this.searchDone = results.scan(shown, SEARCH_SLICE);
    if (results.current >= results.count) {
      results.current = results.count - 1;
    }
    if (results.current < 0 && results.count) {
      this.searchStep(true);
    } else {
      this.reportSearch();
      this.lastWindow = '';
      this.update();
    }
    if (!this.searchDone) {
      this.searching = setTimeout(this.scanSlice, 0);
    }
  };

  /** Rows arrived: a search goes on over them (or starts again where rows moved). */
  private searchNewRows(total: number): void {
    const results = this.results;
    if (!results || this.searching || results.scanned === total) {
      return;
    }
    if (this.rowsShown.appendOnly) {
      this.searching = setTimeout(this.scanSlice, 0);
    } else {
      // Rows moved (merged ranks): count again, staying at the same occurrence number.
      this.searching = setTimeout(() => {
        const again = new SearchResults(results.query);
        again.current = results.current;
        this.results = again;
        this.scanSlice();
      }, RESCAN_MS);
    }
  }

  private stopSearch(): void {
    if (this.searching) {
      clearTimeout(this.searching);
      this.searching = null;
    }
  }

  private reportSearch(): void {
    this.options.onSearchChange?.(this.searchLabel);
  }

  private setScrollTop(top: number): void {
    if (Math.abs(this.node.scrollTop - top) >= 1) {
      this.programmaticScroll = true;
      this.node.scrollTop = top;
    }
  }

  private onScroll = (): void => {
    if (this.programmaticScroll) {
      this.programmaticScroll = false;
    } else {
      const atBottom =
        this.node.scrollTop + this.node.clientHeight >= this.node.scrollHeight - this.lineHeight;
      this.follow = atBottom;
    }
    this.update();
  };
}
