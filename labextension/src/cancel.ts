/**
 * Cancelling a job, the one way every view does it: JupyterLab's dialog asks first (naming
 * the job and what is lost; confirmjobaction.ts), then the request goes out. The Jobs panel
 * and the job view both call `cancelWithConfirmation`.
 */
import { TrainHubAPI } from './api';
import { withConfirmation } from './confirmjobaction';
import { IDescribeJob, IJobSummary } from './models';

/** How long the button that replaces Cancel stays disabled, so a double-click on Cancel
 * does not press it. */
export const REPLACEMENT_GRACE_MS = 1500;

/** What the dialog says about a job that is about to be cancelled. */
export function cancelQuestion(job: Pick<IJobSummary, 'name' | 'id' | 'state'>): string {
  const what =
    job.state === 'queued'
      ? 'It has not started yet: it leaves the queue.'
      : 'Its processes are stopped; what it saved (checkpoints, logs, metrics) is kept.';
  return `Cancel ${job.name} (${job.id})? ${what}`;
}

/**
 * Ask, then cancel. `onConfirmed` runs as soon as the person confirms (to show
 * `cancelling…` before the server answers). Resolves to the job as the server answered, or
 * null when the person kept it running; errors of the request are thrown to the caller.
 */
export async function cancelWithConfirmation(
  api: TrainHubAPI,
  job: Pick<IJobSummary, 'name' | 'id' | 'state'>,
  options: { reason?: string; onConfirmed?: () => void } = {}
): Promise<IDescribeJob | null> {
  return withConfirmation({
    action: 'Cancel job',
    question: cancelQuestion(job),
    onConfirmed: options.onConfirmed,
    request: () => api.cancel(job.id, options.reason ?? 'cancelled from JupyterLab')
  });
}
