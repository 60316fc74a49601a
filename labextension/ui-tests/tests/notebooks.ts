/**
 * Notebooks the UI tests write through the contents API, and the submit every test starts with.
 */
import { expect, IJupyterLabPageFixture } from '@jupyterlab/galata';
import { Locator } from '@playwright/test';

export const cell = (cell_type: 'code' | 'markdown', source: string) => ({
  cell_type,
  source,
  metadata: {},
  ...(cell_type === 'code' ? { outputs: [], execution_count: null } : {})
});

/** Write a notebook of these cells at `path` and open it. */
export async function openNewNotebook(
  page: IJupyterLabPageFixture,
  path: string,
  cells: ReturnType<typeof cell>[]
): Promise<void> {
  const content = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    cells
  };
  const put = await page.request.put(`/api/contents/${path}`, {
    data: { type: 'notebook', format: 'json', content }
  });
  expect(put.ok()).toBe(true);
  await page.notebook.openByPath(path);
  await page.notebook.activate(path);
}

/** Open the notebook toolbar's submit dialog; it is prefilled with the job name `name`. */
export async function openSubmitDialog(page: IJupyterLabPageFixture, name: string) {
  await page.locator('.jp-NotebookPanel-toolbar').getByText('Submit as job').click();
  const dialog = page.locator('.jp-trainhub-submit-dialog');
  await expect(dialog.locator('input[name="name"]')).toHaveValue(name);
  return dialog;
}

/**
 * Submit the open dialog as it stands, and wait until the job's row in the Jobs panel (the
 * first that says `name`) reaches `state`; returns that row.
 */
export async function submitAndAwait(
  page: IJupyterLabPageFixture,
  dialog: Locator,
  name: string,
  state: 'succeeded' | 'failed'
): Promise<Locator> {
  await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(dialog).toHaveCount(0);
  const row = page.locator('.jp-trainhub-job').filter({ hasText: name }).first();
  await expect(row).toHaveAttribute('data-state', state, { timeout: 180 * 1000 });
  return row;
}
