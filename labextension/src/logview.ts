/**
 * A virtualized log view in plain DOM: the lines live in a LogBuffer, and only the rows in
 * view (a few dozen) are rendered, each as text spans. No framework, so the benchmark can
 * load it on a bare page.
 */
import { parseAnsi, renderSpans, stripAnsi } from './ansi';
import { LogBuffer, scrollHeightFor, scrollTopForLine, visibleWindow } from './logbuffer';

export interface ILogViewOptions {
  lineHeight?: number;
  /** Called when following stops or starts because the person scrolled. */
  onFollowChange?: (follow: boolean) => void;
}

export class LogView {
  readonly node: HTMLDivElement;
  readonly buffer = new LogBuffer();
  private readonly spacer: HTMLDivElement;
  private readonly layer: HTMLDivElement;
  private readonly lineHeight: number;
  private frame = 0;
  private followTail = true;
  private programmaticScroll = false;
  private highlighted = -1;
  private lastWindow = '';

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

  get lineCount(): number {
    return this.buffer.length;
  }

  append(text: string): void {
    this.buffer.append(text);
    this.update();
  }

  clear(): void {
    this.buffer.clear();
    this.highlighted = -1;
    this.update();
  }

  /** Find `query` from the highlighted line on; scrolls there and returns the line, or -1. */
  find(query: string, forward = true): number {
    const from = this.highlighted >= 0 ? this.highlighted : forward ? -1 : this.buffer.length;
    const hit = this.buffer.find(query, from, forward, stripAnsi);
    if (hit >= 0) {
      this.follow = false;
      this.highlighted = hit;
      this.scrollToLine(Math.max(hit - 3, 0));
    }
    return hit;
  }

  scrollToLine(index: number): void {
    const top = scrollTopForLine(
      index,
      this.node.clientHeight,
      this.buffer.length,
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
    const total = this.buffer.length;
    const lh = this.lineHeight;
    const viewport = this.node.clientHeight;
    const height = `${scrollHeightFor(total, lh)}px`;
    if (this.spacer.style.height !== height) {
      this.spacer.style.height = height;
    }
    if (this.followTail) {
      this.setScrollTop(this.node.scrollHeight);
    }
    const w = visibleWindow(this.node.scrollTop, viewport, total, lh);
    // Lines already complete do not change, so an unchanged window need not be redrawn,
    // except for its last row, which may be a line still being written.
    const key = `${w.first}:${w.count}:${w.top}:${this.highlighted}`;
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
      row.className = 'jp-trainhub-logview-row';
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
    this.node.removeEventListener('scroll', this.onScroll);
    this.node.remove();
  }

  private renderRow(row: HTMLElement, index: number): void {
    row.textContent = '';
    row.classList.toggle('jp-mod-highlighted', index === this.highlighted);
    const num = document.createElement('span');
    num.className = 'jp-trainhub-logview-lineno';
    num.textContent = String(index + 1);
    row.appendChild(num);
    renderSpans(row, parseAnsi(this.buffer.line(index)));
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
