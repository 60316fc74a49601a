/**
 * ANSI escape sequences -> styled text spans, parsed by anser (the maintained parser behind
 * nteract's ansi-to-react); only SGR (colour, bold, ...) is interpreted, cursor movement, OSC
 * titles and other controls are dropped. The result is plain data: the view
 * writes span text with textContent and colours as validated numbers, never as markup.
 */
import Anser from 'anser';
import { latestRedraw } from './loglines';

export interface IAnsiStyle {
  /** 0-255 palette index, or [r, g, b] for 24-bit colour. */
  fg?: number | [number, number, number];
  bg?: number | [number, number, number];
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
  inverse?: boolean;
}

export interface IAnsiSpan {
  text: string;
  style: IAnsiStyle;
  /** A search match on this text (see logsearch.ts). */
  mark?: 'match' | 'current';
}

// anser reads CSI sequences but keeps OSC ones (window titles) and bare control characters as
// text: neither is printable. Tab stays.
// eslint-disable-next-line no-control-regex
const OSC = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;
const NAMES = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];

function byte(n: number | undefined): number | undefined {
  return n !== undefined && Number.isInteger(n) && n >= 0 && n <= 255 ? n : undefined;
}

/** anser's colour (`ansi-red`, `ansi-bright-red`, `ansi-palette-208`, `ansi-truecolor`). */
function colour(name: string | null, truecolor: string | null): IAnsiStyle['fg'] {
  if (!name) {
    return undefined;
  }
  if (name === 'ansi-truecolor') {
    const [r, g, b] = (truecolor ?? '').split(',').map(v => byte(Number(v)));
    return r !== undefined && g !== undefined && b !== undefined ? [r, g, b] : undefined;
  }
  const palette = /^ansi-palette-(\d+)$/.exec(name);
  if (palette) {
    return byte(Number(palette[1]));
  }
  const named = /^ansi-(bright-)?([a-z]+)$/.exec(name);
  const index = named ? NAMES.indexOf(named[2]) : -1;
  return index < 0 ? undefined : index + (named![1] ? 8 : 0);
}

/**
 * One anser chunk's style. anser applies inverse video itself, filling a missing colour with
 * white (text) or black (background); that is undone here, so the theme's colours stand in
 * for the missing ones (see the inverse CSS class).
 */
function styleOf(chunk: Anser.AnserJsonEntry & { isInverted?: boolean }): IAnsiStyle {
  let fg = colour(chunk.fg, chunk.fg_truecolor);
  let bg = colour(chunk.bg, chunk.bg_truecolor);
  const style: IAnsiStyle = {};
  if (chunk.isInverted) {
    [fg, bg] = [bg === 7 ? undefined : bg, fg === 0 ? undefined : fg];
    style.inverse = true;
  }
  if (fg !== undefined) {
    style.fg = fg;
  }
  if (bg !== undefined) {
    style.bg = bg;
  }
  for (const flag of ['bold', 'dim', 'italic', 'underline'] as const) {
    if (chunk.decorations.includes(flag)) {
      style[flag] = true;
    }
  }
  return style;
}

/**
 * Split one log line into styled spans. A carriage return shows what a terminal shows:
 * the text after the last one (progress bars redraw a line that way).
 */
export function parseAnsi(line: string): IAnsiSpan[] {
  line = latestRedraw(line);
  if (line.endsWith('\r')) {
    line = line.slice(0, -1);
  }
  if (line.indexOf('\x1b') < 0) {
    const text = line.replace(CONTROL, '');
    return text ? [{ text, style: {} }] : [];
  }
  const chunks = Anser.ansiToJson(line.replace(OSC, ''), {
    json: true,
    remove_empty: true,
    use_classes: true
  });
  const spans: IAnsiSpan[] = [];
  for (const chunk of chunks) {
    const text = chunk.content.replace(CONTROL, '');
    if (text) {
      spans.push({ text, style: styleOf(chunk) });
    }
  }
  return spans;
}

/** Text with every escape sequence removed (for search). */
export function stripAnsi(line: string): string {
  if (line.indexOf('\x1b') < 0 && line.indexOf('\r') < 0) {
    return line.replace(CONTROL, ''); // the common case, without building spans
  }
  return parseAnsi(line)
    .map(s => s.text)
    .join('');
}

const CUBE = [0, 95, 135, 175, 215, 255];

/** CSS colour of a palette index >= 16 or an RGB triple; 0-15 use theme classes instead. */
export function cssColor(c: number | [number, number, number]): string {
  if (Array.isArray(c)) {
    return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
  }
  if (c >= 232) {
    const v = 8 + (c - 232) * 10;
    return `rgb(${v}, ${v}, ${v})`;
  }
  const n = c - 16;
  return `rgb(${CUBE[Math.floor(n / 36) % 6]}, ${CUBE[Math.floor(n / 6) % 6]}, ${CUBE[n % 6]})`;
}

function isPlain(s: IAnsiStyle): boolean {
  return (
    s.fg === undefined &&
    s.bg === undefined &&
    !s.bold &&
    !s.dim &&
    !s.italic &&
    !s.underline &&
    !s.inverse
  );
}

function setColor(el: HTMLElement, kind: 'fg' | 'bg', value: IAnsiStyle['fg']): void {
  if (value === undefined) {
    return;
  }
  if (typeof value === 'number' && value < 16) {
    el.classList.add(`jp-trainhub-ansi-${kind}-${value}`);
  } else if (kind === 'fg') {
    el.style.color = cssColor(value);
  } else {
    el.style.backgroundColor = cssColor(value);
  }
}

/** Render spans into `parent` as text nodes and <span>s (textContent only). */
export function renderSpans(parent: HTMLElement, spans: IAnsiSpan[]): void {
  for (const span of spans) {
    const s = span.style;
    if (isPlain(s) && !span.mark) {
      parent.appendChild(document.createTextNode(span.text));
      continue;
    }
    const el = document.createElement('span');
    el.textContent = span.text;
    if (span.mark) {
      el.classList.add('jp-trainhub-log-match');
      el.classList.toggle('jp-mod-current', span.mark === 'current');
    }
    // Inverse swaps the colours; missing ones fall back to the theme's (see the CSS class).
    setColor(el, 'fg', s.inverse ? s.bg : s.fg);
    setColor(el, 'bg', s.inverse ? s.fg : s.bg);
    for (const flag of ['bold', 'dim', 'italic', 'underline', 'inverse'] as const) {
      if (s[flag]) {
        el.classList.add(`jp-trainhub-ansi-${flag}`);
      }
    }
    parent.appendChild(el);
  }
}
