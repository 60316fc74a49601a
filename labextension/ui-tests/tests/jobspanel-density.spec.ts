/**
 * A busy machine at a glance: one job holds every CPU slot and fourteen wait behind it; in a
 * Jobs panel 800 pixels high at least 14 of them show at once, and no waiting job's sentence is
 * cut: it shows whole in its row, or (ended by an ellipsis) whole on hover, in the light and
 * the dark theme. Screenshot of the light one (tests/screenshots.ts).
 */
import { IJupyterLabPageFixture } from '@jupyterlab/galata';
import { expect, test } from './fixtures';
import * as path from 'path';
import { cell } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const NOTEBOOK = 'examples/density_holds.ipynb';
const WAITING = 14;
const PANEL_HEIGHT = 800;

test.use({ autoGoto: true });

async function submit(page: IJupyterLabPageFixture, name: string, processes: number) {
  const response = await page.request.post('/trainhub/api/jobs', {
    data: { name, source: { path: NOTEBOOK }, resources: { processes_per_worker: processes } }
  });
  expect(response.status()).toBe(201);
  return (await response.json()).id as string;
}

/** The rows shown whole inside the panel, and the wait sentences that are not (with why). */
async function measure(page: IJupyterLabPageFixture) {
  return page.locator('#trainhub-jobs').evaluate(panel => {
    const inside = (inner: DOMRect, outer: DOMRect) =>
      inner.top >= outer.top - 0.5 &&
      inner.bottom <= outer.bottom + 0.5 &&
      inner.left >= outer.left - 0.5 &&
      inner.right <= outer.right + 0.5;
    const box = panel.getBoundingClientRect();
    const rows = [...panel.querySelectorAll<HTMLElement>('.jp-trainhub-job[data-job-id]')];
    const shown = rows.filter(row => inside(row.getBoundingClientRect(), box)).length;
    const cut = [];
    for (const row of rows) {
      const wait = row.querySelector<HTMLElement>('.jp-trainhub-job-wait');
      if (!wait) {
        continue;
      }
      // Whole: nothing of it overflows its box, and no box that clips (up to its row) cuts it.
      const rect = wait.getBoundingClientRect();
      let clipped = wait.scrollWidth > wait.clientWidth + 1;
      for (let up = wait.parentElement; up && !clipped; up = up.parentElement) {
        const clips = getComputedStyle(up).overflow !== 'visible' || up === row;
        clipped = clips && !inside(rect, up.getBoundingClientRect());
        if (up === row) {
          break;
        }
      }
      if (clipped && wait.title !== wait.textContent) {
        cut.push(wait.textContent);
      }
    }
    return { height: box.height, shown, cut };
  });
}

test('fourteen jobs in an 800-pixel panel, every wait sentence whole, in both themes', async ({
  page
}) => {
  test.setTimeout(240 * 1000);
  const content = {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {},
    cells: [cell('code', 'import time\ntime.sleep(900)')]
  };
  const put = await page.request.put(`/api/contents/${NOTEBOOK}`, {
    data: { type: 'notebook', format: 'json', content }
  });
  expect(put.ok()).toBe(true);
  const usage = await (await page.request.get('/trainhub/api/usage/panel')).json();
  const slots: number = usage.quotas.find(
    (q: { resource: string }) => q.resource === 'cpu slots'
  ).nominal;
  const holder = await submit(page, 'density-holds-every-slot', slots);
  const waiting = [];
  for (let i = 0; i < WAITING; i++) {
    waiting.push(await submit(page, `density-waits-${String(i).padStart(2, '0')}`, 1));
  }

  await page.sidebar.openTab('trainhub-jobs');
  const panel = page.locator('#trainhub-jobs');
  await expect(panel.locator(`[data-job-id="${holder}"]`)).toHaveAttribute(
    'data-state',
    /starting|running/,
    { timeout: 60 * 1000 }
  );
  for (const id of waiting) {
    await expect(panel.locator(`[data-job-id="${id}"] .jp-trainhub-job-wait`)).toContainText(
      /needs 1 CPU slot, 0 free; (next in line|\d+ jobs? ahead)/
    );
  }
  // The window made as tall as it takes for the panel to be 800 pixels high.
  const viewport = page.viewportSize()!;
  const before = (await panel.boundingBox())!.height;
  await page.setViewportSize({
    width: viewport.width,
    height: Math.round(viewport.height + PANEL_HEIGHT - before)
  });
  await expect.poll(async () => Math.round((await panel.boundingBox())!.height)).toBe(PANEL_HEIGHT);

  for (const theme of ['light', 'dark'] as const) {
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    } else {
      await page.theme.setLightTheme();
    }
    await page.mouse.move(0, 0);
    if (theme === 'light') {
      await panel.screenshot({ path: path.join(SCREENSHOTS, 'jobs-panel-busy.png') });
    }
    const seen = await measure(page);
    expect(Math.round(seen.height), `panel height, ${theme} theme`).toBe(PANEL_HEIGHT);
    expect(seen.shown, `jobs shown whole, ${theme} theme`).toBeGreaterThanOrEqual(WAITING);
    expect(seen.cut, `wait sentences cut, ${theme} theme`).toEqual([]);
  }
  await page.theme.setLightTheme();
});
