/**
 * The browser half of compare_first_paint.py: opens JupyterLab in Chromium and times, from
 * executing `trainhub:compare` to the frame after the view shows all its curves, the view
 * as it ships (curves downsampled by the server) and drawing every point, side by side.
 * Prints one JSON line. Usage: node compare_first_paint.js URL IDS ROUNDS CHROMIUM
 */
const { chromium } = require('playwright');

const [url, idsText, roundsText, executablePath] = process.argv.slice(2);
const ids = idsText.split(',');
const rounds = Number(roundsText);

/**
 * In the page: open the view; milliseconds to the frame after its first paint (the tables)
 * and to the frame after all curves are drawn; then close it.
 */
async function openCompare(page, points) {
  return page.evaluate(
    async ({ ids, points }) => {
      const app = window.jupyterapp;
      const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
      const until = async ready => {
        for (;;) {
          const error = view.node.querySelector('.jp-trainhub-banner');
          if (error) {
            throw new Error(error.textContent);
          }
          if (ready()) {
            await frame();
            return performance.now() - t0;
          }
          await new Promise(r => requestAnimationFrame(r));
        }
      };
      await frame();
      const t0 = performance.now();
      const view = await app.commands.execute('trainhub:compare', { ids, points });
      const first = await until(() => view.node.querySelector('.jp-trainhub-compare-jobs'));
      // uPlot describes the plot (aria-label) once it has drawn it on the canvas.
      const curves = await until(
        () =>
          view.node.querySelectorAll('.jp-trainhub-compare-chart .jp-trainhub-chart-key').length >=
            ids.length &&
          view.node.querySelector('.jp-trainhub-compare-chart .jp-trainhub-chart[aria-label]')
      );
      view.close();
      return { first, curves };
    },
    { ids, points }
  );
}

async function bytes(page, points) {
  return page.evaluate(
    async ({ ids, points }) => {
      const q = `ids=${encodeURIComponent(ids.join(','))}${points ? `&points=${points}` : ''}`;
      const response = await fetch(`/trainhub/api/compare?${q}`);
      return (await response.arrayBuffer()).byteLength;
    },
    { ids, points }
  );
}

(async () => {
  const browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking']
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${url}/lab`);
    await page.waitForFunction(() => window.jupyterapp && window.jupyterapp.commands.hasCommand('trainhub:compare'), null, { timeout: 120000 });
    await page.waitForSelector('#jp-main-dock-panel', { timeout: 120000 });
    const result = { downsampled: { warm: [] }, full: { warm: [] }, userAgent: await page.evaluate(() => navigator.userAgent) };
    result.downsampled.cold = await openCompare(page, undefined);
    for (let i = 0; i < rounds; i++) {
      result.downsampled.warm.push(await openCompare(page, undefined));
      result.full.warm.push(await openCompare(page, 0));
    }
    result.downsampled.bytes = await bytes(page, 2000);
    result.full.bytes = await bytes(page, 0);
    console.log(JSON.stringify(result));
  } finally {
    await browser.close();
  }
})().catch(e => {
  console.error(e);
  process.exit(1);
});
