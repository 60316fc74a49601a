import { cssColor, parseAnsi, renderSpans, stripAnsi } from '../ansi';

describe('parseAnsi', () => {
  it('keeps plain text as one unstyled span', () => {
    expect(parseAnsi('epoch 1 loss 0.25')).toEqual([{ text: 'epoch 1 loss 0.25', style: {} }]);
  });

  it('splits basic and bright colours, bold and reset', () => {
    const spans = parseAnsi('\x1b[1;31mERROR\x1b[0m done \x1b[92mok\x1b[39m.');
    expect(spans).toEqual([
      { text: 'ERROR', style: { bold: true, fg: 1 } },
      { text: ' done ', style: {} },
      { text: 'ok', style: { fg: 10 } },
      { text: '.', style: {} }
    ]);
  });

  it('reads 256-colour and 24-bit colours, foreground and background', () => {
    const [a, b] = parseAnsi('\x1b[38;5;208mA\x1b[48;2;10;20;30mB');
    expect(a.style).toEqual({ fg: 208 });
    expect(b.style).toEqual({ fg: 208, bg: [10, 20, 30] });
    expect(cssColor(208)).toBe('rgb(255, 135, 0)');
    expect(cssColor(244)).toBe('rgb(128, 128, 128)');
  });

  it('ignores out-of-range colour numbers instead of emitting them', () => {
    expect(parseAnsi('\x1b[38;2;999;0;0mX')[0].style).toEqual({});
  });

  it('drops cursor movement, OSC titles and control characters', () => {
    expect(stripAnsi('\x1b[2K\x1b[1Gstep\x07 \x1b]0;title\x07 5\x00')).toBe('step  5');
  });

  it('shows what a terminal shows after carriage returns', () => {
    expect(stripAnsi(' 10%|█\r 50%|█████\r100%|██████████')).toBe('100%|██████████');
    expect(stripAnsi('done\r')).toBe('done');
  });
});

describe('renderSpans', () => {
  it('writes log text as text, never as markup', () => {
    const row = document.createElement('div');
    renderSpans(row, parseAnsi('\x1b[31m<img src=x onerror=alert(1)>\x1b[0m <b>bold</b>'));
    expect(row.querySelector('img')).toBeNull();
    expect(row.querySelector('b')).toBeNull();
    expect(row.textContent).toBe('<img src=x onerror=alert(1)> <b>bold</b>');
    const span = row.querySelector('span')!;
    expect(span.className).toBe('jp-trainhub-ansi-fg-1');
  });

  it('uses inline colours only for computed rgb values', () => {
    const row = document.createElement('div');
    renderSpans(row, parseAnsi('\x1b[38;2;1;2;3;4mx'));
    const span = row.querySelector('span')!;
    expect(span.style.color).toBe('rgb(1, 2, 3)');
    expect(span.classList.contains('jp-trainhub-ansi-underline')).toBe(true);
  });

  it('swaps colours for inverse video', () => {
    const row = document.createElement('div');
    renderSpans(row, parseAnsi('\x1b[7;32mx'));
    const span = row.querySelector('span')!;
    expect(span.classList.contains('jp-trainhub-ansi-bg-2')).toBe(true);
    expect(span.classList.contains('jp-trainhub-ansi-inverse')).toBe(true);
  });
});
