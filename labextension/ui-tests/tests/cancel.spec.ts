/**
 * A job that would run for ten minutes: it saves a checkpoint, is cancelled from the jobs
 * panel, is resubmitted from there, and a third run resumes from its checkpoint.
 */
import { expect, test } from '@jupyterlab/galata';
import { cell, openNewNotebook, openSubmitDialog } from './notebooks';

const NOTEBOOK = 'examples/long_run.ipynb';

const code = (source: string) => cell('code', source);

test('cancel a running job, resubmit it, and resume from its checkpoint', async ({ page }) => {
  test.setTimeout(300 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    code('import time\nimport torch\nimport trainhub.checkpoint as ckpt'),
    code(
      'last = ckpt.latest()\nstart = last.step + 1 if last else 0\n' +
        "print(f'starting at step {start}', flush=True)"
    ),
    code("ckpt.save({'w': torch.zeros(2)}, start).wait()\nprint(f'saved step {start}', flush=True)"),
    code('for _ in range(1200):\n    time.sleep(0.5)')
  ]);
  const dialog = await openSubmitDialog(page, 'long-run');
  await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(dialog).toHaveCount(0);

  const rows = page.locator('.jp-trainhub-job').filter({ hasText: 'long-run' });
  await expect(rows).toHaveCount(1);
  const first = await rows.first().getAttribute('data-job-id');
  const row = page.locator(`.jp-trainhub-job[data-job-id="${first}"]`);

  // It runs and has saved step 0 before it is cancelled.
  await row.getByRole('button', { name: 'Open' }).click();
  const view = page.locator(`#trainhub-job-${first}`);
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
  await expect(view.locator('.jp-trainhub-logview')).toContainText('saved step 0', {
    timeout: 180 * 1000
  });
  await expect(row).toHaveAttribute('data-state', 'running');

  await row.getByRole('button', { name: 'Cancel' }).click();
  await expect(row).toHaveAttribute('data-state', 'cancelled', { timeout: 60 * 1000 });
  await expect(row.locator('.jp-trainhub-failure')).toHaveCount(0); // cancelled is no failure
  await expect(view.locator('.jp-trainhub-log-status')).toContainText('ended');

  // Resubmit makes a new job of the same notebook; it starts from scratch.
  await row.getByRole('button', { name: 'Resubmit' }).click();
  await expect(rows).toHaveCount(2);
  const second = page.locator(`.jp-trainhub-job:not([data-job-id="${first}"])`).filter({
    hasText: 'long-run'
  });
  await expect(second).toHaveAttribute('data-state', /queued|starting|running/);
  const secondId = await second.getAttribute('data-job-id');
  await second.getByRole('button', { name: 'Cancel' }).click();
  await expect(second).toHaveAttribute('data-state', 'cancelled', { timeout: 60 * 1000 });

  // "Resume from" on the first job's checkpoint starts a third that continues after it.
  await row.getByRole('button', { name: 'Open' }).click();
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Checkpoints' }).click();
  const step0 = view.locator('.jp-trainhub-checkpoints tr[data-step="0"]');
  await expect(step0).toBeVisible();
  await step0.getByRole('button', { name: 'Resume from' }).click();
  await expect(rows).toHaveCount(3);
  const third = page
    .locator('.jp-trainhub-job')
    .filter({ hasText: 'long-run' })
    .and(page.locator(`:not([data-job-id="${first}"]):not([data-job-id="${secondId}"])`));
  const thirdId = await third.getAttribute('data-job-id');
  const resumed = page.locator(`#trainhub-job-${thirdId}`);
  await resumed.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
  await expect(resumed.locator('.jp-trainhub-logview')).toContainText('starting at step 1', {
    timeout: 180 * 1000
  });
  await third.getByRole('button', { name: 'Cancel' }).click();
  await expect(third).toHaveAttribute('data-state', 'cancelled', { timeout: 60 * 1000 });
});
