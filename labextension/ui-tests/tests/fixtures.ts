/**
 * Galata's test, with two additions: Galata's own waits are as patient as the tests' (below),
 * and when a test ends, whatever jobs it left queued or running are cancelled, so a test that
 * fails half-way never holds the machine's slots for the next.
 */
import { expect, test as galata } from '@jupyterlab/galata';
import * as galataUtils from '@jupyterlab/galata/lib/utils';

export { expect };

// Galata's waits that name no time of their own (JupyterLab's plugins started, the Launcher
// tab shown, a file listed) give up after 15 s. On two cores with the images building beside
// the tests, a page's start once took longer than that and failed a test before it began; they
// get the expect timeout of playwright.config.js instead. Galata calls this through its utils
// module's exports, so replacing the export reaches every such wait.
const EXPECT_TIMEOUT_MS = 60 * 1000;
const galataWait = galataUtils.waitForCondition;
Object.assign(galataUtils, {
  waitForCondition: (condition: () => boolean | Promise<boolean>, timeout = EXPECT_TIMEOUT_MS) =>
    galataWait(condition, timeout)
});

const ACTIVE = new Set(['queued', 'starting', 'running', 'retrying']);

export const test = galata.extend<{ cancelJobsLeft: void }>({
  cancelJobsLeft: [
    async ({ request }, use) => {
      await use();
      const listed = await request.get('/trainhub/api/jobs?limit=500');
      expect(listed.ok()).toBe(true);
      const { jobs } = (await listed.json()) as { jobs: { id: string; state: string }[] };
      for (const job of jobs.filter(j => ACTIVE.has(j.state))) {
        await request.post(`/trainhub/api/jobs/${job.id}/cancel`, {
          data: { reason: 'left by a UI test that ended' }
        });
      }
    },
    { auto: true }
  ]
});
