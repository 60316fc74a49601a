/**
 * A job's executed notebook in its job view: the Notebook tab renders the cells the job ran
 * with JupyterLab's own renderers (the matplotlib figure as an image, the HTML, the failing
 * cell's traceback), the failure box opens it at the cell that raised, and a copy lands in the
 * workspace as a new notebook.
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell, openNewNotebook, openSubmitDialog, submitAndAwait } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/executed.ipynb';

test('the executed notebook opens in the job view, at the failing cell too', async ({ page }) => {
  test.setTimeout(300 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    cell('markdown', '# An executed notebook'),
    cell('code', "print('hello from the job')"),
    cell('code', 'import matplotlib.pyplot as plt\nplt.plot([1, 4, 9, 16])\nplt.title("squares")'),
    cell('code', "from IPython.display import HTML\nHTML('<b>bold</b> words')"),
    cell('code', "raise ValueError('the failing cell')"),
    cell('code', "print('never reached')")
  ]);
  const dialog = await openSubmitDialog(page, 'executed');
  const row = await submitAndAwait(page, dialog, 'executed', 'failed');
  await row.locator('.jp-trainhub-job-name').dblclick();
  // Opening a job by its row selects none of the row's words (here: its name's).
  expect(await page.evaluate(() => String(window.getSelection()))).toBe('');
  const view = page.locator('.jp-trainhub-jobview:visible');
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Notebook' }).click();

  const notebook = view.locator('.jp-trainhub-executed-notebook');
  await expect(notebook.locator('.jp-CodeCell')).toHaveCount(5);
  await expect(notebook.locator('.jp-OutputArea-output').first()).toHaveText('hello from the job');
  await expect(notebook.locator('.jp-RenderedImage img')).toHaveCount(1);
  await expect(notebook.locator('.jp-RenderedHTMLCommon b')).toHaveText('bold');
  await expect(
    notebook.locator('.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]')
  ).toContainText('ValueError: the failing cell');
  await expect(notebook.locator('.jp-CodeCell .jp-InputPrompt').first()).toContainText('[1]');
  await expect(notebook.locator('.jp-MarkdownCell')).toHaveCount(1); // the user's notebook, whole
  await expect(view.locator('.jp-trainhub-notebook-status')).toContainText('4 of 5 cells run');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'job-notebook.png') });

  // The failure box opens the executed notebook at the cell that raised.
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Overview' }).click();
  await view.getByRole('button', { name: 'Open the executed notebook there' }).click();
  await expect(notebook.locator('.jp-trainhub-flash')).toContainText('the failing cell');

  // A copy in the workspace, named after the job, opens as a notebook of its own (in front
  // of the job view, which then is no longer visible).
  const status = page.locator('.jp-trainhub-jobview .jp-trainhub-notebook-status');
  await view.getByRole('button', { name: 'Copy into workspace' }).click();
  await expect
    .poll(() =>
      page.evaluate(
        () => (window.jupyterapp.shell.currentWidget as NotebookPanel | null)?.context?.path ?? ''
      )
    )
    .toMatch(/^examples\/executed-executed-[0-9a-f]+\.ipynb$/);
  await expect(status).toContainText('Copied to examples/executed-executed-');
});
