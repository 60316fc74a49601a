/**
 * The Usage panel after two real tiny jobs (one trains and succeeds, one trains and then
 * fails in its code): opened from the command palette ("trainhub: Usage"), it shows what
 * GET usage/panel answers (GPU-hours, the local admission's quota, the waits, the code
 * failure among the failure classes, the wasteful jobs with their goodput and breakdown
 * bars); the job view's Overview shows the job's goodput bar. Text keeps WCAG AA contrast in
 * the light and the dark theme. Screenshots: usage.png, usage-dark.png (tests/screenshots.ts).
 */
import type { IUsagePanel } from '../../src/usage';
import { expect, test } from './fixtures';
import * as path from 'path';
import { belowAA } from './contrast';
import { cell } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/usage_runs.ipynb';

const parameters = { ...cell('code', 'fail = False'), metadata: { tags: ['parameters'] } };
const warmup = cell('code', 'import time\ntime.sleep(2)  # a slow start: not progress');
const training = cell(
  'code',
  [
    'import trainhub',
    'for step in range(30):',
    '    trainhub.log(step=step, loss=1 / (step + 1))',
    '    time.sleep(0.05)',
    'if fail:',
    '    raise ValueError("diverged")'
  ].join('\n')
);

test('the Usage panel after two real jobs, in both themes', async ({ page }) => {
  test.setTimeout(300 * 1000);
  const content = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {},
    cells: [parameters, warmup, training]
  };
  const put = await page.request.put(`/api/contents/${NOTEBOOK}`, {
    data: { type: 'notebook', format: 'json', content }
  });
  expect(put.ok()).toBe(true);

  const ids: Record<string, string> = {};
  for (const [name, fail] of [
    ['usage-ok', false],
    ['usage-fails', true]
  ] as const) {
    const created = await page.request.post('/trainhub/api/jobs', {
      data: {
        name,
        source: { path: NOTEBOOK },
        parameters: { fail },
        resources: { processes_per_worker: 1 }
      }
    });
    expect(created.status()).toBe(201);
    ids[name] = (await created.json()).id;
  }
  for (const [name, state] of [
    ['usage-ok', 'succeeded'],
    ['usage-fails', 'failed']
  ]) {
    await expect
      .poll(
        async () =>
          (await (await page.request.get(`/trainhub/api/jobs/${ids[name]}`)).json()).state,
        { timeout: 240 * 1000, intervals: [1000] }
      )
      .toBe(state);
  }
  // What the server says of the jobs: the panel must show the same.
  const ok = await (await page.request.get(`/trainhub/api/jobs/${ids['usage-ok']}/usage`)).json();
  expect(ok.steps).toBe(30);
  expect(ok.goodput).toBeGreaterThan(0);
  // The 2 s warm-up is start-up, not progress (counted from the attempt's running state,
  // which the supervisor records once the ranks are already starting).
  expect(ok.goodput).toBeLessThan(1);
  expect(ok.startup_s).toBeGreaterThan(0.5);

  // From the palette.
  await page.keyboard.press('Control+Shift+C');
  await page.locator('#modal-command-palette input').fill('trainhub: Usage');
  await page
    .locator('#modal-command-palette .lm-CommandPalette-item', { hasText: 'trainhub: Usage' })
    .first()
    .click();
  const panel = page.locator('#trainhub-usage');
  await expect(panel).toBeVisible();
  const data: IUsagePanel = await (await page.request.get('/trainhub/api/usage/panel')).json();
  await expect(panel.locator('h2')).toContainText(`Usage of ${data.user}`);

  // The user's goodput over 30 days: these jobs logged steps, so there is one.
  expect(data.goodput_30d).not.toBeNull();
  await expect(panel.locator('.jp-trainhub-usage-figure', { hasText: 'my goodput' })).toContainText(
    `${Math.round(data.goodput_30d * 100)} %`
  );
  // The quota of the local admission: the machine's CPU slots, used and free.
  const slots = panel.locator('tr[data-resource="cpu slots"]');
  await expect(slots).toContainText(
    `of ${data.quotas.find(q => q.resource === 'cpu slots')!.nominal} used`
  );
  await expect(panel).toContainText('local admission');
  // The code failure is among the classes, with its share of the ended jobs.
  const code = data.failures.find(f => f.failure_class === 'code')!;
  expect(code.jobs).toBeGreaterThanOrEqual(1);
  await expect(panel.locator('li[data-class="code"]')).toContainText(
    `code: ${code.jobs} job${code.jobs === 1 ? '' : 's'}`
  );
  await expect(panel).toContainText(`of ${data.ended_30d} jobs that ended in the last 30 days`);
  // The wasteful jobs as the server ranks them, each with its goodput and its bar.
  const rows = panel.locator('.jp-trainhub-usage-wasteful tbody tr');
  await expect(rows).toHaveCount(data.wasteful.length);
  expect(data.wasteful.length).toBeGreaterThan(0);
  for (const [i, job] of data.wasteful.entries()) {
    await expect(rows.nth(i)).toHaveAttribute('data-job', job.job_id);
    if (job.goodput !== null) {
      await expect(rows.nth(i).locator('.jp-trainhub-usage-goodput')).toHaveText(
        `${Math.round(job.goodput * 100)} %`
      );
      // Kept progress is a segment of the bar when there was any (a job failing at once
      // kept none).
      await expect(rows.nth(i).locator('.jp-trainhub-goodput-productive')).toHaveCount(
        job.goodput > 0 ? 1 : 0
      );
    }
  }
  // The daily chart draws a bar per day of the last 30.
  await expect(
    panel.locator('.jp-trainhub-usage-daily rect.jp-trainhub-usage-bar-mine')
  ).toHaveCount(30);

  for (const theme of ['light', 'dark'] as const) {
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    } else {
      await page.theme.setLightTheme();
    }
    await page.evaluate(async () => {
      await window.jupyterapp.commands.execute('trainhub:usage'); // read again
    });
    await expect(panel).toBeVisible();
    expect(await belowAA(panel.locator('.jp-trainhub-usage')), `usage panel, ${theme}`).toEqual([]);
    await page.screenshot({
      path: path.join(SCREENSHOTS, theme === 'dark' ? 'usage-dark.png' : 'usage.png')
    });
  }

  // The job view's Overview: the goodput, its bar and its parts.
  await page.evaluate(async id => {
    await window.jupyterapp.commands.execute('trainhub:open-job', { id });
  }, ids['usage-ok']);
  const view = page.locator(`#trainhub-job-${ids['usage-ok']}`);
  const goodput = view.locator('.jp-trainhub-job-goodput');
  await expect(goodput.locator('h3')).toContainText(`Goodput ${Math.round(ok.goodput * 100)} %`);
  await expect(goodput.locator('li[data-part="startup"]')).toContainText('start-up');
  await expect(goodput).toContainText('30 steps kept');
  expect(await belowAA(goodput), 'job goodput, dark').toEqual([]);
  await page.theme.setLightTheme();
});
