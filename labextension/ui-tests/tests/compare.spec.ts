/**
 * Three real runs of one notebook with different learning rates, compared: the `lr` row is
 * marked as differing, the code is the same, the best loss is the fastest learner's, and the
 * three curves overlay in one chart, against step and against time.
 */
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/compare_runs.ipynb';
const RATES = [0.05, 0.1, 0.3];

const parameters = { ...cell('code', 'lr = 0.1\nsteps = 40'), metadata: { tags: ['parameters'] } };
const training = cell(
  'code',
  [
    'import math, time',
    'import trainhub',
    'for step in range(steps):',
    '    loss = 2 * math.exp(-lr * step) + 0.05',
    '    trainhub.log(step=step, loss=loss, accuracy=1 - loss / 2.1)',
    '    time.sleep(0.01)'
  ].join('\n')
);

test('three runs with different parameters side by side', async ({ page }) => {
  test.setTimeout(300 * 1000);
  const content = { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [parameters, training] };
  const put = await page.request.put(`/api/contents/${NOTEBOOK}`, {
    data: { type: 'notebook', format: 'json', content }
  });
  expect(put.ok()).toBe(true);

  const ids: string[] = [];
  for (const lr of RATES) {
    const created = await page.request.post('/trainhub/api/jobs', {
      data: {
        name: `compare-lr-${String(lr).replace('.', '')}`,
        source: { path: NOTEBOOK },
        parameters: { lr, steps: 40 },
        resources: { processes_per_worker: 1 }
      }
    });
    expect(created.status()).toBe(201);
    ids.push((await created.json()).id);
  }
  for (const id of ids) {
    await expect
      .poll(async () => (await (await page.request.get(`/trainhub/api/jobs/${id}`)).json()).state, {
        timeout: 240 * 1000,
        intervals: [1000]
      })
      .toBe('succeeded');
  }

  await page.evaluate(async ids => {
    await window.jupyterapp.commands.execute('trainhub:compare', { ids });
  }, ids);
  const view = page.locator('.jp-trainhub-compareview:visible');
  await expect(view.locator('.jp-trainhub-compare-jobs thead th')).toHaveText([
    '',
    'compare-lr-005',
    'compare-lr-01',
    'compare-lr-03'
  ]);
  const lr = view.locator('tr.jp-trainhub-compare-differs').filter({ hasText: /^lr/ });
  await expect(lr.locator('td')).toHaveText(['0.05', '0.1', '0.3']);
  await expect(view.locator('tr', { hasText: /^steps/ }).first()).not.toHaveClass(/differs/);
  await expect(view.locator('.jp-trainhub-compare-code summary')).toHaveText([
    'compare-lr-01: the same code',
    'compare-lr-03: the same code'
  ]);
  // The fastest learner has the lowest loss: marked best, in its column.
  const best = view.locator('.jp-trainhub-compare-scalars tr', { hasText: 'loss best (lowest)' });
  await expect(best.locator('td').nth(2)).toHaveClass(/jp-trainhub-compare-best/);
  await expect(best.locator('td').nth(2)).toContainText('@ step 39 ★');

  const chart = view.locator('.jp-trainhub-compare-chart');
  await expect(chart.locator('.jp-trainhub-chart-legend .jp-trainhub-chart-key')).toHaveCount(3);
  await expect(chart.locator('.jp-trainhub-chart-legend')).toContainText('compare-lr-03');
  await expect(chart).toContainText('loss');
  await view.locator('.jp-trainhub-compare-controls select').nth(1).selectOption('time');
  await expect(chart).toContainText('seconds');
  await expect(chart.locator('.jp-trainhub-chart-legend .jp-trainhub-chart-key')).toHaveCount(3);
  await view.locator('.jp-trainhub-compare-controls select').nth(1).selectOption('step');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'compare.png') });
});
