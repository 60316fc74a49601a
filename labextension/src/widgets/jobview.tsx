/** A job in the main area: Overview, Logs, Metrics, Checkpoints, Outputs and Notebook tabs. */
import { MainAreaWidget, ReactWidget } from '@jupyterlab/apputils';
import { TabPanel } from '@lumino/widgets';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { cancelWithConfirmation, REPLACEMENT_GRACE_MS } from '../cancel';
import {
  canResume,
  canSuspend,
  suspendedLine,
  suspendPending,
  suspendWithConfirmation
} from '../suspend';
import {
  cellLabel,
  formatBytes,
  formatDuration,
  formatElapsed,
  formatTime,
  useNow,
  waitExplanation
} from '../format';
import { JobsModel } from '../jobsmodel';
import {
  bestCheckpoint,
  cellsDone,
  dedupeTimeline,
  failureWhat,
  failureWhere,
  IScalarSummary,
  latestStep,
  parameterRows,
  specRows,
  summarizeScalars
} from '../jobsummary';
import {
  Feature,
  ICheckpointInfo,
  IDescribeJob,
  IJobSummary,
  IScalarRecord,
  ITimelineEvent,
  IVerdict,
  TERMINAL_STATES
} from '../models';
import { requestAPI } from '../request';
import { shareButtonLabel, sharingView } from '../sharing';
import { stateIcon, stateIconClass } from '../stateicons';
import { LogsTab } from './logstab';
import { MetricsTab } from './metricstab';
import { NotebookTab, openExecutedCell } from './notebooktab';
import { Outputs } from './outputstab';
import { StateBadge } from './jobspanel';
import { JobGoodput } from './goodput';

export interface IJobViewActions {
  /** Open the notebook at a 0-based cell, marking its 1-based line when known. */
  openNotebookAt: (path: string, cellIndex: number | null, line?: number | null) => Promise<void>;
  loadIntoNotebook: (job: IDescribeJob, checkpoint: ICheckpointInfo) => Promise<void>;
  openJob: (jobId: string) => void;
  confirm: (title: string, body: string) => Promise<boolean>;
  error: (title: string, error: unknown) => void;
  /** Resubmit, or resume from a checkpoint (null: the latest), through the submit dialog. */
  rerun?: (job: IDescribeJob, kind: 'resubmit' | 'resume', step?: number | null) => Promise<void>;
  /** Who is looking, and what the server offers (from its config, once known). */
  viewer?: { user: string; features: Feature[] };
  /** The job changed in place (shared or made private): the view shows it as the server says. */
  changed?: (job: IJobSummary) => void;
}

/** One sentence per timeline event. */
export function describeEvent(e: ITimelineEvent): string {
  const f = e as Record<string, unknown>;
  switch (e.type) {
    case 'submitted':
      return `submitted by ${String(f.user ?? '?')}`;
    case 'state':
      return `${String(f.state)}${f.attempt ? ` (attempt ${Number(f.attempt) + 1})` : ''}${
        f.reason ? `: ${String(f.reason)}` : ''
      }`;
    case 'verdict':
      return f.failure_class === 'cancelled'
        ? `cancelled${f.reason ? `: ${String(f.reason)}` : ''}`
        : `${String(f.failure_class)} failure: ${String(f.reason ?? '')}`;
    case 'retry':
      return `retry${f.delay ? ` in ${formatDuration(Number(f.delay))}` : ''}${
        f.reason ? `: ${String(f.reason)}` : ''
      }`;
    case 'cancel_requested':
      return `cancel requested${f.reason ? `: ${String(f.reason)}` : ''}`;
    case 'suspend_requested':
      return `suspend requested${f.reason ? `: ${String(f.reason)}` : ''}`;
    case 'suspended':
      return f.step === null || f.step === undefined
        ? 'suspended (no checkpoint yet)'
        : `suspended at step ${String(f.step)}`;
    case 'pip_install':
      return `pip install ${String(f.phase ?? '')}${f.ok === false ? ' (failed)' : ''}`;
    default:
      return e.type;
  }
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function KeyValues(props: { data: Record<string, unknown> }): JSX.Element {
  return (
    <dl className="jp-trainhub-kv">
      {Object.entries(props.data).map(([k, v]) => (
        <React.Fragment key={k}>
          <dt>{k}</dt>
          <dd>{text(v)}</dd>
        </React.Fragment>
      ))}
    </dl>
  );
}

/** Folded away until asked for: raw JSON, package lists, tracebacks. */
function Folded(props: { summary: string; className?: string; children: React.ReactNode }) {
  return (
    <details className={`jp-trainhub-folded ${props.className ?? ''}`}>
      <summary>{props.summary}</summary>
      {props.children}
    </details>
  );
}

function value(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toPrecision(4);
}

interface IJobRecords {
  scalars: IScalarSummary[];
  cellsDone: number;
  checkpoints: ICheckpointInfo[] | null;
  notebookParameters: Record<string, unknown> | null;
}

/**
 * Rank 0's scalars and the job's events, read incrementally every few seconds while the job
 * is active and once more when it has ended; the checkpoints and the notebook's parameters
 * once each.
 */
function useJobRecords(api: TrainHubAPI, job: IDescribeJob): IJobRecords {
  const active = !TERMINAL_STATES.has(job.state);
  const scalars = React.useRef<IScalarRecord[]>([]);
  const events = React.useRef<Record<string, unknown>[]>([]);
  const offsets = React.useRef({ scalars: 0, events: 0 });
  const [records, setRecords] = React.useState<IJobRecords>({
    scalars: [],
    cellsDone: 0,
    checkpoints: null,
    notebookParameters: null
  });
  React.useEffect(() => {
    let stopped = false;
    const read = async () => {
      try {
        const m = await api.metrics<IScalarRecord>(job.id, 'scalars', offsets.current.scalars);
        const e = await requestAPI<{ events: Record<string, unknown>[]; next_offset: number }>(
          ['jobs', job.id, 'events'],
          { query: { offset: offsets.current.events } },
          api.settings
        );
        if (stopped) {
          return;
        }
        offsets.current = { scalars: m.next_offset, events: e.next_offset };
        scalars.current.push(...m.records.filter(r => (r.rank ?? 0) === 0));
        events.current.push(...e.events);
        setRecords(r => ({
          ...r,
          scalars: summarizeScalars(scalars.current),
          cellsDone: cellsDone(events.current)
        }));
      } catch {
        // The overview still shows the description; the next read tries again.
      }
    };
    void read();
    const timer = active ? setInterval(() => void read(), 3000) : null;
    return () => {
      stopped = true;
      if (timer) {
        clearInterval(timer);
      }
    };
  }, [api, job.id, active]);
  React.useEffect(() => {
    if (active) {
      return;
    }
    void api
      .checkpoints(job.id)
      .then(r => setRecords(s => ({ ...s, checkpoints: r.checkpoints })))
      .catch(() => setRecords(s => ({ ...s, checkpoints: [] })));
  }, [api, job.id, active]);
  const source = job.spec.source;
  React.useEffect(() => {
    if (source.kind !== 'notebook') {
      return;
    }
    void api
      .notebookParameters(source.path)
      .then(r => setRecords(s => ({ ...s, notebookParameters: r.parameters })))
      .catch(() => setRecords(s => ({ ...s, notebookParameters: {} })));
  }, [api, source.kind, source.path]);
  return records;
}

function ScalarTable(props: { scalars: IScalarSummary[]; result: boolean }): JSX.Element {
  return (
    <table className="jp-trainhub-table jp-trainhub-scalars">
      <thead>
        <tr>
          <th>Scalar</th>
          <th>{props.result ? 'Final' : 'Last'}</th>
          {props.result ? <th>Best</th> : null}
        </tr>
      </thead>
      <tbody>
        {props.scalars.map(s => (
          <tr key={s.name} data-scalar={s.name}>
            <td>{s.name}</td>
            <td>
              {value(s.last.value)} <span className="jp-trainhub-muted">at step {s.last.step}</span>
            </td>
            {props.result ? (
              <td>
                {value(s.best.value)}{' '}
                <span className="jp-trainhub-muted">
                  at step {s.best.step} ({s.minimize ? 'lowest' : 'highest'})
                </span>
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** How far a running job is, or what a finished one achieved: the first thing shown. */
function Progress(props: { job: IDescribeJob; records: IJobRecords; now: number }) {
  const { job, records, now } = props;
  const ended = TERMINAL_STATES.has(job.state);
  if (!ended && !job.started_at) {
    return null;
  }
  const step = latestStep(records.scalars);
  const lineageCells = (job.lineage?.source as { cells?: unknown } | undefined)?.cells;
  const total = Array.isArray(lineageCells) ? lineageCells.length : null;
  const facts: Record<string, string> = {
    ...(step !== null ? { [ended ? 'last step' : 'step']: String(step) } : {}),
    ...(job.spec.source.kind === 'notebook'
      ? { cells: `${records.cellsDone}${total !== null ? ` of ${total}` : ''} done` }
      : {}),
    [ended ? 'ran for' : 'running for']: formatElapsed(job, now)
  };
  const best = ended && records.checkpoints ? bestCheckpoint(records.checkpoints) : null;
  if (best) {
    const c = best.checkpoint;
    facts['best checkpoint'] = `step ${c.step}${
      best.metric ? ` (${best.metric} ${value(c.metrics[best.metric])})` : ' (latest)'
    }`;
  }
  return (
    <section className={`jp-trainhub-progress ${ended ? 'jp-mod-result' : ''}`}>
      <h3>{ended ? 'Result' : 'Progress'}</h3>
      <KeyValues data={facts} />
      {records.scalars.length ? (
        <ScalarTable scalars={records.scalars} result={ended} />
      ) : (
        <p className="jp-trainhub-muted">
          {ended ? 'No training scalars were logged.' : 'No training scalars yet.'}
        </p>
      )}
    </section>
  );
}

/** Why a failed job failed: where, what, the traceback folded, and a way to the cell. */
function FailureBox(props: { job: IDescribeJob; verdict: IVerdict; actions: IJobViewActions }) {
  const { job, verdict: v, actions } = props;
  const source = job.spec.source;
  const where = failureWhere(v);
  const traceback = (v as IVerdict & { traceback?: string | null }).traceback;
  return (
    <section className={`jp-trainhub-verdict jp-trainhub-verdict-${v.failure_class}`}>
      <h3>
        {v.failure_class} failure{v.retriable ? ' (retriable)' : ''}
      </h3>
      <p className="jp-trainhub-verdict-reason">
        {v.exception ? `${failureWhat(v)}${where ? ` in ${where}` : ''}` : v.reason}
      </p>
      {traceback ? (
        <Folded summary="Traceback" className="jp-trainhub-traceback">
          <pre className="jp-trainhub-verdict-exception">{traceback}</pre>
        </Folded>
      ) : v.exception || v.message ? (
        <pre className="jp-trainhub-verdict-exception">
          {[v.exception, v.message].filter(Boolean).join(': ')}
        </pre>
      ) : null}
      <p className="jp-trainhub-muted">
        {[
          v.rank !== null && v.rank !== undefined ? `rank ${v.rank}` : '',
          v.exit_code !== null && v.exit_code !== undefined ? `exit code ${v.exit_code}` : '',
          v.signal ?? '',
          `attempt ${(v.attempt ?? 0) + 1}`
        ]
          .filter(Boolean)
          .join(' · ')}
      </p>
      {v.cell_index !== null && v.cell_index !== undefined && source.kind === 'notebook' ? (
        <button
          className="jp-mod-styled jp-mod-accept jp-Button"
          onClick={() => void actions.openNotebookAt(source.path, v.cell_index ?? null, v.line)}
        >
          Open {source.path} at {cellLabel(v.cell_index)}
          {v.line ? `, line ${v.line}` : ''}
        </button>
      ) : null}
      {v.cell_index !== null && v.cell_index !== undefined && source.kind === 'notebook' ? (
        <button
          className="jp-mod-styled jp-Button jp-trainhub-open-executed"
          onClick={() => openExecutedCell(job.id, v.cell_index!)}
        >
          Open the executed notebook there
        </button>
      ) : null}
    </section>
  );
}

/**
 * Cancel (asking first, `cancelling…` at once) while the job has not ended, with Suspend or
 * Resume beside it (SuspendOrResume); Resubmit once it has
 * ended, disabled for a moment so that a double-click on Cancel does not press it.
 */
function JobActions(props: {
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

/** The owner's control: share the job with their team (read-only for them), or not. */
function ShareButton(props: {
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

/** What the job really ran in: the pods' image digest, or the local environment. */
function ranImageText(ran: unknown): string | undefined {
  const r = ran as Record<string, unknown> | null | undefined;
  if (!r) {
    return undefined;
  }
  if (r.backend === 'local') {
    return `local environment ${String(r.environment)} (no container image)`;
  }
  return r.image_id ? String(r.image_id) : undefined;
}

/** One row per dataset: its name, and its fingerprint as lineage recorded it. */
function datasetFacts(datasets: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of Array.isArray(datasets) ? datasets : []) {
    const fp = d?.fingerprint as Record<string, unknown> | undefined;
    const parts = fp
      ? [
          `${String(fp.files)} files, ${String(fp.bytes)} bytes`,
          fp.newest_mtime ? `newest ${String(fp.newest_mtime)}` : '',
          fp.content_hash ? String(fp.content_hash) : ''
        ]
      : [String(d?.error ?? 'no fingerprint')];
    out[`dataset ${String(d?.name)}`] = parts.filter(Boolean).join(' · ');
  }
  return out;
}

function lineageFacts(lineage: Record<string, unknown>): Record<string, unknown> {
  const git = lineage.git as Record<string, unknown> | null | undefined;
  const python = lineage.python as Record<string, unknown> | undefined;
  const torch = lineage.torch as Record<string, unknown> | null | undefined;
  const facts: Record<string, unknown> = {
    created: lineage.created,
    host: lineage.host,
    'content hash': lineage.content_hash,
    git: git?.commit
      ? `${String(git.commit).slice(0, 12)}${git.branch ? ` on ${String(git.branch)}` : ''}${git.dirty ? ' (uncommitted changes)' : ''}`
      : 'not a git checkout',
    python: python?.version,
    torch: torch?.version ?? torch?.torch,
    'image ran': ranImageText(lineage.ran_image),
    ...datasetFacts(lineage.datasets)
  };
  return Object.fromEntries(Object.entries(facts).filter(([, v]) => v !== undefined && v !== null));
}

function Overview(props: {
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

function Checkpoints(props: {
  job: IDescribeJob;
  api: TrainHubAPI;
  actions: IJobViewActions;
  version: number;
}): JSX.Element {
  const { job, api, actions } = props;
  const [items, setItems] = React.useState<ICheckpointInfo[] | null>(null);
  const [error, setError] = React.useState('');
  const load = React.useCallback(async () => {
    try {
      const r = await api.checkpoints(job.id);
      setItems(r.checkpoints);
      setError('');
    } catch (e) {
      setError((e as Error).message);
    }
  }, [api, job.id]);
  const active = !TERMINAL_STATES.has(job.state);
  React.useEffect(() => {
    void load();
    // Running jobs write checkpoints as they go: look again every few seconds.
    const timer = active ? setInterval(() => void load(), 3000) : null;
    return () => {
      if (timer) {
        clearInterval(timer);
      }
    };
  }, [load, props.version, active]);
  if (error) {
    return <div className="jp-trainhub-banner">{error}</div>;
  }
  if (items === null) {
    return <div className="jp-trainhub-empty">Loading checkpoints…</div>;
  }
  if (!items.length) {
    return (
      <div className="jp-trainhub-empty">
        No checkpoints yet. Training code saves them with trainhub.checkpoint.save(...).
      </div>
    );
  }
  const metricNames = [...new Set(items.flatMap(c => Object.keys(c.metrics)))].sort();
  // a teammate's job: its checkpoints are theirs to download and resume from, not to delete
  const { readOnly } = sharingView(job, actions.viewer?.user, actions.viewer?.features);
  return (
    <table className="jp-trainhub-table jp-trainhub-checkpoints">
      <thead>
        <tr>
          <th>Step</th>
          <th>Saved</th>
          <th>Size</th>
          {metricNames.map(m => (
            <th key={m}>{m}</th>
          ))}
          <th>Files</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        {[...items].reverse().map(c => (
          <tr key={c.step} data-step={c.step}>
            <td>{c.step}</td>
            <td>{formatTime(c.time)}</td>
            <td>{formatBytes(c.bytes)}</td>
            {metricNames.map(m => (
              <td key={m}>{m in c.metrics ? Number(c.metrics[m]).toPrecision(4) : ''}</td>
            ))}
            <td>
              {c.files.map(f => (
                <a
                  key={f.name}
                  className="jp-trainhub-file"
                  href={api.checkpointFileUrl(job.id, c.step, f.name)}
                  download={f.name}
                  title={`${f.name} · ${formatBytes(f.bytes)} · sha256 ${f.sha256}`}
                >
                  {f.name}
                </a>
              ))}
            </td>
            <td className="jp-trainhub-row-actions">
              <button
                className="jp-mod-styled jp-trainhub-link"
                onClick={() => void actions.loadIntoNotebook(job, c)}
              >
                Load into notebook
              </button>
              <button
                className="jp-mod-styled jp-trainhub-link"
                onClick={async () => {
                  if (actions.rerun) {
                    return actions.rerun(job, 'resume', c.step);
                  }
                  try {
                    const created = await api.resumeFrom(job.id, c.step);
                    actions.openJob(created.id);
                  } catch (e) {
                    actions.error('Resume failed', e);
                  }
                }}
              >
                Resume from
              </button>
              {readOnly ? null : (
                <button
                  className="jp-mod-styled jp-trainhub-link jp-trainhub-danger"
                  onClick={async () => {
                    if (
                      await actions.confirm(
                        'Delete checkpoint',
                        `Delete the checkpoint of step ${c.step}?`
                      )
                    ) {
                      try {
                        await api.deleteCheckpoint(job.id, c.step);
                      } catch (e) {
                        actions.error('Delete failed', e);
                      }
                      void load();
                    }
                  }}
                >
                  Delete
                </button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

class JobReactTab extends ReactWidget {
  constructor(
    label: string,
    private readonly renderer: () => JSX.Element | null
  ) {
    super();
    this.title.label = label;
    this.addClass('jp-trainhub-tab');
  }

  render(): JSX.Element | null {
    return this.renderer();
  }
}

/** The main-area job view; refreshes its description when the jobs model reports a change. */
export class JobView extends MainAreaWidget<TabPanel> {
  private job: IDescribeJob | null = null;
  private checkpointVersion = 0;
  private readonly overview: JobReactTab;
  private readonly checkpoints: JobReactTab;
  private readonly outputs: JobReactTab;
  readonly logs: LogsTab;
  readonly metrics: MetricsTab;

  constructor(
    readonly jobId: string,
    private readonly api: TrainHubAPI,
    private readonly model: JobsModel,
    private readonly actions: IJobViewActions
  ) {
    const content = new TabPanel();
    content.addClass('jp-trainhub-jobview-tabs');
    super({ content });
    this.id = `trainhub-job-${jobId}`;
    this.addClass('jp-trainhub-jobview');
    this.title.label = jobId;
    this.title.caption = jobId;
    this.title.closable = true;
    this.overview = new JobReactTab('Overview', () =>
      this.job ? (
        <Overview job={this.job} actions={actions} api={api} />
      ) : (
        <div className="jp-trainhub-empty">Loading…</div>
      )
    );
    this.logs = new LogsTab(api, jobId);
    this.metrics = new MetricsTab(api, jobId);
    this.checkpoints = new JobReactTab('Checkpoints', () =>
      this.job ? (
        <Checkpoints job={this.job} api={api} actions={actions} version={this.checkpointVersion} />
      ) : null
    );
    this.outputs = new JobReactTab('Outputs', () =>
      this.job ? <Outputs job={this.job} api={api} /> : null
    );
    for (const tab of [
      this.overview,
      this.logs,
      this.metrics,
      this.checkpoints,
      this.outputs,
      new NotebookTab(api, jobId)
    ]) {
      content.addWidget(tab);
    }
    content.currentChanged.connect(() => this.startCurrent());
    model.changed.connect(this.onJobsChanged, this);
    void this.refresh();
  }

  /** Select a tab by label (Overview, Logs, Metrics, Checkpoints, Outputs, Notebook). */
  select(label: string): void {
    const index = this.content.widgets.findIndex(w => w.title.label === label);
    if (index >= 0) {
      this.content.currentIndex = index;
    }
  }

  async refresh(): Promise<void> {
    try {
      this.job = await this.api.describe(this.jobId);
      this.title.label = this.job.name;
      this.title.caption = `${this.job.name} (${this.job.id}) — ${this.job.state}`;
      this.title.icon = stateIcon(this.job.state);
      this.title.iconClass = stateIconClass(this.job.state);
      this.checkpointVersion++;
    } catch (error) {
      this.actions.error(`Could not load job ${this.jobId}`, error);
    }
    this.overview.update();
    this.checkpoints.update();
    this.outputs.update();
    this.startCurrent();
  }

  dispose(): void {
    this.model.changed.disconnect(this.onJobsChanged, this);
    super.dispose();
  }

  private startCurrent(): void {
    const current = this.content.currentWidget;
    if (current === this.logs) {
      void this.logs.start();
    } else if (current === this.metrics) {
      this.metrics.start();
    } else if (current === this.checkpoints && this.job && !TERMINAL_STATES.has(this.job.state)) {
      this.checkpointVersion++;
      this.checkpoints.update();
    }
  }

  private onJobsChanged(_: JobsModel, changes: { job: { id: string } }[]): void {
    if (changes.some(c => c.job.id === this.jobId)) {
      void this.refresh();
    }
  }
}

/**
 * Opens job views, one per job: opening a job whose view is open (in any dock area) reveals
 * that view instead of adding another tab.
 */
export class JobViews {
  private readonly views = new Map<string, JobView>();

  constructor(
    private readonly create: (jobId: string) => JobView,
    private readonly add: (view: JobView) => void,
    private readonly activate: (id: string) => void
  ) {}

  /** The open view of a job, if any. */
  find(jobId: string): JobView | undefined {
    const view = this.views.get(jobId);
    return view && !view.isDisposed ? view : undefined;
  }

  open(jobId: string, tab?: string): JobView {
    let view = this.find(jobId);
    if (!view) {
      view = this.create(jobId);
      this.views.set(jobId, view);
      view.disposed.connect(() => {
        if (this.views.get(jobId) === view) {
          this.views.delete(jobId);
        }
      });
      this.add(view);
    }
    if (tab) {
      view.select(tab);
    }
    this.activate(view.id);
    return view;
  }
}
