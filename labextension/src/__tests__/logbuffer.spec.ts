import {
  chunkAction,
  LogBuffer,
  MAX_SCROLL_PX,
  scrollHeightFor,
  scrollTopForLine,
  visibleWindow
} from '../logbuffer';

describe('LogBuffer', () => {
  it('completes a line split across appends', () => {
    const b = new LogBuffer();
    b.append('first\nsec');
    expect(b.length).toBe(2);
    expect(b.line(1)).toBe('sec');
    b.append('ond\nthird\n');
    expect(b.length).toBe(3);
    expect([0, 1, 2].map(i => b.line(i))).toEqual(['first', 'second', 'third']);
  });

  it('keeps a redrawn progress bar as one updating line, streamed in any pieces', () => {
    const b = new LogBuffer();
    b.append('epoch 1\n\r  0%|   |');
    expect(b.length).toBe(2);
    expect(b.line(1)).toBe('  0%|   |');
    b.append('\r 50%|#  |\r');
    expect(b.length).toBe(2);
    expect(b.line(1)).toBe(' 50%|#  |\r'); // the next text redraws over it
    b.append('100%|###|');
    expect(b.line(1)).toBe('100%|###|');
    b.append('\n[trainhub] finished\nafter\r\n');
    expect([1, 2, 3].map(i => b.line(i))).toEqual(['100%|###|', '[trainhub] finished', 'after\r']);
    expect(b.length).toBe(4);
    expect(b.internal).toEqual([2]);
    expect(b.find('50%', 0)).toBe(-1); // a redraw that was replaced is not found any more
    expect(b.find('100%', 0)).toBe(1);
  });

  it('holds a million lines appended in chunks', () => {
    const b = new LogBuffer();
    const chunk = Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n') + '\n';
    for (let i = 0; i < 1000; i++) {
      b.append(chunk);
    }
    expect(b.length).toBe(1_000_000);
    expect(b.line(999_999)).toBe('line 999');
  });

  it('finds forward and backward, wrapping, case-insensitively', () => {
    const b = new LogBuffer();
    b.append('alpha\nBeta\ngamma\nbeta again\n');
    expect(b.find('beta', -1)).toBe(1);
    expect(b.find('beta', 1)).toBe(3);
    expect(b.find('beta', 3)).toBe(1);
    expect(b.find('beta', 1, false)).toBe(3);
    expect(b.find('nope', 0)).toBe(-1);
    expect(b.find('', 0)).toBe(-1);
  });
});

describe('visibleWindow', () => {
  it('renders only what fits in the viewport', () => {
    const w = visibleWindow(0, 180, 1000, 18);
    expect(w).toEqual({ first: 0, count: 10, top: 0, scrollHeight: 18000 });
  });

  it('offsets a partly scrolled first row', () => {
    const w = visibleWindow(27, 180, 1000, 18);
    expect(w.first).toBe(1);
    expect(w.top).toBe(18);
    expect(w.count).toBe(11);
  });

  it('stops at the last line', () => {
    const w = visibleWindow(18000, 180, 1000, 18);
    expect(w.first + w.count).toBe(1000);
    expect(w.first).toBe(990);
  });

  it('scales the scroll range for huge logs and still reaches both ends', () => {
    const total = 1_000_000;
    const lh = 18;
    expect(scrollHeightFor(total, lh)).toBe(MAX_SCROLL_PX);
    const vh = 600;
    expect(visibleWindow(0, vh, total, lh).first).toBe(0);
    const end = visibleWindow(MAX_SCROLL_PX - vh, vh, total, lh);
    expect(end.first + end.count).toBe(total);
    expect(end.count).toBeLessThanOrEqual(Math.ceil(vh / lh) + 1);
    const mid = visibleWindow((MAX_SCROLL_PX - vh) / 2, vh, total, lh);
    expect(Math.abs(mid.first - (total - vh / lh) / 2)).toBeLessThan(2);
  });

  it('scrollTopForLine is the inverse of visibleWindow', () => {
    for (const total of [50, 5000, 2_000_000]) {
      for (const line of [0, Math.floor(total / 3), total - 40]) {
        const top = scrollTopForLine(line, 600, total, 18);
        const w = visibleWindow(top, 600, total, 18);
        expect(Math.abs(w.first - line)).toBeLessThanOrEqual(1);
      }
    }
  });
});

describe('chunkAction', () => {
  it('appends the expected chunk, skips repeats and notes gaps', () => {
    expect(chunkAction(0, { text: 'a', offset: 0, next_offset: 1 })).toBe('append');
    expect(chunkAction(10, { text: 'a', offset: 5, next_offset: 10 })).toBe('skip');
    expect(chunkAction(10, { text: 'a', offset: 20, next_offset: 21 })).toBe('gap');
  });
});
