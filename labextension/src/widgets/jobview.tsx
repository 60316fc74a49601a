/** A job in the main area: Overview, Logs, Metrics and Checkpoints tabs. */
import { MainAreaWidget, ReactWidget } from '@jupyterlab/apputils';
import { TabPanel } from '@lumino/widgets';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { cellLabel, formatBytes, formatDuration, formatElapsed, formatTime, waitExplanation } from '../format';
import { JobsModel } from '../jobsmodel';
import { ICheckpointInfo, IDescribeJob, ITimelineEvent, TERMINAL_STATES } from '../models';
import { LogsTab } from './logstab';
import { MetricsTab } from './metricstab';
import { StateBadge } from './jobspanel';

export interface IJobViewActions {
  openNotebookAt: (path: string, cellIndex: number | null) => Promise<void>;
  loadIntoNotebook: (job: IDescribeJob, checkpoint: ICheckpointInfo) => Promise<void>;
  openJob: (jobId: string) => void;
  confirm: (title: string, body: string) => Promise<boolean>;
  error: (title: string, error: unknown) => void;
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
      return `${String(f.failure_class)} failure: ${String(f.reason ?? '')}`;
    case 'retry':
      return `retry${f.delay ? ` in ${formatDuration(Number(f.delay))}` : ''}${
        f.reason ? `: ${String(f.reason)}` : ''
      }`;
    case 'cancel_requested':
      return `cancel requested${f.reason ? `: ${String(f.reason)}` : ''}`;
    case 'pip_install':
      return `pip install ${String(f.phase ?? '')}${f.ok === false ? ' (failed)' : ''}`;
    default:
      return e.type;
  }
}

function KeyValues(props: { data: Record<string, unknown> }): JSX.Element {
  return (
    <dl className="jp-trainhub-kv">
      {Object.entries(props.data).map(([k, v]) => (
        <React.Fragment key={k}>
          <dt>{k}</dt>
          <dd>{typeof v === 'string' ? v : JSON.stringify(v)}</dd>
        </React.Fragment>
      ))}
    </dl>
  );
}

function Overview(props: {
  job: IDescribeJob;
  actions: IJobViewActions;
  api: TrainHubAPI;
}): JSX.Element {
  const { job, actions } = props;
  const v = job.verdict;
  const wait = waitExplanation(job);
  const source = job.spec.source;
  return (
    <div className="jp-trainhub-overview">
      <div className="jp-trainhub-overview-head">
        <h2 className="jp-trainhub-job-title">{job.name}</h2>
        <StateBadge state={job.state} />
        <span className="jp-trainhub-muted">{job.id}</span>
      </div>
      {wait ? <div className="jp-trainhub-banner">{wait}</div> : null}
      {v ? (
        <section className={`jp-trainhub-verdict jp-trainhub-verdict-${v.failure_class}`}>
          <h3>
            {v.failure_class} failure{v.retriable ? ' (retriable)' : ''}
          </h3>
          <p className="jp-trainhub-verdict-reason">{v.reason}</p>
          {v.exception || v.message ? (
            <pre className="jp-trainhub-verdict-exception">
              {[v.exception, v.message].filter(Boolean).join(': ')}
            </pre>
          ) : null}
          <p className="jp-trainhub-muted">
            {[
              v.cell_index !== null && v.cell_index !== undefined
                ? `${cellLabel(v.cell_index)}${v.line ? `, line ${v.line}` : ''}`
                : '',
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
              onClick={() => void actions.openNotebookAt(source.path, v.cell_index ?? null)}
            >
              Open {source.path} at {cellLabel(v.cell_index)}
            </button>
          ) : null}
        </section>
      ) : null}
      <section>
        <h3>Summary</h3>
        <KeyValues
          data={{
            source: job.source,
            user: job.user,
            team: job.team ?? '—',
            queue: job.queue ?? '—',
            priority: job.priority,
            processes: `${job.world_size} (${job.spec.resources?.workers ?? 1} worker(s))`,
            GPUs: job.gpus ? `${job.gpus} (${job.assigned_gpus.join(', ') || 'not assigned'})` : '0',
            submitted: formatTime(job.created_at),
            started: formatTime(job.started_at),
            finished: formatTime(job.finished_at),
            elapsed: formatElapsed(job, Date.now() / 1000),
            attempt: job.attempt + 1,
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
      <section>
        <h3>Timeline</h3>
        <ol className="jp-trainhub-timeline">
          {job.timeline.map((e, i) => (
            <li key={i}>
              <span className="jp-trainhub-muted">{formatTime(e.time)}</span>{' '}
              <span>{describeEvent(e)}</span>
            </li>
          ))}
        </ol>
      </section>
      <section>
        <h3>Spec</h3>
        <pre className="jp-trainhub-json">{JSON.stringify(job.spec, null, 2)}</pre>
      </section>
      {job.lineage ? (
        <section>
          <h3>Lineage</h3>
          <KeyValues data={job.lineage} />
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
              <button
                className="jp-mod-styled jp-trainhub-link jp-trainhub-danger"
                onClick={async () => {
                  if (await actions.confirm('Delete checkpoint', `Delete the checkpoint of step ${c.step}?`)) {
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
    this.title.closable = true;
    this.overview = new JobReactTab('Overview', () =>
      this.job ? <Overview job={this.job} actions={actions} api={api} /> : <div className="jp-trainhub-empty">Loading…</div>
    );
    this.logs = new LogsTab(api, jobId);
    this.metrics = new MetricsTab(api, jobId);
    this.checkpoints = new JobReactTab('Checkpoints', () =>
      this.job ? (
        <Checkpoints job={this.job} api={api} actions={actions} version={this.checkpointVersion} />
      ) : null
    );
    for (const tab of [this.overview, this.logs, this.metrics, this.checkpoints]) {
      content.addWidget(tab);
    }
    content.currentChanged.connect(() => this.startCurrent());
    model.changed.connect(this.onJobsChanged, this);
    void this.refresh();
  }

  /** Select a tab by label (Overview, Logs, Metrics, Checkpoints). */
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
      this.checkpointVersion++;
    } catch (error) {
      this.actions.error(`Could not load job ${this.jobId}`, error);
    }
    this.overview.update();
    this.checkpoints.update();
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
