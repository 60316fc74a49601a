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
    view.append(Array.from({ length: 500 }, (_, i) => `line ${i}`).join('\n') + '\nTraceback here\n');
    const hit = view.find('traceback');
    expect(hit).toBe(500);
    expect(view.follow).toBe(false);
    const highlighted = view.node.querySelector('.jp-mod-highlighted');
    expect(highlighted?.textContent).toBe('501Traceback here');
    view.dispose();
  });
});
