/**
 * The Jobs panel that scales: jobs found by name, tag, note or parameter value and filtered
 * by state; tags and a note edited after submission; the latest value of a chosen scalar per
 * job; rows that hold still under the pointer while a job arrives ("1 new job"); two jobs
 * selected and handed to the compare command.
 * Screenshot of the searched panel (tests/screenshots.ts).
 */
import { IJupyterLabPageFixture } from '@jupyterlab/galata';
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/quick.ipynb';

const parameters = {
  ...cell('code', "lr = 0.1\nopt = 'sgd'"),
  metadata: { tags: ['parameters'] }
};

test.use({ autoGoto: true });

async function submit(
  page: IJupyterLabPageFixture,
  name: string,
  params: Record<string, unknown>,
  tags: string[] = []
): Promise<string> {
  const response = await page.request.post('/trainhub/api/jobs', {
    data: { name, source: { path: NOTEBOOK }, parameters: params, tags }
  });
  expect(response.status()).toBe(201);
  return (await response.json()).id;
}

/** The page's record of what the compare command was run with. */
type CompareSpy = Window & { compared: unknown[] };

test('search, filter, tag, show a scalar, hold the list and compare', async ({ page }) => {
  test.setTimeout(300 * 1000);
  const content = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {},
    cells: [
      parameters,
      cell('code', "import trainhub\nprint('lr', lr, opt)\ntrainhub.log(step=3, loss=lr * 10)")
    ]
  };
  const put = await page.request.put(`/api/contents/${NOTEBOOK}`, {
    data: { type: 'notebook', format: 'json', content }
  });
  expect(put.ok()).toBe(true);

  const ids = [
    await submit(page, 'quick-lr', { lr: 0.001, opt: 'adam' }, ['baseline']),
    await submit(page, 'quick-lr', { lr: 0.01, opt: 'adam' }, ['baseline']),
    await submit(page, 'quick-sgd', { lr: 0.1 }, ['ablation'])
  ];
  await page.sidebar.openTab('trainhub-jobs');
  const panel = page.locator('#trainhub-jobs');
  const rows = panel.locator('.jp-trainhub-job[data-job-id]');
  const search = panel.getByRole('searchbox', { name: 'Search jobs' });
  for (const id of ids) {
    await expect(panel.locator(`.jp-trainhub-job[data-job-id="${id}"]`)).toHaveAttribute(
      'data-state',
      'succeeded',
      { timeout: 200 * 1000 }
    );
  }

  // By parameter value (name=value, or the value alone), by tag, and several words at once.
  await search.fill('lr=0.001');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-job-id', ids[0]);
  await expect(rows.first()).toContainText("lr=0.001 opt='adam'");
  await search.fill('baseline');
  await expect(rows).toHaveCount(2);
  await search.fill('adam 0.01');
  await expect(rows).toHaveCount(1);
  await expect(panel.locator('.jp-trainhub-jobs-count')).toHaveText('1 job found');
  await search.fill('quick');
  await expect(rows).toHaveCount(3);
  await panel.getByRole('combobox', { name: 'Filter by state' }).selectOption('failed');
  await expect(rows).toHaveCount(0);
  await expect(panel).toContainText('No job found.');
  await panel.getByRole('combobox', { name: 'Filter by state' }).selectOption('succeeded');
  await expect(rows).toHaveCount(3);

  // The latest value of a chosen scalar, per job.
  await panel.getByRole('textbox', { name: 'Show the latest value of a scalar' }).fill('loss');
  const sgd = panel.locator(`.jp-trainhub-job[data-job-id="${ids[2]}"]`);
  await expect(sgd.locator('.jp-trainhub-job-scalar')).toHaveText('loss 1');
  await expect(
    panel.locator(`.jp-trainhub-job[data-job-id="${ids[0]}"] .jp-trainhub-job-scalar`)
  ).toHaveText('loss 0.01');

  // Tags and a note, changed after submission, are found by the search.
  await sgd.getByRole('button', { name: 'Tags…' }).click();
  const edit = page.locator('.jp-Dialog').filter({ hasText: 'Tags and note of quick-sgd' });
  await edit.locator('input[name="tags"]').fill('ablation, keep');
  await edit.locator('textarea[name="note"]').fill('the run to beat');
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect(sgd.locator('.jp-trainhub-tag')).toHaveText(['ablation', 'keep']);
  await expect(sgd.locator('.jp-trainhub-job-scalar')).toHaveText('loss 1'); // kept by the edit
  await search.fill('beat');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-job-id', ids[2]);
  await search.fill('quick');
  await expect(rows).toHaveCount(3);
  await page
    .locator('#trainhub-jobs')
    .screenshot({ path: path.join(SCREENSHOTS, 'jobs-panel-search.png') });

  // Under the pointer the list holds still: a new job waits as "1 new job".
  // The filter's first page is loaded before the job arrives (a page asked for later would
  // bring the new job with it, never held).
  const unfiltered = page.waitForResponse(r => {
    const url = new URL(r.url());
    return (
      url.pathname.endsWith('/trainhub/api/jobs') &&
      url.searchParams.get('q') === 'quick' &&
      !url.searchParams.has('state')
    );
  });
  await panel.getByRole('combobox', { name: 'Filter by state' }).selectOption('');
  await unfiltered;
  await expect(rows).toHaveCount(3);
  await rows.nth(1).hover();
  const arriving = await submit(page, 'quick-new', { lr: 0.2 });
  await expect(panel.getByRole('button', { name: '1 new job' })).toBeVisible({
    timeout: 30 * 1000
  });
  await expect(rows).toHaveCount(3);
  await expect(rows.first()).toHaveAttribute('data-job-id', ids[2]);
  await page.mouse.move(5, 5); // away from the list: what waited comes in on top
  await expect(rows).toHaveCount(4);
  await expect(rows.first()).toHaveAttribute('data-job-id', arriving);

  // Two selected jobs go to the compare command (`trainhub:compare` with their ids).
  await page.evaluate(() => {
    const app = window.jupyterapp;
    const spy = window as CompareSpy;
    spy.compared = [];
    if (app.commands.hasCommand('trainhub:compare')) {
      const execute = app.commands.execute.bind(app.commands);
      app.commands.execute = (id: string, args: unknown) => {
        if (id === 'trainhub:compare') {
          spy.compared.push(args);
        }
        return execute(id, args);
      };
    } else {
      app.commands.addCommand('trainhub:compare', {
        execute: (args: unknown) => spy.compared.push(args)
      });
    }
  });
  for (const id of [ids[0], ids[1]]) {
    await panel.locator(`.jp-trainhub-job[data-job-id="${id}"] .jp-trainhub-job-select`).check();
  }
  await expect(panel.locator('.jp-trainhub-jobs-bar')).toContainText('2 selected');
  await panel.getByRole('button', { name: 'Compare' }).click();
  const compared = await page.evaluate(() => (window as CompareSpy).compared);
  expect(compared).toEqual([{ ids: [ids[0], ids[1]] }]);
});
