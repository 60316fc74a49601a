/**
 * A job that would run for ten minutes: it saves a checkpoint, is cancelled from the jobs
 * panel (which asks first), is resubmitted through the submit dialog prefilled from it (a
 * distinct name), and a third run forks from its checkpoint through the same dialog, which
 * says where it starts. Resubmitting the fork asks where to start. Screenshots of the
 * confirmation and the prefilled dialog go to the run's screenshots (tests/screenshots.ts).
 */
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell, openNewNotebook, openSubmitDialog } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/long_run.ipynb';

const code = (source: string) => cell('code', source);
const parameters = {
  ...code('seconds = 600\nrate = 0.5\nverbose = False'),
  metadata: { tags: ['parameters'] }
};

test('cancel a running job, resubmit it, and fork from its checkpoint', async ({ page }) => {
  test.setTimeout(360 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    parameters,
    code('import time\nimport torch\nimport trainhub.checkpoint as ckpt'),
    code(
      'last = ckpt.latest()\nstart = last.step + 1 if last else 0\n' +
        "print(f'starting at step {start} rate {rate}', flush=True)"
    ),
    code(
      "ckpt.save({'w': torch.zeros(2)}, start).wait()\nprint(f'saved step {start}', flush=True)"
    ),
    code('for _ in range(int(seconds / rate)):\n    time.sleep(rate)')
  ]);
  const dialog = await openSubmitDialog(page, 'long-run');
  await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(dialog).toHaveCount(0);

  const panel = page.locator('#trainhub-jobs');
  // The row of the job of that name: other rows may say it too ("resubmit of long-run-3f07…").
  const named = (name: string) =>
    panel
      .locator('.jp-trainhub-job')
      .filter({ has: page.locator('.jp-trainhub-job-name', { hasText: new RegExp(`^${name}$`) }) });
  const rows = panel.locator('.jp-trainhub-job').filter({ hasText: 'long-run' });
  await expect(rows).toHaveCount(1);
  const first = await rows.first().getAttribute('data-job-id');
  const row = panel.locator(`.jp-trainhub-job[data-job-id="${first}"]`);

  // It runs and has saved step 0 before it is cancelled.
  await row.getByRole('button', { name: 'Open' }).click();
  const view = page.locator(`#trainhub-job-${first}`);
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
  await expect(view.locator('.jp-trainhub-logview')).toContainText('saved step 0', {
    timeout: 180 * 1000
  });
  await expect(row).toHaveAttribute('data-state', 'running');

  // Cancel from the panel asks first; keeping it running changes nothing.
  await row.getByRole('button', { name: 'Cancel…' }).click();
  const confirm = page.locator('.jp-Dialog').filter({ hasText: 'Cancel job' });
  await expect(confirm).toContainText(`Cancel long-run (${first})?`);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'cancel-confirm.png') });
  await confirm.getByRole('button', { name: 'Keep running' }).click();
  await expect(confirm).toHaveCount(0);
  await page.waitForTimeout(2000);
  await expect(row).toHaveAttribute('data-state', 'running');
  await row.getByRole('button', { name: 'Cancel…' }).click();
  await confirm.getByRole('button', { name: 'Cancel job' }).click();
  await expect(row).toHaveAttribute('data-state', 'cancelled', { timeout: 60 * 1000 });
  await expect(row.locator('.jp-trainhub-failure')).toHaveCount(0); // cancelled is no failure

  // Resubmit opens the dialog prefilled from the job, stating it, with a distinct name.
  await row.getByRole('button', { name: 'Resubmit…' }).click();
  const again = page.locator('.jp-trainhub-submit-dialog');
  await expect(again.locator('.jp-Dialog-header')).toHaveText(`Resubmit of long-run (${first})`);
  await expect(again.locator('.jp-trainhub-rerun-source')).toContainText(
    `Runs ${NOTEBOOK} as it is now`
  );
  await expect(again.locator('input[name="name"]')).toHaveAttribute('placeholder', 'long-run-2');
  await expect(again.locator('input[name="param-seconds"]')).toHaveValue('600');
  await expect(again.locator('input[name="param-verbose"]')).toHaveAttribute('type', 'checkbox');
  // A typo in a float is refused before anything is sent.
  await again.locator('input[name="param-rate"]').fill('0.O5');
  await expect(again.locator('#trainhub-error-param-rate')).toContainText('is not a number');
  await again.locator('input[name="param-rate"]').fill('0.25');
  await again.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(again).toHaveCount(0);
  const second = named('long-run-2');
  await expect(second).toHaveCount(1);
  await expect(second).toContainText(`resubmit of ${first}`);
  await expect(second).toContainText('rate=0.25');
  await expect(second).toHaveAttribute('data-state', /queued|starting|running/);
  await second.getByRole('button', { name: 'Cancel…' }).click();
  await confirm.getByRole('button', { name: 'Cancel job' }).click();
  await expect(second).toHaveAttribute('data-state', 'cancelled', { timeout: 60 * 1000 });

  // "Fork from" on the first job's checkpoint opens the same dialog, saying from where.
  await row.getByRole('button', { name: 'Open' }).click();
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Checkpoints' }).click();
  const step0 = view.locator('.jp-trainhub-checkpoints tr[data-step="0"]');
  await expect(step0).toBeVisible();
  await step0.getByRole('button', { name: 'Fork from' }).click();
  const fork = page.locator('.jp-trainhub-submit-dialog');
  await expect(fork.locator('.jp-Dialog-header')).toHaveText(
    `Fork from step 0 of long-run (${first})`
  );
  await expect(fork.locator('input[name="name"]')).toHaveAttribute('placeholder', 'long-run-3');
  await expect(fork.locator('input[name="processesPerWorker"]')).toHaveValue('1');
  await expect(fork.locator('input[name="param-rate"]')).toHaveValue('0.5');
  await expect(fork.locator('.jp-trainhub-check-hint')).toContainText('Check is a dry run');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'fork-dialog.png') });
  await fork.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(fork).toHaveCount(0);
  const third = named('long-run-3');
  await expect(third).toContainText(`fork of ${first} at step 0`);
  const thirdId = await third.getAttribute('data-job-id');
  const forked = page.locator(`#trainhub-job-${thirdId}`);
  await forked.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
  await expect(forked.locator('.jp-trainhub-logview')).toContainText('starting at step 1', {
    timeout: 180 * 1000
  });
  await expect(forked.locator('.jp-trainhub-logview')).toContainText('saved step 1', {
    timeout: 60 * 1000
  });
  await third.getByRole('button', { name: 'Cancel…' }).click();
  await confirm.getByRole('button', { name: 'Cancel job' }).click();
  await expect(third).toHaveAttribute('data-state', 'cancelled', { timeout: 60 * 1000 });

  // Resubmitting the fork asks where to start: same checkpoint, the latest, scratch.
  await third.getByRole('button', { name: 'Resubmit…' }).click();
  const choice = page.locator('.jp-trainhub-submit-dialog');
  const start = choice.getByRole('radiogroup', { name: 'Start from' });
  await expect(start.locator('input[value="same"]')).toBeChecked();
  await expect(start).toContainText(`the same checkpoint (0 of ${first})`);
  await expect(start).toContainText(`the latest one (step 1 of ${thirdId})`);
  await expect(choice.locator('.jp-Dialog-header')).toContainText('from the same checkpoint');
  await start.locator('input[value="scratch"]').check();
  await expect(choice.locator('.jp-Dialog-header')).toHaveText(
    `Resubmit of long-run-3 (${thirdId}), from scratch`
  );
  await choice.getByRole('button', { name: 'Cancel', exact: true }).click();
  await expect(choice).toHaveCount(0);
});
