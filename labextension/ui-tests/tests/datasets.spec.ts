/**
 * The submit dialog's dataset picker: it lists only the datasets the user's team may read
 * (start-lab.sh's local datasets file: team vision's own and one for everyone, not team
 * nlp's); the chosen one reaches the job's ranks by name, and the job view shows it with its
 * fingerprint from the lineage. Screenshot: dataset-picker.png (tests/screenshots.ts).
 */
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell, openNewNotebook, openSubmitDialog } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/reads_a_dataset.ipynb';

test('pick a dataset by name, submit, and find it in the lineage', async ({ page }) => {
  test.setTimeout(300 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    cell(
      'code',
      'import os, trainhub\n' +
        'root = trainhub.datasets.path("imagenet-sample")\n' +
        'print("dataset files:", sorted(os.listdir(root)))'
    )
  ]);
  const dialog = await openSubmitDialog(page, 'reads-a-dataset');
  const picker = dialog.locator('select[name="datasets"]');
  await expect(picker.locator('option')).toHaveText(['coco-mini', 'imagenet-sample']);
  await expect(dialog.locator('[data-field="datasets"]')).toContainText(
    'Only the datasets your team may read'
  );
  await picker.selectOption(['imagenet-sample']);
  await expect(dialog.locator('[data-field="datasets"]')).toContainText(
    /imagenet-sample at \S+imagenet-sample \(read-only\)/
  );
  await dialog.getByRole('button', { name: 'Check' }).click();
  await expect(dialog.getByText(/The server would accept this job/)).toBeVisible();
  await dialog.screenshot({ path: path.join(SCREENSHOTS, 'dataset-picker.png') });

  await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(dialog).toHaveCount(0);
  const row = page.locator('.jp-trainhub-job').filter({ hasText: 'reads-a-dataset' }).first();
  await expect(row).toHaveAttribute('data-state', 'succeeded', { timeout: 180 * 1000 });
  const jobId = await row.getAttribute('data-job-id');

  // The job view's Overview: the dataset by name and its fingerprint (2 files, 18 bytes and
  // the content hash its declaration asks for).
  await row.getByRole('button', { name: 'Open' }).click();
  const view = page.locator(`#trainhub-job-${jobId}`);
  const facts = view.locator('.jp-trainhub-kv');
  const name = facts.locator('dt', { hasText: 'dataset imagenet-sample' });
  await expect(name).toBeVisible();
  const fingerprint = name.locator('xpath=following-sibling::dd[1]');
  await expect(fingerprint).toContainText('2 files, 18 bytes');
  await expect(fingerprint).toContainText(/sha256:[0-9a-f]{64}/);
  await expect(facts.locator('dt', { hasText: 'dataset coco-mini' })).toHaveCount(0);

  // The rank found it by name.
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
  await expect(view.locator('.jp-trainhub-logview')).toContainText(
    "dataset files: ['labels.txt', 'train']"
  );
});
