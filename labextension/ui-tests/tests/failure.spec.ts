/**
 * A notebook whose third cell raises: the job fails as a code failure, a notification says
 * so, and the verdict's button opens the notebook at the cell that raised.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell, openNewNotebook, openSubmitDialog, submitAndAwait } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/fails_in_cell_3.ipynb';

test('a failing cell is named in the verdict and opened from it', async ({ page }) => {
  test.setTimeout(300 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    cell('markdown', '# This notebook fails on purpose'),
    cell('code', 'value = 41'),
    cell('code', "raise ValueError(f'not the answer: {value}')"),
    cell('code', "print('never reached')")
  ]);
  const dialog = await openSubmitDialog(page, 'fails-in-cell-3');
  await expect(dialog.getByText('No cell tagged “parameters”')).toBeVisible();
  const row = await submitAndAwait(page, dialog, 'fails-in-cell-3', 'failed');
  await expect(row.locator('.jp-trainhub-failure')).toHaveText('code');
  const toast = page.locator('.Toastify__toast').filter({ hasText: 'fails-in-cell-3 failed' });
  await expect(toast).toBeVisible();

  // The notification's action opens the job; the verdict names the cell.
  await toast.getByRole('button', { name: 'Open' }).click();
  const verdict = page.locator('.jp-trainhub-verdict:visible');
  await expect(verdict).toContainText('code failure');
  await expect(verdict).toContainText('cell 3');
  await expect(verdict).toContainText('not the answer: 41');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'job-failure.png') });

  await verdict.getByRole('button', { name: /at cell 3/ }).click();
  await expect
    .poll(() =>
      page.evaluate(() => {
        const panel = window.jupyterapp.shell.currentWidget as NotebookPanel | null;
        return [panel?.context?.path, panel?.content?.activeCellIndex];
      })
    )
    .toEqual([NOTEBOOK, 2]);
});
