/**
 * Open in TensorBoard: a finished job that logged with SummaryWriter, opened from its view,
 * shows TensorBoard inside JupyterLab (proxied by the server, as the session) with its scalar.
 */
import { expect, test } from './fixtures';
import { cell, openNewNotebook, openSubmitDialog, submitAndAwait } from './notebooks';

const NOTEBOOK = 'examples/tensorboard.ipynb';
const TAG = 'galata_loss';

test('a job opens in TensorBoard and shows its scalar', async ({ page }) => {
  test.setTimeout(300 * 1000);
  await openNewNotebook(page, NOTEBOOK, [
    cell(
      'code',
      [
        'from torch.utils.tensorboard import SummaryWriter',
        'writer = SummaryWriter()',
        'for step in range(10):',
        `    writer.add_scalar('${TAG}', 1.0 / (step + 1), step)`,
        'writer.close()'
      ].join('\n')
    )
  ]);
  const dialog = await openSubmitDialog(page, 'tensorboard');
  const row = await submitAndAwait(page, dialog, 'tensorboard', 'succeeded');
  await row.dblclick();
  const view = page.locator('.jp-trainhub-jobview:visible');
  await view.locator('button.jp-trainhub-tensorboard').click();

  const tab = page.locator('.jp-trainhub-tensorboard-view:visible');
  await expect(tab).toHaveCount(1);
  await expect(page.getByRole('tab', { name: 'TensorBoard: tensorboard-' })).toBeVisible();
  const board = tab.frameLocator('iframe');
  await expect(board.getByText(TAG).first()).toBeVisible({ timeout: 90 * 1000 });
});
