/**
 * Galata's test, with one addition: when a test ends, whatever jobs it left queued or running
 * are cancelled, so a test that fails half-way never holds the machine's slots for the next.
 */
import { expect, test as galata } from '@jupyterlab/galata';

export { expect };

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
