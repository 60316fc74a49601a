// The researcher's whole path in Debian's Chromium (playwright from the UI tests' node_modules):
// log in to the hub, choose a profile, wait for JupyterLab from the notebook pod, open the
// example notebook, Submit as job with two workers, follow the job while Kueue holds it, while
// it runs (logs of both ranks, metrics) and once it succeeded (checkpoints), a fork from one.
// A job holding one of the team's GPUs makes the submitted one wait; cancelling it lets it in.
// argv: <playwright dir> <hub url> <user> <password> <profile> <image> <job image> <shots dir>
//       [<notebook file>]
// With a notebook file (the path through Zero-to-JupyterHub's chart, whose sessions start with
// an empty home): upload it to examples/ from the lab, submit a longer job with no holder, and
// leave once its logs, metrics and a checkpoint show while it runs (no fork), so that the
// session goes idle while the job runs on.
// Prints one JSON line: what it saw, or {error, ...what it saw until then}.
const [pwDir, hubUrl, user, password, profile, image, jobImage, shots, upload] = process.argv.slice(2);
const queue = !upload; // the whole path: a holder makes the job wait, then a fork
const { chromium } = require(pwDir);
const { launch } = require('../browser.cjs');
const NOTEBOOK = 'examples/train_ddp.ipynb';

async function until(what, fn, timeout) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) {
        return last;
      }
    } catch (e) {
      last = String(e);
    }
    await new Promise(r => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

const text = async locator => ((await locator.count()) ? (await locator.first().innerText()) : '');

// A request of the lab's own (its _xsrf cookie), run in the page.
const inLab = (page, url, method, body) =>
  page.evaluate(
    async ([url, method, body]) => {
      const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || '';
      const r = await fetch(url, {
        method,
        headers: { 'Content-Type': 'application/json', 'X-XSRFToken': decodeURIComponent(xsrf) },
        body: JSON.stringify(body)
      });
      return { status: r.status, body: await r.json() };
    },
    [url, method, body]
  );

(async () => {
  const browser = await launch(chromium);
  const result = { steps: [] };
  const shot = async (page, name) => {
    await page.screenshot({ path: `${shots}/${name}.png` });
    result.steps.push(name);
  };
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // What failed between the browser and the servers (a proxy's 503 under load, a request cut
  // off), and each "Server unavailable or unreachable" JupyterLab showed for it: a researcher
  // dismisses it and goes on, and so does this path, reporting both; a server that did stop
  // fails the steps after it.
  result.failedRequests = [];
  const failed = (url, why) => result.failedRequests.push(`${new Date().toISOString()} ${why} ${url}`);
  page.on('requestfailed', r => {
    const why = r.failure()?.errorText || 'failed';
    if (why !== 'net::ERR_ABORTED') {
      failed(r.url(), why); // not the page's own requests cut short as it navigates away
    }
  });
  page.on('response', r => [424, 502, 503, 504].includes(r.status()) && failed(r.url(), r.status()));
  result.connectionLost = 0;
  const lost = page.locator('.jp-Dialog').filter({ hasText: 'Server unavailable or unreachable' });
  await page.addLocatorHandler(lost, async () => {
    result.connectionLost += 1;
    await lost.getByRole('button', { name: 'Dismiss' }).click();
  });
  try {
    // Log in; the spawn form offers the team's pools; choose one without a GPU.
    await page.goto(`${hubUrl}/hub/login`);
    await page.fill('input[name=username]', user);
    await page.fill('input[name=password]', password);
    await Promise.all([page.waitForNavigation(), page.click('input[type=submit], button[type=submit]')]);
    await page.goto(`${hubUrl}/hub/spawn/${user}`);
    await page.waitForSelector('input[name=profile]');
    await page.click(`label[for="profile-item-${profile}"] h3`);
    await page.selectOption(`select[name="profile-option-${profile}--image"]`, image);
    await page.selectOption(`select[name="profile-option-${profile}--gpus"]`, '0');
    await shot(page, 'hub-spawn');
    const spawned = Date.now();
    await Promise.all([page.waitForNavigation(), page.click('form input[type=submit], form button[type=submit]')]);

    // JupyterLab, served by the pod through the proxy; the example notebook opened.
    await page.waitForURL(url => url.pathname.startsWith(`/user/${user}/lab`), { timeout: 300000 });
    await page.waitForSelector('#jupyterlab-splash', { state: 'detached', timeout: 120000 });
    result.labReadyS = (Date.now() - spawned) / 1000;
    const base = `/user/${user}`;
    if (upload) {
      const content = JSON.parse(require('fs').readFileSync(upload, 'utf8'));
      await inLab(page, `${base}/api/contents/examples`, 'PUT', { type: 'directory' });
      const put = await inLab(page, `${base}/api/contents/${NOTEBOOK}`, 'PUT', { type: 'notebook', format: 'json', content });
      if (put.status !== 201 && put.status !== 200) {
        throw new Error(`the upload was refused: ${JSON.stringify(put)}`);
      }
    }
    await page.goto(`${hubUrl}${base}/lab/tree/${NOTEBOOK}`);
    const toolbar = page.locator('.jp-NotebookPanel-toolbar');
    await toolbar.getByText('Submit as job').waitFor({ timeout: 120000 });
    const tab = page.locator('.lm-TabBar-tab[data-id="trainhub-jobs"]');
    if (!(await page.locator('#trainhub-jobs').isVisible())) {
      await tab.click();
    }
    const panel = page.locator('#trainhub-jobs');

    // Another job of the team holds one of its two GPUs (submitted as the lab itself does).
    let holderRow;
    if (queue) {
      const holder = await inLab(page, `${base}/trainhub/api/jobs`, 'POST', {
        name: 'holder',
        source: { path: 'hold.py' },
        image: jobImage,
        resources: { workers: 1, gpus_per_worker: 1, cpu: 0.25, memory: '1Gi' }
      });
      if (holder.status !== 201) {
        throw new Error(`the holder was refused: ${JSON.stringify(holder)}`);
      }
      result.holderId = holder.body.id;
      holderRow = panel.locator(`.jp-trainhub-job[data-job-id="${result.holderId}"]`);
      await until('the holder running', async () => (await holderRow.getAttribute('data-state')) === 'running', 240000);
    }

    // Submit as job: two workers of one GPU each, small CPU and memory, the job image.
    await toolbar.getByText('Submit as job').click();
    const dialog = page.locator('.jp-trainhub-submit-dialog');
    await dialog.locator('input[name="workers"]').fill('2');
    await dialog.locator('input[name="processesPerWorker"]').fill('1');
    await dialog.locator('input[name="gpusPerWorker"]').fill('1');
    await dialog.locator('input[name="cpuPerWorker"]').fill('0.25');
    await dialog.locator('input[name="memoryPerWorker"]').fill('1500Mi');
    await dialog.locator('select[name="image"]').selectOption(jobImage);
    await dialog.locator('input[name="param-epochs"]').fill('1');
    // ~30 s to follow it; without the holder ~120 s, to outlast the idle session
    await dialog.locator('input[name="param-steps_per_epoch"]').fill(queue ? '20' : '120');
    await dialog.locator('input[name="param-step_delay"]').fill(queue ? '1.5' : '1');
    await shot(page, 'hub-submit');
    await dialog.getByRole('button', { name: 'Submit', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });

    // It waits, and the panel says why in Kueue's terms (until Kueue has looked at it, only
    // that it waits for Kueue).
    const row = panel.locator('.jp-trainhub-job').filter({ hasText: 'train-ddp' }).first();
    result.jobId = await until('the job in the panel', () => row.getAttribute('data-job-id'), 60000);
    if (queue) {
      result.waiting = await until(
        "Kueue's reason in the panel",
        async () => {
          const said = (await row.getAttribute('data-state')) === 'queued' && (await text(row.locator('.jp-trainhub-job-wait')));
          return said && said.includes('ClusterQueue') ? said : '';
        },
        120000
      );
      await shot(page, 'hub-waiting');

      // The holder ends: the job is admitted and runs; both ranks' logs arrive.
      await holderRow.getByRole('button', { name: 'Cancel…' }).click();
      await page.locator('.jp-Dialog').getByRole('button', { name: 'Cancel job' }).click();
      await until('the holder cancelled', async () => (await holderRow.getAttribute('data-state')) === 'cancelled', 120000);
    }
    await row.getByRole('button', { name: 'Open' }).click();
    const view = page.locator(`#trainhub-job-${result.jobId}`);
    await view.locator('.lm-TabBar-tab').filter({ hasText: 'Logs' }).click();
    const logs = view.locator('.jp-trainhub-logview');
    await until('rank 0 of 2 in the log', async () => /rank 0 of 2/.test(await text(logs)), 300000);
    result.statesSeen = { firstLog: await row.getAttribute('data-state') };
    await view.locator('.jp-trainhub-logs select[aria-label="Rank"]').selectOption('1');
    await until('rank 1 of 2 in the log', async () => /rank 1 of 2/.test(await text(logs)), 120000);
    await shot(page, 'hub-logs');
    await view.locator('.lm-TabBar-tab').filter({ hasText: 'Metrics' }).click();
    await until('the loss chart', async () => (await view.locator('.jp-trainhub-chart-title').filter({ hasText: 'loss' }).count()) > 0, 180000);
    result.statesSeen.metrics = await row.getAttribute('data-state');
    // Each pod samples its own fake GPU (the device plugin's, NVML in the pod).
    await until('the GPU utilization chart', async () => (await view.locator('.jp-trainhub-chart-title').filter({ hasText: 'GPU utilization' }).count()) > 0, 120000);
    await shot(page, 'hub-metrics');

    // It succeeds; its checkpoints are listed; a fork from one makes a new job. (Without the
    // holder: its first checkpoint, while it runs, and the researcher leaves.)
    if (queue) {
      await until('the job succeeded', async () => (await row.getAttribute('data-state')) === 'succeeded', 420000);
    }
    await view.locator('.lm-TabBar-tab').filter({ hasText: 'Checkpoints' }).click();
    const step19 = view.locator('.jp-trainhub-checkpoints tr[data-step="19"]');
    await step19.waitFor({ timeout: 120000 });
    result.checkpoints = await view.locator('.jp-trainhub-checkpoints tr[data-step]').evaluateAll(
      rows => rows.map(r => Number(r.getAttribute('data-step')))
    );
    result.checkpointsState = await row.getAttribute('data-state');
    await shot(page, 'hub-checkpoints');
    if (queue) {
      await step19.getByRole('button', { name: 'Fork from' }).click();
      const fork = page.locator('.jp-trainhub-submit-dialog');
      // Prefilled from the job (read from the server) before it is submitted.
      result.forkHeader = await until(
        'the fork dialog prefilled',
        async () => {
          const header = await text(fork.locator('.jp-Dialog-header'));
          const workers = await fork.locator('input[name="workers"]').inputValue();
          return header.startsWith('Fork from') && workers === '2' && header;
        },
        60000
      );
      await fork.getByRole('button', { name: 'Submit', exact: true }).click();
      await fork.waitFor({ state: 'detached', timeout: 120000 });
      const forked = panel.locator('.jp-trainhub-job').filter({ hasText: `fork of ${result.jobId}` }).first();
      result.forkId = await until('the fork in the panel', () => forked.getAttribute('data-job-id'), 60000);
      result.forkText = await text(forked);
      await shot(page, 'hub-forked');
    }
  } catch (e) {
    result.error = String(e);
    result.dialog = await text(page.locator('.jp-Dialog')).catch(() => '');
    await page.screenshot({ path: `${shots}/error.png` }).catch(() => undefined);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + '\n');
})();
