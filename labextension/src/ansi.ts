/**
 * ANSI escape sequences -> styled text spans. Only SGR (colour, bold, ...) is interpreted;
 * cursor movement, OSC titles and other controls are dropped. The result is plain data: the
 * view writes span text with textContent and colours as validated numbers, never as markup.
 */

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

// CSI ... final byte | OSC ... BEL/ST | other two-byte escapes
// eslint-disable-next-line no-control-regex
const ESCAPE = /\x1b\[([0-9;:?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?/g;
// Control characters other than tab are not printable text.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;

function byte(n: number | undefined): number | undefined {
  return n !== undefined && Number.isInteger(n) && n >= 0 && n <= 255 ? n : undefined;
}

/** Apply one SGR parameter list to a style (returns a new style). */
export function applySgr(style: IAnsiStyle, params: number[]): IAnsiStyle {
  const next: IAnsiStyle = { ...style };
  if (params.length === 0) {
    return {};
  }
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (p === 0) {
      for (const key of Object.keys(next)) {
        delete next[key as keyof IAnsiStyle];
      }
    } else if (p === 1) {
      next.bold = true;
    } else if (p === 2) {
      next.dim = true;
    } else if (p === 3) {
      next.italic = true;
    } else if (p === 4) {
      next.underline = true;
    } else if (p === 7) {
      next.inverse = true;
    } else if (p === 22) {
      delete next.bold;
      delete next.dim;
    } else if (p === 23) {
      delete next.italic;
    } else if (p === 24) {
      delete next.underline;
    } else if (p === 27) {
      delete next.inverse;
    } else if (p >= 30 && p <= 37) {
      next.fg = p - 30;
    } else if (p >= 90 && p <= 97) {
      next.fg = p - 90 + 8;
    } else if (p === 39) {
      delete next.fg;
    } else if (p >= 40 && p <= 47) {
      next.bg = p - 40;
    } else if (p >= 100 && p <= 107) {
      next.bg = p - 100 + 8;
    } else if (p === 49) {
      delete next.bg;
    } else if (p === 38 || p === 48) {
      const key = p === 38 ? 'fg' : 'bg';
      if (params[i + 1] === 5) {
        const n = byte(params[i + 2]);
        if (n !== undefined) {
          next[key] = n;
        }
        i += 2;
      } else if (params[i + 1] === 2) {
        const [r, g, b] = [byte(params[i + 2]), byte(params[i + 3]), byte(params[i + 4])];
        if (r !== undefined && g !== undefined && b !== undefined) {
          next[key] = [r, g, b];
        }
        i += 4;
      }
    }
  }
  return next;
}

/**
 * Split one log line into styled spans. A carriage return shows what a terminal shows:
 * the text after the last one (progress bars redraw a line that way).
 */
export function parseAnsi(line: string, initial: IAnsiStyle = {}): IAnsiSpan[] {
  const cr = line.lastIndexOf('\r', line.length - 2);
  if (cr >= 0) {
    line = line.slice(cr + 1);
  }
  if (line.endsWith('\r')) {
    line = line.slice(0, -1);
  }
  const spans: IAnsiSpan[] = [];
  let style = initial;
  let last = 0;
  const push = (text: string) => {
    text = text.replace(CONTROL, '');
    if (!text) {
      return;
    }
    const prev = spans[spans.length - 1];
    if (prev && prev.style === style) {
      prev.text += text;
    } else {
      spans.push({ text, style });
    }
  };
  if (line.indexOf('\x1b') < 0) {
    push(line);
    return spans;
  }
  ESCAPE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = ESCAPE.exec(line)) !== null) {
    push(line.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] === 'm') {
      const params = m[1] ? m[1].split(/[;:]/).map(s => (s === '' ? 0 : parseInt(s, 10))) : [];
      style = applySgr(style, params);
    }
  }
  push(line.slice(last));
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
