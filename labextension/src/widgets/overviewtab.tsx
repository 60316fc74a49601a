/**
 * The job view's Overview tab: state and actions, progress or result, summary, parameters,
 * spec, timeline and lineage.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { suspendedLine } from '../suspend';
import { formatElapsed, formatTime, useNow, waitExplanation } from '../format';
import { dedupeTimeline, describeEvent, parameterRows, specRows } from '../jobsummary';
import { IDescribeJob, TERMINAL_STATES } from '../models';
import { sharingView } from '../sharing';
import { StateBadge } from './statebadge';
import { JobGoodput } from './goodput';
import { lineageFacts } from '../lineagefacts';
import { FailureBox } from './failurebox';
import { IJobViewActions, JobActions, ShareButton, TensorBoardButton } from './jobactions';
import { useJobRecords } from './jobrecords';
import { Folded, KeyValues, text } from './keyvalues';
import { Progress } from './progress';

export function Overview(props: {
  job: IDescribeJob;
  actions: IJobViewActions;
  api: TrainHubAPI;
}): JSX.Element {
  const { job, actions, api } = props;
  const now = useNow();
  const records = useJobRecords(api, job);
  const ended = TERMINAL_STATES.has(job.state);
  const requested = job.timeline.some(e => e.type === 'cancel_requested');
  const [clicked, setCancelling] = React.useState(false);
  const cancelling = !ended && (clicked || requested);
  const v = job.verdict;
  const failed = v && job.state === 'failed' && v.failure_class !== 'cancelled';
  const wait = waitExplanation(job);
  const cancelVerdict = job.state === 'cancelled' && v?.failure_class === 'cancelled' ? v : null;
  const packages = job.lineage?.packages;
  const parameters = parameterRows(job.spec.parameters ?? {}, records.notebookParameters ?? {});
  const sharing = sharingView(job, actions.viewer?.user, actions.viewer?.features);
  return (
    <div className="jp-trainhub-overview" data-state={cancelling ? 'cancelling' : job.state}>
      <div className="jp-trainhub-overview-head">
        <h2 className="jp-trainhub-job-title" title={`${job.name} (${job.id})`}>
          {job.name}
        </h2>
        {cancelling ? (
          <span className="jp-trainhub-state jp-trainhub-state-cancelling">cancelling…</span>
        ) : (
          <StateBadge state={job.state} />
        )}
        <span className="jp-trainhub-muted">{job.id}</span>
        {sharing.label ? (
          <span className="jp-trainhub-shared" data-read-only={sharing.readOnly}>
            {sharing.label}
          </span>
        ) : null}
        <span className="jp-trainhub-overview-actions">
          <TensorBoardButton job={job} actions={actions} />
          <ShareButton job={job} api={api} actions={actions} />
          <JobActions
            job={job}
            api={api}
            actions={actions}
            cancelling={cancelling}
            setCancelling={setCancelling}
          />
        </span>
      </div>
      {wait ? (
        <div className="jp-trainhub-banner jp-trainhub-wait">
          {wait} · {formatElapsed(job, now)}
        </div>
      ) : null}
      {failed ? <FailureBox job={job} verdict={v} actions={actions} /> : null}
      {job.state === 'suspended' ? (
        <div className="jp-trainhub-banner jp-trainhub-suspended">{suspendedLine(job)}</div>
      ) : null}
      {job.state === 'cancelled' ? (
        <div className="jp-trainhub-cancelled">
          Cancelled{cancelVerdict?.reason ? `: ${cancelVerdict.reason}` : ''}
          {job.started_at ? '' : ', before it started'}
        </div>
      ) : null}
      <Progress job={job} records={records} now={now} />
      <JobGoodput job={job} api={api} />
      <section>
        <h3>Summary</h3>
        <KeyValues
          data={{
            user: job.user,
            ...(job.team ? { team: job.team } : {}),
            ...(job.queue ? { queue: job.queue } : {}),
            priority: job.priority,
            processes: `${job.world_size} (${job.spec.resources?.workers ?? 1} worker${
              (job.spec.resources?.workers ?? 1) === 1 ? '' : 's'
            })`,
            ...(job.gpus > 0
              ? { GPUs: `${job.gpus} (${job.assigned_gpus.join(', ') || 'not assigned yet'})` }
              : {}),
            submitted: formatTime(job.created_at),
            ...(job.started_at ? { started: formatTime(job.started_at) } : {}),
            ...(job.finished_at ? { finished: formatTime(job.finished_at) } : {}),
            elapsed: formatElapsed(job, now),
            ...(job.attempt > 0 ? { attempt: job.attempt + 1 } : {}),
            ...(job.resubmitted_from ? { 'resubmitted from': job.resubmitted_from } : {}),
            'job directory': job.job_dir
          }}
        />
        {job.resubmitted_from ? (
          <button
            className="jp-mod-styled jp-trainhub-link"
            onClick={() => actions.openJob(job.resubmitted_from!)}
          >
            Open {job.resubmitted_from}
          </button>
        ) : null}
      </section>
      {parameters.length ? (
        <section>
          <h3>Parameters</h3>
          <table className="jp-trainhub-table jp-trainhub-parameter-table">
            <thead>
              <tr>
                <th>Parameter</th>
                <th>Value</th>
                <th>In the notebook</th>
              </tr>
            </thead>
            <tbody>
              {parameters.map(p => (
                <tr
                  key={p.name}
                  data-parameter={p.name}
                  className={p.changed ? 'jp-mod-changed' : ''}
                >
                  <td>{p.name}</td>
                  <td>{text(p.value)}</td>
                  <td className="jp-trainhub-muted">
                    {'notebook' in p
                      ? p.changed
                        ? text(p.notebook)
                        : 'same'
                      : 'not in the notebook'}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ) : null}
      <section>
        <h3>Spec</h3>
        <KeyValues data={Object.fromEntries(specRows(job.spec))} />
        <Folded summary="Raw spec (JSON)">
          <pre className="jp-trainhub-json">{JSON.stringify(job.spec, null, 2)}</pre>
        </Folded>
      </section>
      <section>
        <h3>Timeline</h3>
        <ol className="jp-trainhub-timeline">
          {dedupeTimeline(job.timeline).map((e, i) => (
            <li key={i}>
              <span className="jp-trainhub-muted">{formatTime(e.time)}</span>{' '}
              <span>{describeEvent(e)}</span>
            </li>
          ))}
        </ol>
      </section>
      {job.lineage ? (
        <section>
          <h3>Lineage</h3>
          <KeyValues data={lineageFacts(job.lineage)} />
          {packages && typeof packages === 'object' ? (
            <Folded summary={`Packages (${Object.keys(packages).length})`}>
              <KeyValues data={packages as Record<string, unknown>} />
            </Folded>
          ) : null}
          <Folded summary="Raw lineage (JSON)">
            <pre className="jp-trainhub-json">{JSON.stringify(job.lineage, null, 2)}</pre>
          </Folded>
        </section>
      ) : null}
    </div>
  );
}
