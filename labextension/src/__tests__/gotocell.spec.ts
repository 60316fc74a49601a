import { lineRange } from '../gotocell';

describe('lineRange', () => {
  it('selects the whole failing line, 1-based as tracebacks count', () => {
    expect(lineRange("x = 1\nraise KeyError('validation')", 2)).toEqual({
      start: { line: 1, column: 0 },
      end: { line: 1, column: 28 }
    });
  });

  it('selects nothing for an unknown or missing line', () => {
    expect(lineRange('x = 1', 3)).toBeNull();
    expect(lineRange('x = 1', null)).toBeNull();
    expect(lineRange('x = 1', 0)).toBeNull();
  });
});
