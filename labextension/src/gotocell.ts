/** Going from a failure to the notebook: the cell made active and its failing line selected. */
import { Notebook } from '@jupyterlab/notebook';

/** The whole of 1-based `line` of a cell's source as an editor range, or null when the cell
 * has no such line. */
export function lineRange(
  source: string,
  line: number | null | undefined
): { start: { line: number; column: number }; end: { line: number; column: number } } | null {
  if (!line || line < 1) {
    return null;
  }
  const lines = source.split('\n');
  if (line > lines.length) {
    return null;
  }
  return {
    start: { line: line - 1, column: 0 },
    end: { line: line - 1, column: lines[line - 1].length }
  };
}

/**
 * Make cell `cellIndex` (0-based) active, scroll it into view and, when `line` (1-based) is
 * known, select that line in the cell's editor; the cell is outlined for two seconds.
 */
export async function revealCell(
  notebook: Notebook,
  cellIndex: number,
  line?: number | null
): Promise<void> {
  if (cellIndex < 0 || cellIndex >= notebook.widgets.length) {
    return;
  }
  notebook.activeCellIndex = cellIndex;
  notebook.deselectAll();
  await notebook.scrollToItem(cellIndex, 'center');
  const cell = notebook.activeCell;
  if (!cell) {
    return;
  }
  cell.addClass('jp-trainhub-flash');
  setTimeout(() => cell.removeClass('jp-trainhub-flash'), 2000);
  const range = lineRange(cell.model.sharedModel.getSource(), line);
  if (!range) {
    return;
  }
  await cell.ready;
  const editor = cell.editor;
  if (!editor) {
    return;
  }
  notebook.mode = 'edit';
  editor.setSelection(range);
  editor.revealPosition(range.start);
  editor.focus();
}
