/**
 * Schedules in Lab: a tiny notebook scheduled through the Schedule notebook… dialog (a cron
 * far in the future, a refused one first shown on its field), seen in the Schedules panel,
 * run now, its run followed in the history until its job succeeded, then paused and deleted.
 * Screenshot of the panel with the run's history (tests/screenshots.ts).
 */
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell, openNewNotebook } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/scheduled_tiny.ipynb';

test.use({ autoGoto: true });

test('schedule a notebook, run it now, follow its run, pause and delete it', async ({ page }) => {
  test.setTimeout(300 * 1000);
  await openNewNotebook(page, NOTEBOOK, [cell('code', "print('scheduled hello')")]);

  // The dialog, from the notebook toolbar beside "Submit as job".
  await page.locator('.jp-NotebookPanel-toolbar').getByText('Schedule…').click();
  const dialog = page.locator('.jp-trainhub-schedule-dialog');
  await expect(dialog.locator('input[name="name"]')).toHaveValue('scheduled-tiny');
  const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
  await expect(dialog.locator('input[name="timezone"]')).toHaveValue(zone);

  // A refused expression is named on its field by the server.
  await dialog.locator('input[name="cron"]').fill('not a cron');
  await dialog.getByRole('button', { name: 'Create schedule' }).click();
  await expect(dialog.locator('#trainhub-error-cron')).toBeVisible();

  // Far in the future: only "Run now" runs it during the test.
  await dialog.locator('input[name="cron"]').fill('0 3 1 1 *');
  await dialog.locator('input[name="timezone"]').fill('Europe/Berlin');
  await dialog.locator('select[name="concurrency"]').selectOption('allow');
  await dialog.getByRole('button', { name: 'Create schedule' }).click();
  await expect(dialog).toHaveCount(0);

  const panel = page.locator('#trainhub-schedules');
  await expect(panel).toBeVisible();
  const row = panel.locator('.jp-trainhub-schedule').filter({ hasText: 'scheduled-tiny' });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText(NOTEBOOK);
  await expect(row).toContainText('(Europe/Berlin)');
  await expect(row.locator('.jp-trainhub-schedule-next')).toContainText(/next \d{4}-01-01 03:00/);
  await expect(row).toContainText('no runs yet');

  // Run now; its run shows in the history and its job ends succeeded.
  await row.getByRole('button', { name: 'Run now' }).click();
  await row.locator('.jp-trainhub-schedule-head').click();
  const runs = row.locator('.jp-trainhub-schedule-run');
  await expect(runs).toHaveCount(1);
  await expect(runs.first()).toContainText('run now');
  await expect(runs.first()).toHaveAttribute('data-outcome', 'succeeded', {
    timeout: 200 * 1000
  });
  await expect(row.locator('.jp-trainhub-schedule-last')).toContainText('last: succeeded');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'schedules-panel.png') });

  // The run's job opens the job view.
  const jobButton = runs.first().getByRole('button');
  const jobId = (await jobButton.textContent())?.trim();
  expect(jobId).toBeTruthy();
  await jobButton.click();
  await expect(page.locator(`#trainhub-job-${jobId}`)).toBeVisible();

  // Pause: nothing fires until resumed.
  await row.getByRole('button', { name: 'Pause' }).click();
  await expect(row).toHaveAttribute('data-paused', 'true');
  await expect(row.locator('.jp-trainhub-schedule-next')).toHaveText('paused');
  await expect(row.getByRole('button', { name: 'Resume' })).toBeVisible();

  // Delete, asked first; the job it ran stays.
  await row.getByRole('button', { name: 'Delete' }).click();
  await page.locator('.jp-Dialog').getByRole('button', { name: 'Delete schedule' }).click();
  await expect(row).toHaveCount(0);
  const listed = await page.request.get('/trainhub/api/schedules');
  const { schedules } = (await listed.json()) as { schedules: { name: string }[] };
  expect(schedules.filter(s => s.name === 'scheduled-tiny')).toHaveLength(0);
  expect((await page.request.get(`/trainhub/api/jobs/${jobId}`)).ok()).toBe(true);
});
