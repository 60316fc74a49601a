/** The job's own buttons in its view: Cancel, Suspend or Resume, Resubmit, Share, TensorBoard. */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { cancelWithConfirmation, REPLACEMENT_GRACE_MS } from '../cancel';
import { canResume, canSuspend, suspendPending, suspendWithConfirmation } from '../suspend';
import { Feature, ICheckpointInfo, IDescribeJob, IJobSummary, TERMINAL_STATES } from '../models';
import { RegisterWhat } from '../registry';
import { shareButtonLabel, sharingView } from '../sharing';

export interface IJobViewActions {
  /** Open the notebook at a 0-based cell, marking its 1-based line when known. */
  openNotebookAt: (path: string, cellIndex: number | null, line?: number | null) => Promise<void>;
  loadIntoNotebook: (job: IDescribeJob, checkpoint: ICheckpointInfo) => Promise<void>;
  openJob: (jobId: string) => void;
  confirm: (title: string, body: string) => Promise<boolean>;
  error: (title: string, error: unknown) => void;
  /** Resubmit, or fork from a checkpoint (null: the latest), through the submit dialog. */
  rerun?: (job: IDescribeJob, kind: 'resubmit' | 'fork', step?: number | null) => Promise<void>;
  /** Who is looking, and what the server offers (from its config, once known). */
  viewer?: { user: string; features: Feature[] };
  /** Register a checkpoint or output of the job as a model's next version (asks first). */
  registerModel?: (job: IDescribeJob, what: RegisterWhat) => void;
  /** The job changed in place (shared or made private): the view shows it as the server says. */
  changed?: (job: IJobSummary) => void;
  /** Open jobs' event files in TensorBoard, in a main-area tab. */
  openTensorBoard?: (ids: string[]) => void;
}

/**
 * Cancel (asking first, `cancelling…` at once) while the job has not ended, with Suspend or
 * Resume beside it (SuspendOrResume); Resubmit once it has
 * ended, disabled for a moment so that a double-click on Cancel does not press it.
 */
export function JobActions(props: {
  job: IDescribeJob;
  api: TrainHubAPI;
  actions: IJobViewActions;
  cancelling: boolean;
  setCancelling: (on: boolean) => void;
}): JSX.Element {
  const { job, api, actions, cancelling, setCancelling } = props;
  const ended = TERMINAL_STATES.has(job.state);
  const { readOnly } = sharingView(job, actions.viewer?.user, actions.viewer?.features);
  const [armed, setArmed] = React.useState(ended);
  React.useEffect(() => {
    if (!ended) {
      setArmed(false);
      return;
    }
    const t = setTimeout(() => setArmed(true), REPLACEMENT_GRACE_MS);
    return () => clearTimeout(t);
  }, [ended]);
  if (!ended && readOnly) {
    return <></>; // a teammate's job: only its owner stops it
  }
  if (!ended) {
    const cancel = (
      <button
        className="jp-mod-styled jp-Button jp-trainhub-cancel"
        disabled={cancelling}
        onClick={async () => {
          try {
            await cancelWithConfirmation(api, job, { onConfirmed: () => setCancelling(true) });
          } catch (error) {
            setCancelling(false);
            actions.error(`Could not cancel ${job.name}`, error);
          }
        }}
      >
        {cancelling ? 'Cancelling…' : 'Cancel'}
      </button>
    );
    return (
      <>
        <SuspendOrResume job={job} api={api} actions={actions} disabled={cancelling} />
        {cancel}
      </>
    );
  }
  return (
    <button
      className="jp-mod-styled jp-Button jp-trainhub-resubmit"
      disabled={!armed}
      onClick={async () => {
        if (actions.rerun) {
          return actions.rerun(job, 'resubmit');
        }
        try {
          const created = await api.resubmit(job.id);
          actions.openJob(created.id);
        } catch (error) {
          actions.error(`Could not resubmit ${job.name}`, error);
        }
      }}
    >
      Resubmit
    </button>
  );
}

/** Open in TensorBoard: the job's event files, while it runs and after (anyone who may read it). */
export function TensorBoardButton(props: {
  job: IDescribeJob;
  actions: IJobViewActions;
}): JSX.Element | null {
  const { job, actions } = props;
  if (!actions.openTensorBoard) {
    return null;
  }
  return (
    <button
      className="jp-mod-styled jp-Button jp-trainhub-tensorboard"
      title="This job's TensorBoard event files (SummaryWriter's) in TensorBoard"
      onClick={() => actions.openTensorBoard?.([job.id])}
    >
      TensorBoard
    </button>
  );
}

/** The owner's control: share the job with their team (read-only for them), or not. */
export function ShareButton(props: {
  job: IDescribeJob;
  api: TrainHubAPI;
  actions: IJobViewActions;
}): JSX.Element | null {
  const { job, api, actions } = props;
  const [busy, setBusy] = React.useState(false);
  if (!sharingView(job, actions.viewer?.user, actions.viewer?.features).canShare) {
    return null;
  }
  const shared = job.shared === 'team';
  return (
    <button
      className="jp-mod-styled jp-Button jp-trainhub-share"
      aria-pressed={shared}
      disabled={busy}
      title={
        shared
          ? 'Only you will see this job again'
          : `Members of team ${job.team} may read it (logs, metrics, checkpoints, notebook) and run it again as their own; they cannot change or cancel it`
      }
      onClick={async () => {
        setBusy(true);
        try {
          actions.changed?.(await api.editJob(job.id, { shared: shared ? 'private' : 'team' }));
        } catch (error) {
          actions.error(`Could not change the sharing of ${job.name}`, error);
        } finally {
          setBusy(false);
        }
      }}
    >
      {shareButtonLabel(job)}
    </button>
  );
}

/**
 * Suspend next to Cancel (asking first, `Suspending…` until the job is suspended), Resume
 * once it is; errors go to the view's error dialog.
 */
function SuspendOrResume(props: {
  job: IDescribeJob;
  api: TrainHubAPI;
  actions: IJobViewActions;
  disabled: boolean;
}): JSX.Element | null {
  const { job, api, actions, disabled } = props;
  const [busy, setBusy] = React.useState(false);
  const pending = suspendPending(job);
  React.useEffect(() => setBusy(false), [job.state]);
  if (canResume(job.state)) {
    return (
      <button
        className="jp-mod-styled jp-Button jp-mod-accept jp-trainhub-resume"
        disabled={disabled || busy}
        onClick={async () => {
          setBusy(true);
          try {
            await api.resume(job.id);
          } catch (error) {
            setBusy(false);
            actions.error(`Could not resume ${job.name}`, error);
          }
        }}
      >
        {busy ? 'Resuming…' : 'Resume'}
      </button>
    );
  }
  if (!canSuspend(job.state)) {
    return null;
  }
  return (
    <button
      className="jp-mod-styled jp-Button jp-trainhub-suspend"
      disabled={disabled || busy || pending}
      onClick={async () => {
        try {
          await suspendWithConfirmation(api, job, { onConfirmed: () => setBusy(true) });
        } catch (error) {
          setBusy(false);
          actions.error(`Could not suspend ${job.name}`, error);
        }
      }}
    >
      {busy || pending ? 'Suspending…' : 'Suspend'}
    </button>
  );
}
