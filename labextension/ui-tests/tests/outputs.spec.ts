/**
 * A finished job's Outputs tab: the files the notebook wrote to trainhub.outputs.path() as a
 * tree with sizes and times, a folder opened, and a file downloaded as the job wrote it.
 */
import { expect, test } from './fixtures';
import * as fs from 'fs';
import * as path from 'path';
import { cell, openNewNotebook, openSubmitDialog, submitAndAwait } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/outputs.ipynb';
const RESULTS = '{"accuracy": 0.93, "loss": 0.21}';

test('the Outputs tab lists what a finished job wrote and downloads it', async ({ page }) => {
  test.setTimeout(300 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    cell('markdown', '# Writes its products to the outputs directory'),
    cell(
      'code',
      [
        'import trainhub',
        'out = trainhub.outputs.path()',
        "(out / 'eval').mkdir()",
        `(out / 'eval' / 'results.json').write_text('${RESULTS}')`,
        "(out / 'config.yaml').write_text('lr: 0.1\\nepochs: 3\\n')",
        "(out / 'weights.bin').write_bytes(bytes(3 * 1024 * 1024))"
      ].join('\n')
    )
  ]);
  const dialog = await openSubmitDialog(page, 'outputs');
  const row = await submitAndAwait(page, dialog, 'outputs', 'succeeded');
  await row.dblclick();
  const view = page.locator('.jp-trainhub-jobview:visible');
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Outputs' }).click();

  const tab = view.locator('.jp-trainhub-outputs');
  await expect(tab.locator('.jp-trainhub-outputs-summary')).toContainText('3 files, 3');
  const rows = tab.locator('tbody tr');
  // Folders first, closed; then files by name.
  await expect(rows).toHaveCount(3);
  await expect(rows.nth(0)).toHaveAttribute('data-path', 'eval');
  await expect(rows.nth(1)).toHaveAttribute('data-path', 'config.yaml');
  await expect(rows.nth(2)).toHaveAttribute('data-path', 'weights.bin');
  await expect(rows.nth(2)).toContainText('3.0 MiB');

  await rows.nth(0).getByRole('button', { name: '▸ eval/' }).click();
  await expect(rows).toHaveCount(4);
  const results = tab.locator('tr[data-path="eval/results.json"]');
  await expect(results).toContainText(`${RESULTS.length} B`);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'outputs.png') });

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    results.getByRole('link', { name: 'results.json' }).click()
  ]);
  expect(download.suggestedFilename()).toBe('results.json');
  const saved = await download.path();
  expect(saved).not.toBeNull();
  expect(fs.readFileSync(saved as string, 'utf-8')).toBe(RESULTS);
});
