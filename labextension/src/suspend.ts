/**
 * Suspending and resuming a job from the job view. Suspend asks first, as Cancel does
 * (confirmjobaction.ts): the ranks save through what the training code registered with
 * `trainhub.checkpoint.on_stop`, stop, and give their GPUs back; Resume queues the same job
 * again from that checkpoint.
 */
import { TrainHubAPI } from './api';
import { withConfirmation } from './confirmjobaction';
import { IDescribeJob } from './models';
import { JobRef, suspendQuestion } from './suspendstate';

export {
  canResume,
  canSuspend,
  suspendPending,
  suspendQuestion,
  suspendedLine
} from './suspendstate';

/** Ask, then suspend; null when the person kept it running (as cancelWithConfirmation). */
export async function suspendWithConfirmation(
  api: TrainHubAPI,
  job: JobRef,
  options: { onConfirmed?: () => void } = {}
): Promise<IDescribeJob | null> {
  return withConfirmation({
    action: 'Suspend job',
    question: suspendQuestion(job),
    onConfirmed: options.onConfirmed,
    request: () => api.suspend(job.id, 'suspended from JupyterLab')
  });
}
