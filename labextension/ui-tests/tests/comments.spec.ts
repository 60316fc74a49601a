/**
 * The job view's Comments tab: a comment with an @mention of a teammate (the user is one of
 * their own team) posted there shows rendered — Markdown by JupyterLab's renderer, sanitized,
 * the mention marked, an unknown @name plain — then edited in place, marked as edited.
 */
import { expect, test } from './fixtures';
import { cell } from './notebooks';

const NOTEBOOK = 'examples/commented.ipynb';

test('a comment with an @mention is posted in the job view and shown rendered', async ({
  page
}) => {
  const put = await page.request.put(`/api/contents/${NOTEBOOK}`, {
    data: {
      type: 'notebook',
      format: 'json',
      content: { nbformat: 4, nbformat_minor: 5, metadata: {}, cells: [cell('code', 'x = 1')] }
    }
  });
  expect(put.ok()).toBe(true);
  const created = await page.request.post('/trainhub/api/jobs', {
    data: { name: 'commented', source: { path: NOTEBOOK } }
  });
  expect(created.status()).toBe(201);
  const { id } = await created.json();
  const { user } = await (await page.request.get('/trainhub/api/config')).json();

  await page.evaluate(
    jobId =>
      window.jupyterapp.commands.execute('trainhub:open-job', {
        id: jobId,
        tab: 'Comments'
      }),
    id
  );
  const tab = page.locator('.jp-trainhub-jobview:visible .jp-trainhub-comments');
  await expect(tab).toContainText('No comments yet.');
  const text =
    `Loss **spiked** at step 40, @${user} please look; @nobody is no teammate.\n\n` +
    'Try `lr=3e-4` <img src="x" onerror="window.hacked = 1">';
  await tab.getByRole('textbox', { name: 'New comment' }).fill(text);
  await tab.getByRole('button', { name: 'Comment', exact: true }).click();

  const comment = tab.locator('.jp-trainhub-comment');
  await expect(comment).toHaveCount(1);
  const body = comment.locator('.jp-trainhub-comment-body');
  await expect(body.locator('strong')).toHaveText('spiked');
  await expect(body.locator('code')).toHaveText('lr=3e-4');
  await expect(body.locator('.jp-trainhub-mention')).toHaveText([`@${user}`]);
  await expect(body).toContainText('@nobody is no teammate');
  await expect(body.locator('img[onerror]')).toHaveCount(0); // sanitized
  expect(
    await page.evaluate(() => (window as Window & { hacked?: number }).hacked)
  ).toBeUndefined();
  await expect(comment.locator('.jp-trainhub-comment-heading')).toContainText(user);
  await expect(tab.getByRole('textbox', { name: 'New comment' })).toHaveValue('');

  // One's own comment is edited in place and says so.
  await comment.getByRole('button', { name: 'Edit' }).click();
  await comment
    .getByRole('textbox', { name: 'Edit comment' })
    .fill(`Fixed: *lr* was off, @${user}`);
  await comment.getByRole('button', { name: 'Save' }).click();
  await expect(tab.locator('.jp-trainhub-comment-body em')).toHaveText('lr');
  await expect(tab.locator('.jp-trainhub-comment-heading')).toContainText('edited');
  const listed = await page.request.get(`/trainhub/api/comments?kind=job&target=${id}`);
  const { comments } = await listed.json();
  expect(comments.map((c: { mentions: string[] }) => c.mentions)).toEqual([[user]]);
});
