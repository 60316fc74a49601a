/**
 * The whole path a researcher takes: open the example notebook, submit it as a job with two
 * processes and smaller parameters, follow it in the panel, watch its logs arrive, see it
 * succeed and browse its checkpoints. Screenshots of each view (tests/screenshots.ts).
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import { expect, test } from './fixtures';
import * as path from 'path';
import { openSubmitDialog } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/train_ddp.ipynb';

test.use({ autoGoto: true });

test('submit the example notebook and follow the job to its checkpoints', async ({ page }) => {
  test.setTimeout(420 * 1000);
  await page.notebook.openByPath(NOTEBOOK);
  await page.notebook.activate(NOTEBOOK);

  // Submit as job, from the notebook toolbar: prefilled from the server config and the
  // notebook's parameters cell.
  const dialog = await openSubmitDialog(page, 'train-ddp');
  await expect(dialog.locator('input[name="param-epochs"]')).toHaveValue('4');
  await dialog.locator('input[name="processesPerWorker"]').fill('2');
  await dialog.locator('input[name="param-epochs"]').fill('1');
  await dialog.locator('input[name="param-steps_per_epoch"]').fill('20');

  // A natural name is made valid by the server's rule, and the dialog says so.
  await dialog.locator('input[name="name"]').fill('Train DDP 0.5');
  await expect(dialog.locator('[data-field="name"]')).toContainText('Submitted as train-ddp-0-5');
  // A refused value is reported next to its field by the server's dry run.
  await dialog.locator('input[name="processesPerWorker"]').fill('99');
  await dialog.getByRole('button', { name: 'Check' }).click();
  await expect(dialog.locator('#trainhub-error-processesPerWorker')).toBeVisible();
  await dialog.locator('input[name="processesPerWorker"]').fill('2');
  await dialog.locator('input[name="name"]').fill('train-ddp');
  await dialog.getByRole('button', { name: 'Check' }).click();
  await expect(
    dialog.getByText('The server would accept this job as train-ddp; nothing was submitted yet.')
  ).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'submit-dialog.png') });

  await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(dialog).toHaveCount(0);

  // The job shows up in the jobs panel.
  const row = page.locator('.jp-trainhub-job').filter({ hasText: 'train-ddp' }).first();
  await expect(row).toBeVisible();
  const jobId = await row.getAttribute('data-job-id');
  expect(jobId).toBeTruthy();
  await expect(row).toContainText('proc');

  // Open it and watch log lines arrive on the Logs tab.
  await row.getByRole('button', { name: 'Open' }).click();
  const view = page.locator(`#trainhub-job-${jobId}`);
  await expect(view).toBeVisible();
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
  const logs = view.locator('.jp-trainhub-logview');
  await expect(logs).toContainText(/rank 0 of 2/, { timeout: 180 * 1000 });

  // While it runs, the panel shows its state, elapsed time and processes.
  await expect(row).toHaveAttribute('data-state', /running|succeeded/, { timeout: 120 * 1000 });
  await page
    .locator('#trainhub-jobs')
    .screenshot({ path: path.join(SCREENSHOTS, 'jobs-panel.png') });

  // It succeeds; the panel says so and a notification offers to open it.
  await expect(row).toHaveAttribute('data-state', 'succeeded', { timeout: 300 * 1000 });
  await expect(logs).toContainText('done: validation accuracy', { timeout: 30 * 1000 });
  await expect(view.locator('.jp-trainhub-log-status')).toContainText('ended');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'job-logs.png') });
  await expect(page.locator('.Toastify__toast').filter({ hasText: 'succeeded' })).toBeVisible();

  // Search jumps to a matching line; the other rank has its own log.
  await view.locator('.jp-trainhub-search').fill('validation accuracy');
  await view.locator('.jp-trainhub-search').press('Enter');
  await expect(view.locator('.jp-trainhub-logview-row.jp-mod-highlighted')).toContainText(
    'validation accuracy'
  );
  await view.locator('.jp-trainhub-logs select[aria-label="Rank"]').selectOption('1');
  await expect(logs).toContainText('rank 1 of 2');

  // The overview tells its story: the result first (final and best of each scalar, the best
  // checkpoint), the parameters that differ from the notebook's first, the raw spec folded.
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Overview' }).click();
  const overview = view.locator('.jp-trainhub-overview');
  await expect(overview.locator('.jp-trainhub-timeline')).toContainText('succeeded');
  const result = overview.locator('.jp-trainhub-progress.jp-mod-result');
  await expect(result.locator('tr[data-scalar="loss"]')).toContainText('at step 10');
  await expect(result.locator('tr[data-scalar="val_accuracy"]')).toContainText('at step 19');
  await expect(result).toContainText(/best checkpoint\s*step 19 \(val_accuracy/);
  const changed = overview.locator('.jp-trainhub-parameter-table tbody tr');
  await expect(changed.first()).toHaveClass(/jp-mod-changed/);
  await expect(overview.locator('tr[data-parameter="steps_per_epoch"]')).toHaveClass(
    /jp-mod-changed/
  );
  await expect(overview.locator('tr[data-parameter="steps_per_epoch"]')).toContainText('20');
  const raw = overview.locator('details').filter({ hasText: 'Raw spec' });
  await expect(raw.locator('.jp-trainhub-json')).toBeHidden();
  await raw.locator('summary').click();
  await expect(raw.locator('.jp-trainhub-json')).toContainText('"steps_per_epoch": 20');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'job-overview.png') });

  // The Metrics tab charts the training scalars the job logged.
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Metrics' }).click();
  await expect(view.locator('.jp-trainhub-chart-title').filter({ hasText: 'loss' })).toBeVisible();
  await expect(
    view.locator('.jp-trainhub-chart-title').filter({ hasText: 'val_accuracy' })
  ).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'job-metrics.png') });

  // Its checkpoints: step 19 closes the single epoch of 20 steps.
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Checkpoints' }).click();
  const step19 = view.locator('.jp-trainhub-checkpoints tr[data-step="19"]');
  await expect(step19).toBeVisible();
  await expect(step19).toContainText('state.pt');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'job-checkpoints.png') });

  // "Load into notebook" inserts a cell that loads that checkpoint.
  await step19.getByRole('button', { name: 'Load into notebook' }).click();
  await page.notebook.activate(NOTEBOOK);
  const source = await page.evaluate(() => {
    const panel = window.jupyterapp.shell.currentWidget as NotebookPanel;
    return panel.content.model!.cells.get(panel.content.activeCellIndex).sharedModel.getSource();
  });
  expect(source).toContain('trainhub.checkpoint.load(');
  expect(source).toContain('0000000019');
});
