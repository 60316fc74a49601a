/**
 * Suspending and resuming a job from the job view. Suspend asks first, as Cancel does
 * (cancel.ts): the ranks save through what the training code registered with
 * `trainhub.checkpoint.on_stop`, stop, and give their GPUs back; Resume queues the same job
 * again from that checkpoint.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';

import { TrainHubAPI } from './api';
import { IDescribeJob } from './models';
import { JobRef, suspendQuestion } from './suspendstate';

export {
  canResume,
  canSuspend,
  suspendPending,
  suspendQuestion,
  suspendedLine
} from './suspendstate';

/** JupyterLab's dialog: true when the person confirmed the suspend. */
export async function confirmSuspend(job: JobRef): Promise<boolean> {
  const answer = await showDialog({
    title: 'Suspend job',
    body: suspendQuestion(job),
    buttons: [
      Dialog.cancelButton({ label: 'Keep running' }),
      Dialog.warnButton({ label: 'Suspend job' })
    ],
    defaultButton: 0
  });
  return answer.button.accept;
}

/** Ask, then suspend; null when the person kept it running (as cancelWithConfirmation). */
export async function suspendWithConfirmation(
  api: TrainHubAPI,
  job: JobRef,
  options: { onConfirmed?: () => void } = {}
): Promise<IDescribeJob | null> {
  if (!(await confirmSuspend(job))) {
    return null;
  }
  options.onConfirmed?.();
  return api.suspend(job.id, 'suspended from JupyterLab');
}
