/**
 * The job view in the light and the dark theme: a real failed job's failure box, a waiting
 * job's "why it waits" banner and a log search's highlight keep WCAG AA text contrast
 * (4.5:1, measured from computed styles), and the main job-view flows work in the dark
 * theme: the failure notification says where and what, go-to-cell selects the failing line,
 * one tab per job with the state's icon and the full name, a cancel that asks first and
 * shows a queued job as cancelled (grey, no run time).
 * Screenshots of both themes (tests/screenshots.ts).
 */
import type { NotebookPanel } from '@jupyterlab/notebook';
import { IJupyterLabPageFixture } from '@jupyterlab/galata';
import { expect, test } from './fixtures';
import * as path from 'path';
import { belowAA } from './contrast';
import { cell, openNewNotebook } from './notebooks';
import { SCREENSHOTS } from './screenshots';

const code = (source: string) => cell('code', source);

/** Submit the notebook in front (several are open here) as job `name`. */
async function submit(
  page: IJupyterLabPageFixture,
  prefilled: string,
  name: string,
  processes: number
) {
  await page
    .locator('.jp-NotebookPanel:visible .jp-NotebookPanel-toolbar')
    .getByText('Submit as job')
    .click();
  const dialog = page.locator('.jp-trainhub-submit-dialog');
  await expect(dialog.locator('input[name="name"]')).toHaveValue(prefilled);
  await dialog.locator('input[name="name"]').fill(name);
  await dialog.locator('input[name="processesPerWorker"]').fill(String(processes));
  await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
  await expect(dialog).toHaveCount(0);
  const row = page.locator('.jp-trainhub-job').filter({ hasText: name }).first();
  await expect(row).toBeVisible();
  return { row, id: (await row.getAttribute('data-job-id'))! };
}

async function openView(
  page: IJupyterLabPageFixture,
  row: ReturnType<IJupyterLabPageFixture['locator']>,
  id: string
) {
  await row.getByRole('button', { name: 'Open' }).click();
  const view = page.locator(`#trainhub-job-${id}`);
  await expect(view).toBeVisible();
  return view;
}

test('readable in both themes; the job view flows in the dark theme', async ({ page }) => {
  test.setTimeout(420 * 1000);
  // A job that fails in cell 3, line 2; one that holds both CPU slots; one that waits.
  await openNewNotebook(page, 'examples/theme_fails.ipynb', [
    cell('markdown', '# Fails on purpose'),
    code('metrics = {"train": 0.9}'),
    code('print("evaluating", flush=True)\nscore = metrics["validation"]')
  ]);
  const failed = await submit(page, 'theme-fails', 'theme-fails', 1);
  await page.sidebar.openTab('filebrowser'); // submitting showed the Jobs panel instead
  await openNewNotebook(page, 'examples/theme_long.ipynb', [
    code(
      'import time\nprint("working on step 1", flush=True)\nfor _ in range(1200):\n    time.sleep(0.5)'
    )
  ]);
  const running = await submit(page, 'theme-long', 'theme-long', 2);
  const waiting = await submit(page, 'theme-long', 'theme-waits', 1);
  await expect(waiting.row).toHaveAttribute('data-state', 'queued');

  // The failure notification says where and what.
  await expect(failed.row).toHaveAttribute('data-state', 'failed', { timeout: 180 * 1000 });
  const toast = page
    .locator('.Toastify__toast')
    .filter({ hasText: "theme-fails failed in cell 3, line 2: KeyError 'validation'" });
  await expect(toast).toBeVisible();
  await expect(running.row).toHaveAttribute('data-state', 'running', { timeout: 180 * 1000 });

  for (const theme of ['light', 'dark'] as const) {
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    } else {
      await page.theme.setLightTheme();
    }
    expect(await page.theme.getTheme()).toBe(
      theme === 'dark' ? 'JupyterLab Dark' : 'JupyterLab Light'
    );

    const failedView = await openView(page, failed.row, failed.id);
    const box = failedView.locator('.jp-trainhub-verdict');
    await expect(box).toContainText("KeyError 'validation' in cell 3, line 2");
    const traceback = box.locator('details.jp-trainhub-traceback');
    if ((await traceback.getAttribute('open')) === null) {
      await traceback.locator('summary').click(); // folded until asked for
    }
    await expect(traceback.locator('pre')).toBeVisible();
    await expect(traceback.locator('pre')).toContainText("KeyError: 'validation'");
    expect(await belowAA(box), `failure box, ${theme} theme`).toEqual([]);
    await page.screenshot({ path: path.join(SCREENSHOTS, `theme-${theme}-failure.png`) });

    const waitingView = await openView(page, waiting.row, waiting.id);
    const banner = waitingView.locator('.jp-trainhub-wait');
    // The reason is said once, and the waiting time ticks.
    await expect(banner).toHaveText(
      /^needs 1 CPU slot, 0 free; next in line · waiting \d+(s|m \d+s)$/
    );
    const before = await banner.textContent();
    await expect(banner).not.toHaveText(before!, { timeout: 5000 });
    expect(await belowAA(banner), `wait banner, ${theme} theme`).toEqual([]);
    expect(
      await belowAA(waitingView.locator('.jp-trainhub-overview-head')),
      `head, ${theme}`
    ).toEqual([]);
    await page.screenshot({ path: path.join(SCREENSHOTS, `theme-${theme}-waiting.png`) });

    const runningView = await openView(page, running.row, running.id);
    await runningView.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
    await expect(runningView.locator('.jp-trainhub-logview')).toContainText('working on step 1', {
      timeout: 120 * 1000
    });
    await runningView.locator('.jp-trainhub-search').fill('working on step');
    await runningView.locator('.jp-trainhub-search').press('Enter');
    const hit = runningView.locator('.jp-trainhub-logview-row.jp-mod-highlighted');
    await expect(hit).toContainText('working on step 1');
    expect(await belowAA(hit), `log search highlight, ${theme} theme`).toEqual([]);
    await page.screenshot({ path: path.join(SCREENSHOTS, `theme-${theme}-logs.png`) });
    await runningView.locator('.lm-TabBar-tab').filter({ hasText: 'Overview' }).click();
  }

  // Dark theme from here on. One tab per job, whichever way it is opened; the tab shows the
  // state's icon and the full name on hover.
  await failed.row.getByRole('button', { name: 'Open' }).click();
  await failed.row.dblclick();
  await toast.getByRole('button', { name: 'Open' }).click();
  const tabs = page
    .locator('#jp-main-dock-panel .lm-TabBar-tab')
    .filter({ hasText: 'theme-fails' });
  await expect(tabs).toHaveCount(1);
  await expect(tabs).toHaveAttribute(
    'title',
    new RegExp(`theme-fails \\(${failed.id}\\) — failed`)
  );
  await expect(tabs.locator('.lm-TabBar-tabIcon svg')).toHaveCount(1);
  await expect.soft(tabs.locator('.jp-trainhub-state-icon-failed')).toHaveCount(1);

  // Go to cell: the notebook opens at cell 3 with its failing line selected.
  const failedView = page.locator(`#trainhub-job-${failed.id}`);
  await failedView.getByRole('button', { name: /at cell 3, line 2/ }).click();
  await expect
    .poll(() =>
      page.evaluate(() => {
        const panel = window.jupyterapp.shell.currentWidget as NotebookPanel | null;
        const editor = panel?.content?.activeCell?.editor;
        const sel = editor?.getSelection();
        return [
          panel?.context?.path,
          panel?.content?.activeCellIndex,
          sel?.start.line,
          sel?.end.column
        ];
      })
    )
    .toEqual(['examples/theme_fails.ipynb', 2, 1, 'score = metrics["validation"]'.length]);

  // Cancel the waiting job from its view: asked first, then cancelled; grey, no run time.
  const waitingView = await openView(page, waiting.row, waiting.id);
  const cancel = waitingView
    .locator('.jp-trainhub-overview-head')
    .getByRole('button', { name: 'Cancel' });
  await cancel.click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog).toContainText('Cancel theme-waits');
  await dialog.getByRole('button', { name: 'Keep running' }).click();
  await expect(waitingView.locator('.jp-trainhub-overview')).toHaveAttribute(
    'data-state',
    'queued'
  );
  await cancel.click();
  await dialog.getByRole('button', { name: 'Cancel job' }).click();
  await expect(waitingView.locator('.jp-trainhub-overview')).toHaveAttribute(
    'data-state',
    /cancelling|cancelled/
  );
  await expect(waiting.row).toHaveAttribute('data-state', 'cancelled', { timeout: 60 * 1000 });
  // The button that replaces Cancel cannot be pressed by the second click of a double-click.
  const resubmit = waitingView.getByRole('button', { name: 'Resubmit' });
  await expect(resubmit).toBeVisible();
  expect(await resubmit.isDisabled()).toBe(true);
  await expect(resubmit).toBeEnabled({ timeout: 5000 });
  const overview = waitingView.locator('.jp-trainhub-overview');
  await expect(overview.locator('.jp-trainhub-cancelled')).toContainText('before it started');
  await expect(overview.locator('.jp-trainhub-verdict')).toHaveCount(0);
  await expect(overview.locator('.jp-trainhub-kv').filter({ hasText: 'ran for' })).toContainText(
    'did not run'
  );
  expect(await belowAA(overview.locator('.jp-trainhub-cancelled')), 'cancelled, dark').toEqual([]);
  const timeline = await overview.locator('.jp-trainhub-timeline li').allTextContents();
  const said = timeline.map(t => t.replace(/^.*?(\d{1,2}:\d{2}:\d{2}\s*(AM|PM)?)\s*/, ''));
  expect(said.filter((t, i) => i > 0 && t === said[i - 1])).toEqual([]);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'theme-dark-cancelled.png') });

  // The running job: cancelled from its view too, so nothing is left running.
  const runningView = await openView(page, running.row, running.id);
  await runningView
    .locator('.jp-trainhub-overview-head')
    .getByRole('button', { name: 'Cancel' })
    .click();
  await page.locator('.jp-Dialog').getByRole('button', { name: 'Cancel job' }).click();
  await expect(running.row).toHaveAttribute('data-state', 'cancelled', { timeout: 60 * 1000 });
  await page.theme.setLightTheme();
});
