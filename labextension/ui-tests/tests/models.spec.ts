/**
 * The model registry in Lab: a finished job's output registered with the Outputs tab's
 * Register as model button, the notification's link opening the Models panel at version 1
 * with its metric and lineage, an alias moved there and kept in the audit log, and the load
 * snippets with their Copy buttons; the protected production alias refused with the server's
 * sentence.
 */
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell, openNewNotebook, openSubmitDialog, submitAndAwait } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/registry.ipynb';

test('an output registered from the job view shows in the Models panel', async ({ page }) => {
  test.setTimeout(300 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    cell(
      'code',
      [
        'import trainhub',
        'trainhub.log(step=1, accuracy=0.25)',
        'trainhub.log(step=2, accuracy=0.875)',
        "(trainhub.outputs.path() / 'model.pt').write_bytes(b'weights')"
      ].join('\n')
    )
  ]);
  const submit = await openSubmitDialog(page, 'registry');
  const row = await submitAndAwait(page, submit, 'registry', 'succeeded');
  const jobId = await row.getAttribute('data-job-id');
  await row.dblclick();
  const view = page.locator('.jp-trainhub-jobview:visible');
  await view.locator('.lm-TabBar-tab').filter({ hasText: 'Outputs' }).click();
  await view
    .locator('tr[data-path="model.pt"]')
    .getByRole('button', { name: 'Register as model' })
    .click();

  const dialog = page.locator('.jp-Dialog').filter({ hasText: 'Register as model' });
  await dialog.locator('input[name="model"]').fill('Not a name!');
  await dialog.getByRole('button', { name: 'Register' }).click();
  // refused before the server is asked, the dialog comes back with what was typed
  const again = page.locator('.jp-Dialog').filter({ hasText: 'Register as model' });
  await expect(again.locator('.jp-trainhub-field-error').first()).toContainText('letters, digits');
  await again.locator('input[name="model"]').fill('classifier');
  await again.locator('textarea[name="description"]').fill('first cut');
  await again.getByRole('button', { name: 'Register' }).click();

  const toast = page
    .locator('.Toastify__toast')
    .filter({ hasText: 'classifier version 1 registered' });
  await expect(toast).toBeVisible();
  await toast.getByRole('button', { name: 'Show in Models' }).click();

  const panel = page.locator('#trainhub-models');
  await expect(panel).toBeVisible();
  const model = panel.locator('.jp-trainhub-model[data-model="classifier"]');
  const v1 = model.locator('tr.jp-trainhub-model-version[data-version="1"]');
  await expect(v1.locator('td[data-metric="accuracy"]')).toHaveText('0.8750');
  // opened at the version: where it came from, its lineage and its load snippet
  const detail = model.locator('.jp-trainhub-model-version-detail[data-version="1"]');
  await expect(detail).toContainText(`job ${jobId}, output model.pt`);
  await expect(detail).toContainText('first cut');
  await expect(detail.locator('.jp-trainhub-kv')).toContainText(`registry (${jobId})`);
  await expect(detail.locator('.jp-trainhub-kv')).toContainText(NOTEBOOK);
  await expect(detail.locator('.jp-trainhub-model-snippet code')).toHaveText([
    "trainhub.models.load('classifier/1')"
  ]);

  // production is protected (start-lab.sh's models.yaml): refused with the server's sentence
  await detail.getByRole('button', { name: 'Move alias here…' }).click();
  const refused = page.locator('.jp-Dialog').filter({ hasText: 'Move an alias' });
  await refused.locator('input[name="alias"]').fill('production');
  await refused.getByRole('button', { name: 'Move alias' }).click();
  const error = page.locator('.jp-Dialog').filter({ hasText: 'Could not move @production' });
  await expect(error).toContainText('needs the role model-approver');
  await error.getByRole('button', { name: 'Close' }).click();
  await expect(error).toHaveCount(0);

  await detail.getByRole('button', { name: 'Move alias here…' }).click();
  const move = page.locator('.jp-Dialog').filter({ hasText: 'Move an alias' });
  await move.locator('input[name="alias"]').fill('staging');
  await move.locator('textarea[name="reason"]').fill('passes the offline eval');
  await move.getByRole('button', { name: 'Move alias' }).click();
  await expect(move).toHaveCount(0);

  await expect(v1.locator('.jp-trainhub-model-alias')).toHaveText('@staging');
  const moved = model.locator('.jp-trainhub-model-audit li[data-alias="staging"]');
  await expect(moved).toContainText('@staging: none → version 1');
  await expect(moved).toContainText('passes the offline eval');
  await expect(model.locator('.jp-trainhub-model-audit li')).toHaveCount(2);
  await expect(detail.locator('.jp-trainhub-model-snippet code').first()).toHaveText(
    "trainhub.models.load('classifier@staging')"
  );
  await page.screenshot({ path: path.join(SCREENSHOTS, 'models.png') });

  await detail
    .getByRole('button', { name: "Copy trainhub.models.load('classifier@staging')" })
    .click();
  await expect(
    page
      .locator('.Toastify__toast')
      .filter({ hasText: "Copied trainhub.models.load('classifier@staging')" })
  ).toBeVisible();

  // the version's job opens its view
  await detail.getByRole('button', { name: `Open job ${jobId}` }).click();
  await expect(page.locator(`#trainhub-job-${jobId}`)).toBeVisible();
});
