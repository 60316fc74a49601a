/**
 * The Metrics and Logs tabs on a real two-rank job: cell separators, trainhub's own lines
 * hidden until asked for, both ranks merged with prefixes, a search that counts and marks
 * every match; scalar charts of a stated rank with hover values, smoothing, log scale and
 * zoom, and CPU and memory of the ranks. In the light and the dark theme, with screenshots.
 */
import { expect, test } from './fixtures';
import * as path from 'path';
import { belowAA } from './contrast';
import { cell, openNewNotebook, openSubmitDialog } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/metrics_logs.ipynb';

test('metrics and logs of a two-rank job', async ({ page }) => {
  test.setTimeout(420 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    cell(
      'code',
      "import math, os, time\nimport trainhub\nrank = int(os.environ.get('RANK', 0))\nprint('setting up rank', rank)"
    ),
    cell(
      'code',
      'for step in range(120):\n' +
        '    trainhub.log(step=step, loss=math.exp(-step / 30) + 0.05 * math.sin(step), lr=0.1 * 0.97 ** step)\n' +
        "    if step % 40 == 0:\n        print(f'rank {rank} needle at step {step}', flush=True)\n" +
        '    time.sleep(0.05)'
    ),
    cell('code', "print(f'rank {rank} done')")
  ]);
  const dialog = await openSubmitDialog(page, 'metrics-logs');
  await dialog.locator('input[name="processesPerWorker"]').fill('2');
  await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(dialog).toHaveCount(0);
  const row = page.locator('.jp-trainhub-job').filter({ hasText: 'metrics-logs' }).first();
  const jobId = await row.getAttribute('data-job-id');
  await expect(row).toHaveAttribute('data-state', 'succeeded', { timeout: 300 * 1000 });

  await row.getByRole('button', { name: 'Open' }).click();
  const view = page.locator(`#trainhub-job-${jobId}`);
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
  const logsTab = view.locator('.jp-trainhub-logs');
  const logs = logsTab.locator('.jp-trainhub-logview');
  await expect(logs).toContainText('rank 0 done');

  // Each cell's output follows its separator; trainhub's own lines are hidden until asked.
  const separators = logs.locator('.jp-trainhub-log-cell');
  await expect(separators).toHaveCount(3);
  await expect(separators.nth(1)).toHaveText(/^\d+cell 2 · \d\d:\d\d:\d\d$/);
  await expect(logs).not.toContainText('[trainhub]');
  await logsTab.getByLabel('Show trainhub lines').check();
  await expect(logs.locator('.jp-trainhub-log-internal').first()).toContainText(
    '[trainhub] rank 0/2'
  );
  await expect(logs).toContainText('[trainhub] finished');
  await logsTab.getByLabel('Show trainhub lines').uncheck();
  await expect(logs).not.toContainText('[trainhub]');

  // Search counts every match and marks each; Enter steps to the next one.
  const search = logsTab.locator('.jp-trainhub-search');
  const matches = logsTab.locator('.jp-trainhub-log-matches');
  await search.fill('NEEDLE');
  await expect(matches).toHaveText('1 of 3');
  await expect(logs.locator('.jp-trainhub-log-match')).toHaveCount(3);
  await expect(logs.locator('.jp-trainhub-log-match.jp-mod-current')).toHaveText('needle');
  await search.press('Enter');
  await expect(matches).toHaveText('2 of 3');
  await search.press('Shift+Enter');
  await search.press('Shift+Enter');
  await expect(matches).toHaveText('3 of 3');

  // Both ranks together, each line prefixed with its rank; the search counts both.
  await logsTab.locator('select[aria-label="Rank"]').selectOption('all');
  await expect(
    logs.locator('.jp-trainhub-log-rank').filter({ hasText: 'r1' }).first()
  ).toBeVisible();
  await expect(
    logs.locator('.jp-trainhub-log-rank').filter({ hasText: 'r0' }).first()
  ).toBeVisible();
  await expect(matches).toHaveText(/^\d of 6$/);
  await expect(logs).toContainText('rank 1 done');

  for (const theme of ['light', 'dark'] as const) {
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    } else {
      await page.theme.setLightTheme();
    }
    await view.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
    await expect(logs.locator('.jp-trainhub-log-match').first()).toBeVisible();
    expect(
      await belowAA(logs.locator('.jp-trainhub-log-match').first()),
      `match, ${theme}`
    ).toEqual([]);
    expect(
      await belowAA(separators.first().locator('.jp-trainhub-log-cell-label')),
      `separator, ${theme}`
    ).toEqual([]);
    await page.screenshot({ path: path.join(SCREENSHOTS, `logs-tab-${theme}.png`) });

    // Metrics: the rank is stated; training charts, then CPU and memory of the ranks.
    await view.locator('.lm-TabBar-tab').filter({ hasText: 'Metrics' }).click();
    const metrics = view.locator('.jp-trainhub-metrics');
    await expect(metrics.locator('.jp-trainhub-metrics-rank-note')).toContainText(
      'only rank 0 logged scalars'
    );
    const loss = metrics
      .locator('.jp-trainhub-chart-box')
      .filter({ has: page.locator('.jp-trainhub-chart-title', { hasText: /^loss$/ }) });
    await expect(loss).toBeVisible();
    for (const title of ['CPU of the ranks (% of a core)', 'Memory of the ranks (GiB)']) {
      const chart = metrics
        .locator('.jp-trainhub-chart-box')
        .filter({ has: page.locator('.jp-trainhub-chart-title', { hasText: title }) });
      await expect(chart.locator('.jp-trainhub-chart-key')).toHaveText([/^rank 0/, /^rank 1/]);
    }
    expect(
      await belowAA(metrics.locator('.jp-trainhub-chart-legend').first()),
      `legend, ${theme}`
    ).toEqual([]);

    // Hover shows each series' value at the step under the pointer.
    const plot = loss.locator('.jp-trainhub-chart');
    const box = (await plot.boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
    const tip = loss.locator('.jp-trainhub-chart-tip');
    await expect(tip).toBeVisible();
    await expect(tip).toContainText(/step \d+/);
    await expect(tip).toContainText('loss');
    await page.screenshot({ path: path.join(SCREENSHOTS, `metrics-tab-${theme}.png`) });
    await page.mouse.move(box.x - 20, box.y - 20);
  }

  // Smoothing keeps the raw curve faint behind; the log axis ticks on powers of ten.
  const metrics = view.locator('.jp-trainhub-metrics');
  const lr = metrics
    .locator('.jp-trainhub-chart-box')
    .filter({ has: page.locator('.jp-trainhub-chart-title', { hasText: /^lr$/ }) });
  await expect(lr).toHaveClass(/jp-mod-smoothed/); // the default smoothing, 0.6
  await metrics.getByLabel('Smoothing').fill('0');
  await expect(lr).not.toHaveClass(/jp-mod-smoothed/);
  await metrics.getByLabel('Log scale').check();
  // The canvas's axes, as the plot describes them: a tick on 0.01.
  await expect(lr.locator('.jp-trainhub-chart')).toHaveAttribute(
    'aria-label',
    /y axis \(log\) ticks (.*, )?0\.01(,|$)/
  );

  // Drag to zoom, double-click to reset.
  const plot = lr.locator('.jp-trainhub-chart');
  const box = (await plot.boundingBox())!;
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height * 0.5);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.5, { steps: 5 });
  await page.mouse.up();
  await expect(lr).toContainText('double-click to reset');
  await plot.dblclick();
  await expect(lr).not.toContainText('double-click to reset');
  await page.theme.setLightTheme();
});
