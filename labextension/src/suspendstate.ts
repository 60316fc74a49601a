/**
 * Which of Suspend and Resume the job view offers, and what it says: pure, so jest tests it
 * without JupyterLab (the dialogs are in suspend.ts).
 */
import { IJobSummary, ITimelineEvent, JobState } from './models';

export type JobRef = Pick<IJobSummary, 'name' | 'id' | 'state'>;

const SUSPENDABLE: ReadonlySet<JobState> = new Set<JobState>([
  'queued',
  'starting',
  'running',
  'retrying'
]);

/** Whether the job view offers Suspend (the job has not ended and is not suspended). */
export function canSuspend(state: JobState): boolean {
  return SUSPENDABLE.has(state);
}

/** Whether the job view offers Resume. */
export function canResume(state: JobState): boolean {
  return state === 'suspended';
}

/** A suspend was asked and the job still runs: the view says `suspending…`. */
export function suspendPending(job: { state: JobState; timeline: ITimelineEvent[] }): boolean {
  if (!canSuspend(job.state)) {
    return false;
  }
  // Only a request after the job's latest state change counts (a resumed job ran again).
  let pending = false;
  for (const e of job.timeline) {
    if (e.type === 'suspend_requested') {
      pending = true;
    } else if (e.type === 'state' && (e as Record<string, unknown>).state === 'suspended') {
      pending = false;
    }
  }
  return pending;
}

/** What the dialog says about a job that is about to be suspended. */
export function suspendQuestion(job: JobRef): string {
  const what =
    job.state === 'queued'
      ? 'It has not started yet: it leaves the queue until you resume it.'
      : 'Its ranks save a checkpoint (what the code registered with checkpoint.on_stop) and ' +
        'stop, and its GPUs are freed; Resume continues it from that checkpoint.';
  return `Suspend ${job.name} (${job.id})? ${what}`;
}

/** The line the view shows under a suspended job's heading. */
export function suspendedLine(job: Pick<IJobSummary, 'suspended_step'>): string {
  const step = job.suspended_step;
  return step === null || step === undefined
    ? 'Suspended before its first checkpoint: Resume starts it from the beginning.'
    : `Suspended at step ${step}: its GPUs are free; Resume continues from that checkpoint.`;
}
