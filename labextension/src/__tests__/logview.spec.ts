import { LogView } from '../logview';

function sized(view: LogView, height: number): void {
  Object.defineProperty(view.node, 'clientHeight', { configurable: true, value: height });
  document.body.appendChild(view.node);
}

describe('LogView', () => {
  it('keeps a million lines but renders only the visible rows', () => {
    const view = new LogView({ lineHeight: 20 });
    sized(view, 400);
    const lines: string[] = [];
    for (let i = 0; i < 1_000_000; i++) {
      lines.push(`\x1b[32mrank 0\x1b[0m step ${i}`);
    }
    view.append(lines.join('\n') + '\n');
    view.follow = false;
    view.render();
    const rows = view.node.querySelectorAll('.jp-trainhub-logview-row');
    expect(view.lineCount).toBe(1_000_000);
    expect(rows.length).toBeLessThanOrEqual(21);
    expect(rows[0].textContent).toBe('1rank 0 step 0');
    view.dispose();
  });

  it('jumps to a search hit and highlights it', () => {
    const view = new LogView({ lineHeight: 20 });
    sized(view, 200);
    view.append(
      Array.from({ length: 500 }, (_, i) => `line ${i}`).join('\n') + '\nTraceback here\n'
    );
    const hit = view.find('traceback');
    expect(hit).toBe(500);
    expect(view.follow).toBe(false);
    const highlighted = view.node.querySelector('.jp-mod-highlighted');
    expect(highlighted?.textContent).toBe('501Traceback here');
    view.dispose();
  });
});

describe('LogView rows', () => {
  const marker = '[trainhub] cell 2 started at 2026-12-02T12:04:31.000Z';

  it("draws cell markers as separators and leaves trainhub's own lines out", () => {
    const view = new LogView({ lineHeight: 20 });
    sized(view, 400);
    view.append(
      `[trainhub] rank 0/1, attempt 0: running notebook nb.ipynb\n${marker}\nhello\n[trainhub] finished\n`
    );
    view.render();
    const rows = [...view.node.querySelectorAll('.jp-trainhub-logview-row')];
    expect(rows).toHaveLength(2);
    expect(rows[0].classList.contains('jp-trainhub-log-cell')).toBe(true);
    expect(rows[0].textContent).toMatch(/^2cell 2 · \d\d:\d\d:31$/);
    expect(rows[1].textContent).toBe('3hello');
    view.dispose();
  });

  it('marks every match of a search and says which one is current, "k of n"', () => {
    const labels: string[] = [];
    const view = new LogView({ lineHeight: 20, onSearchChange: l => labels.push(l) });
    sized(view, 400);
    view.append('loss 1 <b>loss</b>\nacc\nloss 2\n');
    view.render();
    view.search('LOSS');
    expect(view.searchLabel).toBe('1 of 3');
    view.render();
    const marks = [...view.node.querySelectorAll('.jp-trainhub-log-match')];
    expect(marks.map(m => m.textContent)).toEqual(['loss', 'loss', 'loss']);
    expect(marks[0].classList.contains('jp-mod-current')).toBe(true);
    expect(view.node.querySelector('b')).toBeNull();
    expect(view.searchStep(true)).toBe(0);
    expect(view.searchStep(true)).toBe(2);
    view.render();
    expect(
      view.node.querySelector('.jp-mod-current')!.closest('.jp-trainhub-logview-row')!.textContent
    ).toBe('3loss 2');
    expect(labels[labels.length - 1]).toBe('3 of 3');
    view.search('');
    expect(labels[labels.length - 1]).toBe('');
    view.dispose();
  });
});
