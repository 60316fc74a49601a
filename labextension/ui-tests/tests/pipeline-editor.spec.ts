/**
 * The pipeline editor: a two-step `.pipeline.yaml` opens as a canvas; a third notebook dragged
 * from the file browser becomes a step, a drag from a step's output port connects it, a
 * parameter is set in the side form, and the saved file says so in YAML a person reads (its
 * comment kept). Run starts the pipeline and the run graph follows it until every step has
 * succeeded. Tiny CPU notebooks. Screenshots: pipeline-editor.png, pipeline-run.png
 * (tests/screenshots.ts).
 */
import { IJupyterLabPageFixture } from '@jupyterlab/galata';
import * as path from 'path';

import { expect, test } from './fixtures';
import { cell } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const DIR = 'pipelinetest';
const FILE = `${DIR}/tiny.pipeline.yaml`;

async function putNotebook(page: IJupyterLabPageFixture, file: string, cells: unknown[]) {
  const content = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    cells
  };
  const put = await page.request.put(`/api/contents/${file}`, {
    data: { type: 'notebook', format: 'json', content }
  });
  expect(put.ok()).toBe(true);
}

async function fileText(page: IJupyterLabPageFixture, file: string): Promise<string> {
  const got = await page.request.get(`/api/contents/${file}?content=1&type=file&format=text`);
  expect(got.ok()).toBe(true);
  return ((await got.json()) as { content: string }).content;
}

test('draw a pipeline, save it as YAML, run it and follow its graph', async ({ page }) => {
  test.setTimeout(300 * 1000);
  const missing = page.locator('.jp-Dialog').filter({ hasText: 'Could not find path' });
  if (await missing.isVisible()) {
    await missing.getByRole('button').last().click();
  }
  const made = await page.request.put(`/api/contents/${DIR}`, { data: { type: 'directory' } });
  expect(made.ok()).toBe(true);
  await putNotebook(page, `${DIR}/prep.ipynb`, [cell('code', "print('prepared')")]);
  await putNotebook(page, `${DIR}/train.ipynb`, [cell('code', "print('trained')")]);
  await putNotebook(page, `${DIR}/report.ipynb`, [
    { ...cell('code', "greeting = 'hello'"), metadata: { tags: ['parameters'] } },
    cell('code', 'print(greeting)')
  ]);
  const yaml = [
    '# two tiny steps',
    'steps:',
    '  prep:',
    `    notebook: ${DIR}/prep.ipynb`,
    '  train:',
    `    notebook: ${DIR}/train.ipynb`,
    '    depends_on: [prep]',
    ''
  ].join('\n');
  const put = await page.request.put(`/api/contents/${FILE}`, {
    data: { type: 'file', format: 'text', content: yaml }
  });
  expect(put.ok()).toBe(true);

  // A double click opens the canvas (the default for *.pipeline.yaml).
  await page.filebrowser.openDirectory(DIR);
  await page.filebrowser.open('tiny.pipeline.yaml');
  const editor = page.locator('.jp-trainhub-pipeline-editor');
  await expect(editor).toBeVisible();
  const node = (name: string) => editor.locator(`.jp-trainhub-pipeline-node[data-step="${name}"]`);
  await expect(node('prep')).toBeVisible();
  await expect(node('train')).toBeVisible();
  await expect(editor.locator('path[data-from="prep"][data-to="train"]')).toHaveCount(1);

  // Drag report.ipynb from the file browser onto the canvas.
  const item = page.locator('.jp-DirListing-item', { hasText: 'report.ipynb' });
  const from = (await item.boundingBox())!;
  const canvas = (await editor.locator('.jp-trainhub-pipeline-canvas').boundingBox())!;
  await page.mouse.move(from.x + 30, from.y + from.height / 2);
  await page.mouse.down();
  await page.mouse.move(from.x + 60, from.y + from.height / 2, { steps: 5 });
  await page.mouse.move(canvas.x + canvas.width / 2, canvas.y + canvas.height - 40, {
    steps: 20
  });
  await page.mouse.up();
  await expect(node('report')).toBeVisible();

  // Connect train -> report: from train's output port onto report.
  const port = (await node('train')
    .locator('.jp-trainhub-pipeline-port.jp-mod-out')
    .boundingBox())!;
  const target = (await node('report').boundingBox())!;
  await page.mouse.move(port.x + port.width / 2, port.y + port.height / 2);
  await page.mouse.down();
  await page.mouse.move(target.x + target.width / 2, target.y + target.height / 2, { steps: 10 });
  await page.mouse.up();
  await expect(editor.locator('path[data-from="train"][data-to="report"]')).toHaveCount(1);

  // The side form: the notebook's parameter, set for this step.
  await node('report').click();
  const form = editor.locator('.jp-trainhub-pipeline-form[data-step="report"]');
  const greeting = form.locator('input[name="param-greeting"]');
  await expect(greeting).toHaveValue("'hello'");
  await greeting.fill("'from the pipeline'");
  await editor.getByRole('button', { name: 'Save', exact: true }).click();
  // Saved through the document's context: the file on disk says it, its comment kept.
  const report = [
    '  report:',
    `    notebook: ${DIR}/report.ipynb`,
    '    depends_on: [train]',
    '    parameters:',
    '      greeting: from the pipeline',
    ''
  ].join('\n');
  await expect.poll(() => fileText(page, FILE), { timeout: 15 * 1000 }).toContain(report);
  expect(await fileText(page, FILE)).toContain('# two tiny steps\nsteps:\n  prep:');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'pipeline-editor.png') });

  // Run: the run graph opens and follows every step to its end.
  await editor.getByRole('button', { name: 'Run', exact: true }).click();
  const run = page.locator('.jp-trainhub-pipeline-runview[data-run-id]');
  await expect(run).toBeVisible({ timeout: 30 * 1000 });
  await expect(run).toHaveAttribute('data-state', 'succeeded', { timeout: 240 * 1000 });
  for (const step of ['prep', 'train', 'report']) {
    await expect(run.locator(`[data-step="${step}"]`)).toHaveAttribute('data-state', 'succeeded');
  }
  await page.screenshot({ path: path.join(SCREENSHOTS, 'pipeline-run.png') });
  // A click on a step opens its job's view.
  await run.locator('[data-step="train"]').click();
  await expect(page.locator('.jp-trainhub-jobview')).toBeVisible();
  await expect(page.locator('.jp-trainhub-jobview')).toContainText('tiny-train');

  // The runs list of the editor shows the run, and a click on a step opens its job.
  await page.locator(`.lm-TabBar-tab`, { hasText: 'tiny.pipeline.yaml' }).click();
  await editor.getByRole('button', { name: 'Runs', exact: true }).click();
  const runId = await run.getAttribute('data-run-id');
  await expect(editor.locator(`tr[data-run="${runId}"]`)).toContainText('succeeded');

  // Run again, nothing changed: every step reuses the first run's result (the cache), and
  // the runs list says so.
  await editor.getByRole('button', { name: 'Run', exact: true }).click();
  const again = page.locator(
    `.jp-trainhub-pipeline-runview[data-run-id]:not([data-run-id="${runId}"])`
  );
  await expect(again).toHaveAttribute('data-state', 'succeeded', { timeout: 60 * 1000 });
  for (const step of ['prep', 'train', 'report']) {
    const box = again.locator(`[data-step="${step}"]`);
    await expect(box).toHaveAttribute('data-state', 'reused');
    await expect(box).toContainText('reused from tiny-');
  }
  await page.locator('.lm-TabBar-tab', { hasText: 'tiny.pipeline.yaml' }).click();
  const second = await again.getAttribute('data-run-id');
  await expect(editor.locator(`tr[data-run="${second}"]`)).toContainText('3 of 3 reused');
  await expect(editor.locator(`tr[data-run="${second}"]`)).toContainText('prep, train, report');

  // The two runs step by step: every step of the second stands on the first's job.
  await editor.getByRole('checkbox', { name: `pick run ${runId}` }).check();
  await editor.getByRole('checkbox', { name: `pick run ${second}` }).check();
  await editor.getByRole('button', { name: 'Compare two runs' }).click();
  const compare = page.locator('.jp-trainhub-pipeline-compare-table');
  await expect(compare.locator('tbody tr')).toHaveCount(3);
  for (const step of ['prep', 'train', 'report']) {
    await expect(compare.locator(`tr[data-step="${step}"]`)).toContainText('succeeded');
    await expect(compare.locator(`tr[data-step="${step}"]`)).toContainText('reused');
    await expect(compare.locator(`tr[data-step="${step}"]`)).toContainText('the same result');
  }
  await page.screenshot({ path: path.join(SCREENSHOTS, 'pipeline-compare.png') });

  // "Run again…" from a run's graph: its parameters prefilled; unchanged, every step is reused
  // again, and the new run says which it runs again.
  await page.locator('.lm-TabBar-tab', { hasText: `Run ${second}` }).click();
  await again.getByRole('button', { name: 'Run again…' }).click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-trainhub-run-again-body')).toBeVisible();
  await dialog.getByRole('button', { name: 'Start run' }).click();
  const third = page.locator(`.jp-trainhub-pipeline-runview:has-text("again of ${second}")`);
  await expect(third).toHaveAttribute('data-state', 'succeeded', { timeout: 60 * 1000 });
  await expect(third.locator('[data-step="train"]')).toHaveAttribute('data-state', 'reused');

  // The same file opened as text is the same document: a change on either side shows on the
  // other before anything is saved.
  await page.evaluate(async file => {
    await window.jupyterapp.commands.execute('docmanager:open', { path: file, factory: 'Editor' });
  }, FILE);
  const text = page.locator('.jp-FileEditor .cm-content');
  await expect(text).toContainText('greeting: from the pipeline');
  await page.locator('.lm-TabBar-tab', { hasText: 'tiny.pipeline.yaml' }).first().click();
  await node('report').click();
  await form.locator('input[name="param-greeting"]').fill("'from the canvas'");
  await page.locator('.lm-TabBar-tab', { hasText: 'tiny.pipeline.yaml' }).last().click();
  await expect(text).toContainText('greeting: from the canvas');
  await text.click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type(`  extra: {notebook: ${DIR}/prep.ipynb, depends_on: [prep]}`);
  await page.locator('.lm-TabBar-tab', { hasText: 'tiny.pipeline.yaml' }).first().click();
  await expect(node('extra')).toBeVisible();
  await expect(editor.locator('path[data-from="prep"][data-to="extra"]')).toHaveCount(1);
});

test('mistakes show on their steps: the wiring at once, the rest on Check', async ({ page }) => {
  const missing = page.locator('.jp-Dialog').filter({ hasText: 'Could not find path' });
  if (await missing.isVisible()) {
    await missing.getByRole('button').last().click();
  }
  const dir = 'pipelinemistakes';
  const made = await page.request.put(`/api/contents/${dir}`, { data: { type: 'directory' } });
  expect(made.ok()).toBe(true);
  await putNotebook(page, `${dir}/train.ipynb`, [cell('code', "print('trained')")]);
  const yaml = [
    'steps:',
    '  prep:',
    `    notebook: ${dir}/gone.ipynb`,
    '  train:',
    `    notebook: ${dir}/train.ipynb`,
    '    inputs: {data: prep.data}',
    ''
  ].join('\n');
  const put = await page.request.put(`/api/contents/${dir}/bad.pipeline.yaml`, {
    data: { type: 'file', format: 'text', content: yaml }
  });
  expect(put.ok()).toBe(true);
  await page.filebrowser.openDirectory(dir);
  await page.filebrowser.open('bad.pipeline.yaml');
  const editor = page.locator('.jp-trainhub-pipeline-editor');
  const node = (name: string) => editor.locator(`.jp-trainhub-pipeline-node[data-step="${name}"]`);

  // The wiring is checked as the file is read: Run waits until it is fixed.
  await expect(node('train')).toHaveClass(/jp-mod-error/);
  await expect(node('train')).toContainText('1 mistake');
  await expect(editor.getByRole('button', { name: 'Run', exact: true })).toBeDisabled();

  // Check asks the server, which finds the notebook that is not there.
  await editor.getByRole('button', { name: 'Check', exact: true }).click();
  await expect(editor.locator('.jp-trainhub-pipeline-message')).toContainText('mistakes found');
  await expect(node('prep')).toHaveClass(/jp-mod-error/);
  // the wiring's mistake said once, in the server's words
  await expect(node('train')).toContainText('1 mistake');
  await node('prep').click();
  const form = editor.locator('.jp-trainhub-pipeline-form[data-step="prep"]');
  await expect(form.locator('.jp-trainhub-field-error')).toContainText('gone.ipynb');

  // Delete on the step removes it and its wiring: nothing is left to fix.
  await node('prep').focus();
  await page.keyboard.press('Delete');
  await expect(node('prep')).toHaveCount(0);
  await expect(node('train')).not.toHaveClass(/jp-mod-error/);
  await expect(editor.getByRole('button', { name: 'Run', exact: true })).toBeEnabled();
});

test('a failed step in the run graph: its verdict, and the step after it not run', async ({
  page
}) => {
  test.setTimeout(180 * 1000);
  const missing = page.locator('.jp-Dialog').filter({ hasText: 'Could not find path' });
  if (await missing.isVisible()) {
    await missing.getByRole('button').last().click();
  }
  const dir = 'pipelinefails';
  const made = await page.request.put(`/api/contents/${dir}`, { data: { type: 'directory' } });
  expect(made.ok()).toBe(true);
  await putNotebook(page, `${dir}/boom.ipynb`, [cell('code', "raise ValueError('boom')")]);
  await putNotebook(page, `${dir}/after.ipynb`, [cell('code', "print('after')")]);
  const yaml = [
    'steps:',
    '  boom:',
    `    notebook: ${dir}/boom.ipynb`,
    '  after:',
    `    notebook: ${dir}/after.ipynb`,
    '    depends_on: [boom]',
    ''
  ].join('\n');
  const put = await page.request.put(`/api/contents/${dir}/fails.pipeline.yaml`, {
    data: { type: 'file', format: 'text', content: yaml }
  });
  expect(put.ok()).toBe(true);
  await page.filebrowser.openDirectory(dir);
  await page.filebrowser.open('fails.pipeline.yaml');
  const editor = page.locator('.jp-trainhub-pipeline-editor');
  await editor.getByRole('button', { name: 'Run', exact: true }).click();

  const run = page.locator('.jp-trainhub-pipeline-runview[data-run-id]');
  await expect(run).toHaveAttribute('data-state', 'failed', { timeout: 150 * 1000 });
  const boom = run.locator('[data-step="boom"]');
  await expect(boom).toHaveAttribute('data-state', 'failed');
  await expect(boom).toContainText('code:');
  await expect(run.locator('[data-step="after"]')).toHaveAttribute('data-state', 'not_run');
  await expect(run.locator('[data-step="after"]')).toContainText('not run: step boom failed');
  await expect(run.getByRole('button', { name: 'Retry failed steps' })).toBeVisible();
  await page.screenshot({ path: path.join(SCREENSHOTS, 'pipeline-run-failed.png') });
});
