import * as fs from 'fs';
import * as path from 'path';

import {
  parameterValue,
  parseParameterCell,
  parsePythonLiteral,
  pythonLiteral
} from '../parameters';

/** What these tests read of a notebook file's cell. */
interface INotebookCell {
  metadata: { tags?: string[] };
  source: string | string[];
}

describe('parseParameterCell', () => {
  it('reads the parameters cell of the example notebook', () => {
    const notebook = JSON.parse(
      fs.readFileSync(path.join(__dirname, '../../../examples/train_ddp.ipynb'), 'utf8')
    );
    const cell = (notebook.cells as INotebookCell[]).find(c =>
      (c.metadata.tags ?? []).includes('parameters')
    )!;
    const source = Array.isArray(cell.source) ? cell.source.join('') : cell.source;
    const params = parseParameterCell(source);
    const byName = Object.fromEntries(params.map(p => [p.name, p.text]));
    expect(byName.epochs).toBe('4');
    expect(byName.steps_per_epoch).toBe('40');
    expect(byName.lr).toBe('0.05');
    expect(byName.async_checkpoints).toBe('True');
    expect(params.find(p => p.name === 'step_delay')?.comment).toMatch(/seconds/);
  });

  it('keeps comments, strings with # and the last assignment of a name', () => {
    const params = parseParameterCell(
      [
        '# a comment line',
        "tag = 'run#1'  # the run's tag",
        'n: int = 3',
        'n = 5',
        'if True:',
        '    hidden = 1',
        'x == 2',
        'layers = [64, 64]'
      ].join('\n')
    );
    expect(params).toEqual([
      { name: 'tag', text: "'run#1'", comment: "the run's tag" },
      { name: 'n', text: '5', comment: undefined },
      { name: 'layers', text: '[64, 64]', comment: undefined }
    ]);
  });
});

describe('Python literals', () => {
  it.each([
    ['1', 1],
    ['-2.5e-3', -0.0025],
    ['1_000', 1000],
    ['True', true],
    ['None', null],
    ["'adam'", 'adam'],
    ['"it\\"s"', 'it"s'],
    ['[1, (2, 3), {"a": False}]', [1, [2, 3], { a: false }]]
  ])('parses %s', (text, value) => {
    expect(parsePythonLiteral(text)).toEqual({ ok: true, value });
  });

  it('refuses expressions', () => {
    expect(parsePythonLiteral('2 ** 10').ok).toBe(false);
    expect(parsePythonLiteral('np.arange(3)').ok).toBe(false);
    expect(parsePythonLiteral("'open").ok).toBe(false);
  });

  it('submits words that are not literals as strings', () => {
    expect(parameterValue('adam')).toBe('adam');
    expect(parameterValue(' 20 ')).toBe(20);
  });

  it('writes JSON values back as Python source', () => {
    for (const v of [1, 0.5, true, null, "it's", 'a"b', [1, 'x'], { k: [false] }]) {
      expect(parsePythonLiteral(pythonLiteral(v))).toEqual({ ok: true, value: v });
    }
  });
});
