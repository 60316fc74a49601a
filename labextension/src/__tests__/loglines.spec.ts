import { LogBuffer } from '../logbuffer';
import { cellSeparator, latestRedraw, lineKind, parseCellMarker } from '../loglines';
import { MergedRows, RankRows, lineOfRow } from '../logrows';
import { SearchResults, compileQuery, markSpans, matchRanges } from '../logsearch';

// The lines trainhub/rank/logmarks.py writes (tests/unit/test_logmarks.py checks the same).
const marker = (cell: number, time: string) => `[trainhub] cell ${cell} started at ${time}`;

describe('line classification', () => {
  it("tells trainhub's own lines, cell markers and notices from the job's output", () => {
    expect(lineKind('[trainhub] rank 0/2, attempt 0: running notebook nb.ipynb')).toBe('internal');
    expect(lineKind('[trainhub] finished')).toBe('internal');
    expect(lineKind(marker(3, '2026-12-02T12:04:31.250Z'))).toBe('cell');
    expect(lineKind('[trainhub: log truncated at 64 KiB; further output dropped]')).toBe('notice');
    expect(lineKind('epoch 1 [trainhub] not at the start')).toBe('output');
    expect(lineKind('[trainhubx] look-alike')).toBe('output');
    expect(lineKind('[rank0]: torch says')).toBe('output');
    expect(lineKind('')).toBe('output');
  });

  it('reads the cell and the time of a marker, and draws it as "cell 3 · 12:04:31"', () => {
    const m = parseCellMarker(marker(3, '2026-12-02T12:04:31.250Z'));
    expect(m).toEqual({ cell: 3, time: Date.UTC(2026, 11, 2, 12, 4, 31, 250) });
    expect(cellSeparator(m!, 'UTC')).toBe('cell 3 · 12:04:31');
    expect(parseCellMarker('[trainhub] cell 3 started')).toBeNull();
    expect(parseCellMarker(`x${marker(3, '2026-12-02T12:04:31.250Z')}`)).toBeNull();
  });
});

function buffer(lines: string[]): LogBuffer {
  const b = new LogBuffer();
  b.append(lines.join('\n') + '\n');
  return b;
}

describe('progress bar redraws', () => {
  it('keep what a terminal leaves: the text after the last carriage return', () => {
    expect(latestRedraw('\r 10%|#\r 50%|#####\r100%|##########')).toBe('100%|##########');
    expect(latestRedraw('\r 10%|#\r 50%|#####\r')).toBe(' 50%|#####\r');
    expect(latestRedraw('plain line')).toBe('plain line');
    expect(latestRedraw('crlf line\r')).toBe('crlf line\r');
    expect(latestRedraw('\r')).toBe('\r');
    expect(latestRedraw('\x1b[32m 10%\x1b[0m\r\x1b[32m 90%\x1b[0m')).toBe('\x1b[32m 90%\x1b[0m');
  });
});

describe('rows of one rank', () => {
  const lines = [
    '[trainhub] rank 0/2, attempt 0: running notebook nb.ipynb',
    marker(1, '2026-12-02T12:00:00.000Z'),
    'hello',
    '[trainhub] image saved: outputs/rank0-cell1-0.png',
    'world',
    '[trainhub] finished'
  ];

  it("leaves trainhub's own lines out unless asked, keeping cell markers and line numbers", () => {
    const rows = new RankRows(buffer(lines));
    expect(rows.length).toBe(3);
    expect([0, 1, 2].map(i => [rows.kind(i), rows.text(i), rows.lineNumber(i)])).toEqual([
      ['cell', lines[1], 2],
      ['output', 'hello', 3],
      ['output', 'world', 5]
    ]);
    const all = new RankRows(rows.buffer, true);
    expect(all.length).toBe(6);
    expect(all.text(3)).toBe(lines[3]);
  });

  it('maps rows to lines past runs of hidden lines', () => {
    expect(lineOfRow([], 5)).toBe(5);
    expect(lineOfRow([0, 1, 2], 0)).toBe(3);
    expect(lineOfRow([2, 3, 7], 2)).toBe(4);
    expect(lineOfRow([2, 3, 7], 5)).toBe(8);
  });

  it('a line still being written counts, and is classified once complete', () => {
    const b = new LogBuffer();
    b.append('out\n[trainhub] fini');
    const rows = new RankRows(b);
    expect(rows.length).toBe(2);
    b.append('shed\n');
    expect(rows.length).toBe(1);
  });
});

describe('all ranks merged', () => {
  it("orders each rank's cells by their start time, ties by rank, with rank prefixes", () => {
    const r0 = buffer([
      '[trainhub] rank 0/2, attempt 0: running notebook nb.ipynb',
      marker(1, '2026-12-02T12:00:00.100Z'),
      'r0 cell 1',
      marker(2, '2026-12-02T12:00:05.000Z'),
      'r0 cell 2 a',
      'r0 cell 2 b'
    ]);
    const r1 = buffer([
      'preamble of rank 1',
      marker(1, '2026-12-02T12:00:00.100Z'),
      'r1 cell 1',
      marker(2, '2026-12-02T12:00:04.000Z'),
      'r1 cell 2'
    ]);
    const rows = new MergedRows(
      new Map([
        [1, r1],
        [0, r0]
      ])
    );
    const shown = Array.from({ length: rows.length }, (_, i) => [
      rows.rank(i),
      rows.text(i),
      rows.lineNumber(i)
    ]);
    expect(shown).toEqual([
      [1, 'preamble of rank 1', 1],
      [0, r0.line(1), 2],
      [0, 'r0 cell 1', 3],
      [1, r1.line(1), 2],
      [1, 'r1 cell 1', 3],
      [1, r1.line(3), 4],
      [1, 'r1 cell 2', 5],
      [0, r0.line(3), 4],
      [0, 'r0 cell 2 a', 5],
      [0, 'r0 cell 2 b', 6]
    ]);
    const withInternal = new MergedRows(
      new Map([
        [0, r0],
        [1, r1]
      ]),
      true
    );
    expect(withInternal.length).toBe(rows.length + 1);
    expect(withInternal.text(0)).toBe(r0.line(0));
  });

  it('takes in lines as they arrive', () => {
    const r0 = buffer([marker(1, '2026-12-02T12:00:00.000Z'), 'a']);
    const r1 = buffer([marker(1, '2026-12-02T12:00:01.000Z'), 'b']);
    const rows = new MergedRows(
      new Map([
        [0, r0],
        [1, r1]
      ])
    );
    expect(rows.length).toBe(4);
    r0.append('a2\n');
    expect(rows.length).toBe(5);
    expect(rows.text(2)).toBe('a2');
    expect(rows.text(4)).toBe('b');
  });
});

describe('search', () => {
  const rows = (lines: string[]) => ({ length: lines.length, text: (i: number) => lines[i] });

  it('counts every occurrence, literally and case-insensitively', () => {
    const lines = ['Loss 0.5 loss', 'nothing', 'a.b a+b', 'LOSS'];
    const r = new SearchResults('loss');
    expect(r.scan(rows(lines))).toBe(true);
    expect(r.count).toBe(3);
    expect(r.rows).toEqual([0, 0, 3]);
    expect(r.label(true)).toBe('0 of 3');
    const dots = new SearchResults('a.b');
    dots.scan(rows(lines));
    expect(dots.count).toBe(1);
    expect(new SearchResults('zzz').label(true)).toBe('no match');
  });

  it('steps through occurrences from the view, both ways, wrapping: "k of n"', () => {
    const r = new SearchResults('x');
    r.scan(rows(['x', '', 'x x', '', 'x']));
    expect(r.step(true, 1)).toBe(2);
    expect(r.label(true)).toBe('2 of 4');
    expect(r.step(true)).toBe(2);
    expect(r.step(true)).toBe(4);
    expect(r.step(true)).toBe(0);
    expect(r.label(true)).toBe('1 of 4');
    expect(r.step(false)).toBe(4);
    const back = new SearchResults('x');
    back.scan(rows(['x', '', 'x x', '', 'x']));
    expect(back.step(false, 2)).toBe(0);
  });

  it('counts a large log in slices and goes on over rows appended since', () => {
    const lines = Array.from({ length: 250_000 }, (_, i) =>
      i % 1000 === 0 ? `step ${i} error` : `step ${i}`
    );
    const r = new SearchResults('error');
    expect(r.scan(rows(lines), 100_000)).toBe(false);
    expect(r.label(false)).toBe('0 of 100+');
    while (!r.scan(rows(lines), 100_000)) {
      // next slice
    }
    expect(r.count).toBe(250);
    lines.push('one more error', 'and another error');
    r.scan(rows(lines));
    expect(r.count).toBe(252);
  });

  it('recounts a last line that was still being written', () => {
    const lines = ['error', 'err'];
    const r = new SearchResults('error');
    r.scan(rows(lines));
    expect(r.count).toBe(1);
    lines[1] = 'error error';
    r.scan(rows(lines));
    expect(r.count).toBe(3);
  });

  it('marks each occurrence in the spans, across span edges, the current one apart', () => {
    const re = compileQuery('ab')!;
    expect(matchRanges('xabyAB', re)).toEqual([
      [1, 3],
      [4, 6]
    ]);
    const spans = [
      { text: 'xa', style: { bold: true } },
      { text: 'byAB', style: {} }
    ];
    const marked = markSpans(spans, matchRanges('xabyAB', re), 1);
    expect(marked.map(s => [s.text, s.mark, !!s.style.bold])).toEqual([
      ['x', undefined, true],
      ['a', 'match', true],
      ['b', 'match', false],
      ['y', undefined, false],
      ['AB', 'current', false]
    ]);
    expect(compileQuery('')).toBeNull();
  });
});
