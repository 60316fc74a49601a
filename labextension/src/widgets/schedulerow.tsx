/** One schedule in the Schedules panel: what it runs and when, its actions, its history. */
import * as React from 'react';

import {
  ISchedule,
  IScheduleRun,
  lastRunText,
  nextText,
  runOutcome,
  runOutcomeKey,
  runWhen,
  targetPath,
  whenText
} from '../schedules';

/** What the panel's rows do; the plugin fills it in (the server, the job view, the dialogs). */
export interface IScheduleActions {
  pause: (s: ISchedule) => Promise<void>;
  resume: (s: ISchedule) => Promise<void>;
  runNow: (s: ISchedule) => Promise<void>;
  /** Asks first. */
  remove: (s: ISchedule) => Promise<void>;
  openJob: (jobId: string) => void;
  /** A pipeline target's run, as its graph. */
  openPipelineRun: (runId: string) => void;
  /** The Schedule notebook dialog, for the open notebook. */
  create: () => void;
}

function RunRow(props: {
  run: IScheduleRun;
  openJob: (id: string) => void;
  openPipelineRun: (id: string) => void;
}): JSX.Element {
  const { run, openJob, openPipelineRun } = props;
  return (
    <li
      className="jp-trainhub-schedule-run"
      data-run-state={run.state}
      data-outcome={runOutcomeKey(run)}
    >
      <span className="jp-trainhub-schedule-run-when">{runWhen(run)}</span>
      <span className="jp-trainhub-schedule-run-outcome">{runOutcome(run)}</span>
      {run.job_id ? (
        <button
          className="jp-mod-styled jp-trainhub-link"
          title={`Open job ${run.job_id}`}
          onClick={() => openJob(run.job_id as string)}
        >
          {run.job_id}
        </button>
      ) : run.pipeline_run ? (
        <button
          className="jp-mod-styled jp-trainhub-link"
          title={`Open pipeline run ${run.pipeline_run}`}
          onClick={() => openPipelineRun(run.pipeline_run as string)}
        >
          {run.pipeline_run}
        </button>
      ) : null}
    </li>
  );
}

export function ScheduleRow(props: {
  schedule: ISchedule;
  /** Its whole history, once loaded (the list holds the latest runs only). */
  detail: ISchedule | null;
  expanded: boolean;
  onToggle: (id: string) => void;
  actions: IScheduleActions;
}): JSX.Element {
  const { schedule: s, detail, expanded, onToggle, actions } = props;
  const [busy, setBusy] = React.useState(false);
  const act = (f: (s: ISchedule) => Promise<void>) => async () => {
    setBusy(true);
    try {
      await f(s);
    } finally {
      setBusy(false);
    }
  };
  const runs = (detail ?? s).runs;
  return (
    <div
      className="jp-trainhub-side-row jp-trainhub-schedule"
      role="listitem"
      data-schedule-id={s.id}
      data-paused={String(s.paused)}
    >
      <button
        className="jp-trainhub-side-head jp-trainhub-schedule-head"
        aria-expanded={expanded}
        title={expanded ? 'Hide its runs' : 'Show its runs'}
        onClick={() => onToggle(s.id)}
      >
        <span className="jp-trainhub-side-name jp-trainhub-schedule-name">
          {expanded ? '▾' : '▸'} {s.name}
        </span>
        <span className="jp-trainhub-muted jp-trainhub-schedule-target">{targetPath(s)}</span>
        <span className="jp-trainhub-schedule-when" title={s.cron}>
          {whenText(s)}
        </span>
        <span className="jp-trainhub-muted jp-trainhub-schedule-next">{nextText(s)}</span>
        <span className="jp-trainhub-muted jp-trainhub-schedule-last">{lastRunText(s)}</span>
      </button>
      <div className="jp-trainhub-schedule-actions">
        <button
          className="jp-mod-styled jp-trainhub-link"
          disabled={busy}
          onClick={act(s.paused ? actions.resume : actions.pause)}
        >
          {s.paused ? 'Resume' : 'Pause'}
        </button>
        <button
          className="jp-mod-styled jp-trainhub-link"
          disabled={busy}
          onClick={act(actions.runNow)}
        >
          Run now
        </button>
        <button
          className="jp-mod-styled jp-trainhub-link jp-trainhub-danger"
          disabled={busy}
          onClick={act(actions.remove)}
        >
          Delete
        </button>
      </div>
      {expanded ? (
        runs.length ? (
          <ol className="jp-trainhub-schedule-runs" aria-label={`Runs of ${s.name}`}>
            {runs.map((run, i) => (
              <RunRow
                key={`${run.at ?? run.claimed_at}:${i}`}
                run={run}
                openJob={actions.openJob}
                openPipelineRun={actions.openPipelineRun}
              />
            ))}
          </ol>
        ) : (
          <div className="jp-trainhub-empty">No runs yet.</div>
        )
      ) : null}
    </div>
  );
}
