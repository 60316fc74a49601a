// Opens the URL `make start` printed in Debian's Chromium (playwright-core from the UI tests'
// node_modules) and reports what a new user sees: the example notebook, its Submit as job
// button, and the Jobs panel behind its tab in the left sidebar.
// argv: <playwright-core module dir> <url> <screenshot path>
const [pwDir, url, shot] = process.argv.slice(2);
const { chromium } = require(pwDir);
const { reportVisit } = require('../browser.cjs');

reportVisit(chromium, { width: 1400, height: 900 }, async (page, result) => {
  await page.goto(url);
  const button = page.locator('.jp-NotebookPanel-toolbar .jp-trainhub-submit-button');
  await button.waitFor({ state: 'visible', timeout: 180000 });
  result.submitButton = (await button.innerText()).trim();
  result.notebookTab = (
    await page.locator('.jp-mod-current.lm-TabBar-tab .lm-TabBar-tabLabel').first().innerText()
  ).trim();
  const jobsTab = page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="trainhub-jobs"]');
  await jobsTab.waitFor({ state: 'visible', timeout: 30000 });
  result.jobsTabTitle = await jobsTab.getAttribute('title');
  await jobsTab.click();
  const panel = page.locator('#trainhub-jobs');
  await panel.waitFor({ state: 'visible', timeout: 30000 });
  // The panel asked the server for its jobs: a fresh home has none.
  await panel.locator('.jp-trainhub-empty').waitFor({ state: 'visible', timeout: 30000 });
  result.jobsPanel = (await panel.innerText()).trim();
  // The picture is of the notebook as a newcomer reads it: its cells shown, not its spinner.
  const firstCell = page.locator('.jp-NotebookPanel:visible .jp-Cell').first();
  await firstCell.waitFor({ state: 'visible', timeout: 60000 });
  await page.screenshot({ path: shot });
});
