/** The Jobs side panel: every job of this user, live, with why it waits and what it uses. */
import { ReactWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import { formatElapsed, waitExplanation } from '../format';
import { IJobSummary, JOB_STATES, JobState, TERMINAL_STATES } from '../models';
import { JobsModel } from '../jobsmodel';

export interface IJobActions {
  open: (job: IJobSummary) => void;
  cancel: (job: IJobSummary) => Promise<void>;
  resubmit: (job: IJobSummary) => Promise<void>;
}

function useNow(intervalMs = 1000): number {
  const [now, setNow] = React.useState(Date.now() / 1000);
  React.useEffect(() => {
    const t = setInterval(() => setNow(Date.now() / 1000), intervalMs);
    return () => clearInterval(t);
  }, [intervalMs]);
  return now;
}

export function StateBadge(props: { state: JobState }): JSX.Element {
  return (
    <span className={`jp-trainhub-state jp-trainhub-state-${props.state}`}>{props.state}</span>
  );
}

function JobRow(props: { job: IJobSummary; now: number; actions: IJobActions }): JSX.Element {
  const { job, actions } = props;
  const wait = waitExplanation(job);
  const [busy, setBusy] = React.useState(false);
  const run = (fn: () => Promise<void>) => async (e: React.MouseEvent) => {
    e.stopPropagation();
    setBusy(true);
    try {
      await fn();
    } finally {
      setBusy(false);
    }
  };
  return (
    <li
      className="jp-trainhub-job"
      data-job-id={job.id}
      data-state={job.state}
      title={`${job.name} (${job.id}) — ${job.source}`}
      onDoubleClick={() => actions.open(job)}
    >
      <div className="jp-trainhub-job-line">
        <span className="jp-trainhub-job-name">{job.name}</span>
        <StateBadge state={job.state} />
      </div>
      <div className="jp-trainhub-job-meta">
        <span className="jp-trainhub-job-elapsed">{formatElapsed(job, props.now)}</span>
        <span>
          {job.gpus} GPU{job.gpus === 1 ? '' : 's'} · {job.world_size} proc
        </span>
        {job.attempt > 0 ? <span>attempt {job.attempt + 1}</span> : null}
        {job.failure_class && job.failure_class !== job.state ? (
          // "cancelled" is said by the badge already, and is no failure
          <span className="jp-trainhub-failure">{job.failure_class}</span>
        ) : null}
      </div>
      {wait ? <div className="jp-trainhub-job-wait">{wait}</div> : null}
      <div className="jp-trainhub-job-actions">
        <button className="jp-mod-styled jp-trainhub-link" onClick={() => actions.open(job)}>
          Open
        </button>
        {TERMINAL_STATES.has(job.state) ? (
          <button
            className="jp-mod-styled jp-trainhub-link"
            disabled={busy}
            onClick={run(() => actions.resubmit(job))}
          >
            Resubmit
          </button>
        ) : (
          <button
            className="jp-mod-styled jp-trainhub-link jp-trainhub-danger"
            disabled={busy}
            onClick={run(() => actions.cancel(job))}
          >
            Cancel
          </button>
        )}
      </div>
    </li>
  );
}

function JobsList(props: { model: JobsModel; actions: IJobActions }): JSX.Element {
  const { model } = props;
  const [jobs, setJobs] = React.useState<IJobSummary[]>(model.list());
  const [filter, setFilter] = React.useState<'' | JobState | 'active'>('');
  const [status, setStatus] = React.useState(model.connection);
  const now = useNow();
  React.useEffect(() => {
    const onChange = () => setJobs(model.list());
    const onStatus = () => setStatus(model.error ? 'error' : model.connection);
    model.changed.connect(onChange);
    model.statusChanged.connect(onStatus);
    onChange();
    return () => {
      model.changed.disconnect(onChange);
      model.statusChanged.disconnect(onStatus);
    };
  }, [model]);
  const shown = jobs.filter(j =>
    !filter ? true : filter === 'active' ? !TERMINAL_STATES.has(j.state) : j.state === filter
  );
  return (
    <div className="jp-trainhub-jobs">
      <div className="jp-trainhub-jobs-header">
        <h2>Training jobs</h2>
        <select
          className="jp-mod-styled"
          aria-label="Filter by state"
          value={filter}
          onChange={e => setFilter(e.target.value as typeof filter)}
        >
          <option value="">all states</option>
          <option value="active">not finished</option>
          {JOB_STATES.map(s => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <button
          className="jp-mod-styled jp-trainhub-link"
          title="Reload"
          onClick={() => void model.reload()}
        >
          ⟳
        </button>
      </div>
      {status === 'waiting' || status === 'error' ? (
        <div className="jp-trainhub-banner">
          {model.error || 'Live updates interrupted; reconnecting…'}
        </div>
      ) : null}
      {shown.length ? (
        <ul className="jp-trainhub-job-list">
          {shown.map(job => (
            <JobRow key={job.id} job={job} now={now} actions={props.actions} />
          ))}
        </ul>
      ) : (
        <div className="jp-trainhub-empty">
          {jobs.length
            ? 'No job in this state.'
            : 'No jobs yet. Open a notebook and press “Submit as job”.'}
        </div>
      )}
    </div>
  );
}

export class JobsPanel extends ReactWidget {
  constructor(
    private readonly model: JobsModel,
    private readonly actions: IJobActions
  ) {
    super();
    this.id = 'trainhub-jobs';
    this.addClass('jp-trainhub-jobs-panel');
    this.title.caption = 'Training jobs';
  }

  render(): JSX.Element {
    return <JobsList model={this.model} actions={this.actions} />;
  }
}
