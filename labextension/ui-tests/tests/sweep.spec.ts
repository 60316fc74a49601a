/**
 * A small sweep from the submit dialog: three trials of a tiny notebook over `lr`, two at once,
 * median stopping on `loss` after step 2. The trial with the largest `lr` lags the two before
 * it and ends `stopped early`; the sweep is one expandable entry of the Jobs panel, and its
 * view shows the trials table with the best trial marked and `loss` plotted against `lr`.
 * Screenshot: sweep.png (tests/screenshots.ts).
 */
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell, openNewNotebook, openSubmitDialog } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/sweeptiny.ipynb';

test('a sweep with early stopping: one entry in the panel, trials, best, plot', async ({
  page
}) => {
  test.setTimeout(300 * 1000);
  // The lab may open before Galata has made the test's directory, and say so in a dialog.
  const missing = page.locator('.jp-Dialog').filter({ hasText: 'Could not find path' });
  if (await missing.isVisible()) {
    await missing.getByRole('button').last().click();
  }
  const parameters = { ...cell('code', 'lr = 0.1'), metadata: { tags: ['parameters'] } };
  await openNewNotebook(page, NOTEBOOK, [
    parameters,
    // loss = lr / step: the larger lr, the worse at every step; a second a step, so that
    // the sweep's controller sees the lagging trial while it still runs
    cell(
      'code',
      'import time\nimport trainhub\nfor step in range(1, 9):\n' +
        '    trainhub.log(step=step, loss=lr / step)\n    time.sleep(1)'
    )
  ]);

  const dialog = await openSubmitDialog(page, 'sweeptiny');
  await dialog.locator('input[name="sweep-enabled"]').check();
  await dialog.locator('select[name="sweep-kind-lr"]').selectOption('list');
  await dialog.locator('input[name="sweep-values-lr"]').fill('0.1, 0.2, 10');
  await dialog.locator('input[name="sweep-max-running"]').fill('2');
  await dialog.locator('input[name="sweep-metric"]').fill('loss');
  await dialog.locator('select[name="sweep-early-stop"]').selectOption('median');
  await dialog.locator('input[name="sweep-min-steps"]').fill('2');
  await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(dialog).toHaveCount(0);

  // The sweep view opens on the new sweep and follows it to its end.
  // (the Jobs panel's sweep entry carries the class too; the view alone has a state)
  const view = page.locator('.jp-trainhub-sweep[data-sweep-id][data-state]');
  await expect(view).toBeVisible({ timeout: 30 * 1000 });
  const sweepId = await view.getAttribute('data-sweep-id');
  expect(sweepId).toBeTruthy();
  await expect(view).toHaveAttribute('data-state', 'finished', { timeout: 240 * 1000 });
  const trials = view.locator('.jp-trainhub-sweep-table tbody tr');
  await expect(trials).toHaveCount(3);
  await expect(view.locator('tr[data-trial="2"]')).toContainText('stopped early');
  await expect(view.locator('tr[data-trial="2"]')).toContainText('10');
  for (const trial of ['0', '1']) {
    await expect(view.locator(`tr[data-trial="${trial}"]`)).toContainText('succeeded');
  }
  // the best trial by loss (lowest) is marked, and only it
  await expect(view.locator('tr.jp-trainhub-sweep-best')).toHaveCount(1);
  await expect(view.locator('tr.jp-trainhub-sweep-best')).toHaveAttribute('data-trial', '0');
  await expect(view.locator('.jp-trainhub-sweep-progress')).toContainText('1 stopped early');
  // loss against lr, the stopped trial among the points
  const plot = view.locator('.jp-trainhub-sweep-plot');
  await expect(plot).toContainText('loss by lr');
  await expect(plot.locator('.jp-trainhub-chart canvas')).toBeVisible();
  await expect(plot).toContainText('stopped early');

  // In the Jobs panel: one entry for the sweep, its three trials inside when unfolded.
  await page.sidebar.openTab('trainhub-jobs');
  const panel = page.locator('#trainhub-jobs');
  const entry = panel.locator(`.jp-trainhub-sweep[data-sweep-id="${sweepId}"]`);
  await expect(entry).toHaveCount(1);
  await expect(entry).toContainText('3 trials');
  const toggle = entry.locator('.jp-trainhub-sweep-toggle');
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') {
    await toggle.click();
  }
  await expect(panel.locator('.jp-trainhub-job-trial')).toHaveCount(3);
  await expect(panel.locator('.jp-trainhub-job-trial[data-state="cancelled"]')).toHaveCount(1);

  await view.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'sweep.png') });
});
