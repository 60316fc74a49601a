/**
 * The cell tagged `parameters` (papermill convention): read its assignments so the submit
 * dialog can prefill them, and turn what a person typed back into JSON values.
 */

export const PARAMETERS_TAG = 'parameters';

export interface IParameter {
  name: string;
  /** The value's source text as written in the cell, e.g. `0.05` or `'adam'`. */
  text: string;
  /** Trailing comment, if any (shown as a hint). */
  comment?: string;
}

const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]+)?=(?!=)\s*(.*)$/;

/** Split `value  # comment` at the first # outside a string literal. */
function splitComment(rest: string): [string, string | undefined] {
  let quote: string | null = null;
  for (let i = 0; i < rest.length; i++) {
    const c = rest[i];
    if (quote) {
      if (c === '\\') {
        i++;
      } else if (c === quote) {
        quote = null;
      }
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#') {
      return [rest.slice(0, i).trim(), rest.slice(i + 1).trim() || undefined];
    }
  }
  return [rest.trim(), undefined];
}

/** Top-level `name = value` lines of a parameters cell, in order (later ones win). */
export function parseParameterCell(source: string): IParameter[] {
  const found = new Map<string, IParameter>();
  for (const raw of source.split('\n')) {
    if (/^\s/.test(raw)) {
      continue; // indented: inside a block, not a top-level parameter
    }
    const m = ASSIGNMENT.exec(raw.trimEnd());
    if (!m) {
      continue;
    }
    const [text, comment] = splitComment(m[2]);
    if (!text) {
      continue;
    }
    found.delete(m[1]);
    found.set(m[1], { name: m[1], text, comment });
  }
  return [...found.values()];
}

export type LiteralResult = { ok: true; value: unknown } | { ok: false };

/**
 * Parse a Python literal (numbers, strings, True/False/None, lists, tuples, dicts of those)
 * into its JSON value; like ast.literal_eval for the values parameters usually hold.
 */
export function parsePythonLiteral(text: string): LiteralResult {
  const p = new LiteralParser(text);
  try {
    const value = p.value();
    p.skip();
    if (!p.done()) {
      return { ok: false };
    }
    return { ok: true, value };
  } catch {
    return { ok: false };
  }
}

class LiteralParser {
  private i = 0;
  constructor(private readonly s: string) {}

  done(): boolean {
    return this.i >= this.s.length;
  }

  skip(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i])) {
      this.i++;
    }
  }

  private fail(): never {
    throw new Error(`not a literal at ${this.i}`);
  }

  value(): unknown {
    this.skip();
    const c = this.s[this.i];
    if (c === '[' || c === '(') {
      return this.sequence(c === '[' ? ']' : ')');
    }
    if (c === '{') {
      return this.dict();
    }
    if (c === '"' || c === "'") {
      return this.string();
    }
    const rest = this.s.slice(this.i);
    const word = /^(True|False|None)\b/.exec(rest);
    if (word) {
      this.i += word[0].length;
      return word[1] === 'True' ? true : word[1] === 'False' ? false : null;
    }
    const num = /^[-+]?(\d[\d_]*\.?[\d_]*(e[-+]?\d+)?|\.\d[\d_]*(e[-+]?\d+)?)/i.exec(rest);
    if (num) {
      this.i += num[0].length;
      const v = Number(num[0].replace(/_/g, ''));
      if (!Number.isFinite(v)) {
        this.fail();
      }
      return v;
    }
    return this.fail();
  }

  private sequence(close: string): unknown[] {
    this.i++;
    const items: unknown[] = [];
    for (;;) {
      this.skip();
      if (this.s[this.i] === close) {
        this.i++;
        return items;
      }
      items.push(this.value());
      this.skip();
      if (this.s[this.i] === ',') {
        this.i++;
      } else if (this.s[this.i] !== close) {
        this.fail();
      }
    }
  }

  private dict(): Record<string, unknown> {
    this.i++;
    const out: Record<string, unknown> = {};
    for (;;) {
      this.skip();
      if (this.s[this.i] === '}') {
        this.i++;
        return out;
      }
      const key = this.value();
      if (typeof key !== 'string' && typeof key !== 'number') {
        this.fail();
      }
      this.skip();
      if (this.s[this.i++] !== ':') {
        this.fail();
      }
      out[String(key)] = this.value();
      this.skip();
      if (this.s[this.i] === ',') {
        this.i++;
      } else if (this.s[this.i] !== '}') {
        this.fail();
      }
    }
  }

  private string(): string {
    const quote = this.s[this.i++];
    const escapes: Record<string, string> = {
      n: '\n',
      t: '\t',
      r: '\r',
      '\\': '\\',
      "'": "'",
      '"': '"',
      '0': '\0'
    };
    let out = '';
    while (this.i < this.s.length) {
      const c = this.s[this.i++];
      if (c === quote) {
        return out;
      }
      if (c === '\\') {
        const e = this.s[this.i++];
        out += escapes[e] ?? `\\${e}`;
      } else {
        out += c;
      }
    }
    return this.fail();
  }
}

/**
 * The value to submit for what a person typed: the literal when it is one, else the text
 * itself as a string (so `adam` means 'adam').
 */
export function parameterValue(text: string): unknown {
  const r = parsePythonLiteral(text);
  return r.ok ? r.value : text.trim();
}

/** Source text for a value the server reported (JSON) so it can be edited as Python. */
export function pythonLiteral(value: unknown): string {
  if (value === null || value === undefined) {
    return 'None';
  }
  if (value === true) {
    return 'True';
  }
  if (value === false) {
    return 'False';
  }
  if (typeof value === 'number') {
    return String(value);
  }
  if (typeof value === 'string') {
    const body = JSON.stringify(value).slice(1, -1).replace(/\\"/g, '"').replace(/'/g, "\\'");
    return `'${body}'`;
  }
  if (Array.isArray(value)) {
    return `[${value.map(pythonLiteral).join(', ')}]`;
  }
  if (typeof value === 'object') {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${pythonLiteral(k)}: ${pythonLiteral(v)}`)
      .join(', ')}}`;
  }
  return String(value);
}

/** What a parameter's default is, from its source text: the type its values must have. */
export type ParameterKind = 'bool' | 'int' | 'float' | 'str' | 'none' | 'list' | 'dict' | 'other';

export function parameterKind(defaultText: string): ParameterKind {
  const r = parsePythonLiteral(defaultText);
  if (!r.ok) {
    return 'other'; // an expression (1 / 3, np.float32(...)): nothing to check against
  }
  const v = r.value;
  if (v === null) {
    return 'none';
  }
  if (typeof v === 'boolean') {
    return 'bool';
  }
  if (typeof v === 'number') {
    // JSON has one number type: the source text says whether the notebook wrote a float.
    return /[.eE]/.test(defaultText) ? 'float' : 'int';
  }
  if (typeof v === 'string') {
    return 'str';
  }
  return Array.isArray(v) ? 'list' : 'dict';
}

const KIND_WORDS: Record<ParameterKind, string> = {
  bool: 'True or False',
  int: 'a whole number',
  float: 'a number',
  str: 'text',
  none: 'any value',
  list: 'a list, e.g. [1, 2]',
  dict: "a dict, e.g. {'a': 1}",
  other: 'any value'
};

/**
 * The value to submit for `text` typed for a parameter whose default is `defaultText`: as
 * `parameterValue`, except that text for a text parameter stays text (`5` means '5').
 */
export function parameterValueFor(defaultText: string, text: string): unknown {
  const value = parameterValue(text);
  return parameterKind(defaultText) === 'str' && typeof value !== 'string' ? text.trim() : value;
}

/**
 * Why `text` is not a value of the default's type (a typo in a float, a fraction for a
 * whole number), or null when it is one.
 */
export function parameterError(defaultText: string, text: string): string | null {
  const kind = parameterKind(defaultText);
  if (kind === 'other' || kind === 'none' || kind === 'str') {
    return null;
  }
  const r = parsePythonLiteral(text);
  const v = r.ok ? r.value : undefined;
  const fits =
    r.ok &&
    (kind === 'bool'
      ? typeof v === 'boolean'
      : kind === 'int'
        ? typeof v === 'number' && Number.isInteger(v) && !/[.eE]/.test(text)
        : kind === 'float'
          ? typeof v === 'number'
          : kind === 'list'
            ? Array.isArray(v)
            : typeof v === 'object' && v !== null && !Array.isArray(v));
  if (fits) {
    return null;
  }
  const shown = text.trim() ? `“${text.trim()}”` : 'an empty value';
  return `${shown} is not ${KIND_WORDS[kind]}, as the notebook's default ${defaultText} is.`;
}

/** Each parameter's type error, by name (a typo in a float, a fraction for an int). */
export function parameterErrors(
  parameters: IParameter[],
  values: Record<string, string>
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of parameters) {
    const error = parameterError(p.text, values[p.name] ?? p.text);
    if (error) {
      out[p.name] = error;
    }
  }
  return out;
}
