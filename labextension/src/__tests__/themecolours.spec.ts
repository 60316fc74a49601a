/**
 * Every colour of the extension's style sheets is a JupyterLab theme variable: no literal
 * colour (hex, rgb/hsl, a colour name, or a literal fallback inside var()) in any of them.
 */
import * as fs from 'fs';
import * as path from 'path';

const STYLE = path.resolve(__dirname, '..', '..', 'style');
const NAMED =
  /\b(white|black|red|green|blue|yellow|orange|gray|grey|pink|purple|silver|navy|teal)\b/i;
const COLOUR_PROPERTY =
  /^\s*(color|background(-color)?|border(-(top|right|bottom|left))?(-color)?|outline(-color)?|fill|stroke|box-shadow|--[\w-]+)\s*:\s*(.+?);?\s*$/;

function declarations(css: string): { line: number; property: string; value: string }[] {
  const out: { line: number; property: string; value: string }[] = [];
  css
    .replace(/\/\*[\s\S]*?\*\//g, m => m.replace(/[^\n]/g, ' '))
    .split('\n')
    .forEach((text, i) => {
      // one-line rules: `.x { color: var(--a); }`
      for (const part of text
        .replace(/^[^{]*\{/, '')
        .replace(/\}.*$/, '')
        .split(';')) {
        const m = COLOUR_PROPERTY.exec(part);
        if (m) {
          out.push({ line: i + 1, property: m[1], value: m[7] });
        }
      }
    });
  return out;
}

describe('style sheets', () => {
  const files = fs.readdirSync(STYLE).filter(f => f.endsWith('.css'));

  it('are found', () => {
    expect(files).toContain('base.css');
  });

  it.each(files)('%s names colours only by theme variables', file => {
    const bad = declarations(fs.readFileSync(path.join(STYLE, file), 'utf8')).filter(
      d =>
        /#[0-9a-f]{3,8}\b/i.test(d.value) ||
        /\b(rgba?|hsla?|hwb|lab|lch|oklch)\(/i.test(d.value) ||
        NAMED.test(d.value.replace(/var\([^)]*\)/g, '')) ||
        /var\(--[\w-]+\s*,\s*[^-v\s]/.test(d.value)
    );
    expect(bad.map(d => `${file}:${d.line} ${d.property}: ${d.value}`)).toEqual([]);
  });
});
