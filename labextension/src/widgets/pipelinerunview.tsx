/**
 * The run graph (command `trainhub:open-pipeline-run` with `{runId}`): a pipeline run's DAG,
 * each step with its live state (waiting and why, queued or running, succeeded, failed with
 * its verdict, reused from JOB, not run), followed while the run goes on as the sweep view
 * follows a sweep. A click on a step opens its job's view (a reused step: the job whose
 * outputs it reuses). "Run again…" starts a run of one's own from it (a teammate's shared run
 * too), with its parameters to change.
 */
import { ServerConnection } from '@jupyterlab/services';
import * as React from 'react';

import { CommandIDs } from '../commandids';
import { TrainHubAPI } from '../api';
import { formatTime } from '../format';
import { IJobSummary } from '../models';
import {
  cancelRun,
  getRun,
  IDescribeRun,
  IStepView,
  retryRun,
  runDuration,
  startRunAgain,
  runEdges,
  runOutcome,
  stepDetail,
  stepJob,
  stepStateLabel
} from '../pipelineruns';
import { FollowedBody, FollowedView } from './followedview';
import { PipelineCanvas } from './pipelinecanvas';
import { CommentsButton } from './commentsbutton';
import { showRunAgainDialog } from './runagaindialog';

export const OPEN_PIPELINE_RUN_COMMAND = CommandIDs.openPipelineRun;
type Action = 'cancel' | 'retry' | 'again';

class RunBody extends FollowedBody {
  run: IDescribeRun | null = null;
  /** The run's steps' jobs, by id, while it runs (why each waits, how long it has run). */
  jobs = new Map<string, IJobSummary>();

  constructor(
    private readonly openJob: (id: string) => void,
    private readonly act: (what: Action) => void
  ) {
    super();
    this.addClass('jp-trainhub-pipeline-run-body');
  }

  private openStep(view: IStepView | null | undefined): void {
    const job = view ? stepJob(view) : null;
    if (job) {
      this.openJob(job);
    }
  }

  render(): JSX.Element {
    const run = this.run;
    if (!run) {
      return <div className="jp-trainhub-pipeline-runview">{this.error || 'Loading…'}</div>;
    }
    const views = new Map(run.step_views.map(v => [v.step, v]));
    const now = Date.now() / 1000;
    const names = run.step_views.map(v => v.step);
    return (
      <div className="jp-trainhub-pipeline-runview" data-run-id={run.id} data-state={run.state}>
        <h2>
          Pipeline {run.name}, run {run.id}{' '}
          <span className={`jp-trainhub-state jp-trainhub-state-${run.state}`}>{run.state}</span>
        </h2>
        <div className="jp-trainhub-pipeline-facts">
          <span>{run.file ?? 'sent as is'}</span>
          {run.started_from ? <span>again of {run.started_from}</span> : null}
          <span>started {formatTime(run.created_at)}</span>
          <span>{runDuration(run, now)}</span>
          <span className="jp-trainhub-pipeline-outcome">{runOutcome(run)}</span>
          {Object.keys(run.parameters).length ? (
            <span className="jp-trainhub-mono">
              {Object.entries(run.parameters)
                .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
                .join(' ')}
            </span>
          ) : null}
          {run.cache ? null : <span>no cache</span>}
          <CommentsButton kind="pipeline_run" target={run.id} />
          {run.state === 'running' ? (
            <button
              type="button"
              className="jp-mod-styled jp-mod-warn"
              onClick={() => this.act('cancel')}
            >
              Cancel run
            </button>
          ) : null}
          {run.state === 'failed' || run.state === 'cancelled' ? (
            <button type="button" className="jp-mod-styled" onClick={() => this.act('retry')}>
              Retry failed steps
            </button>
          ) : null}
          <button
            type="button"
            className="jp-mod-styled jp-trainhub-run-again"
            onClick={() => this.act('again')}
          >
            Run again…
          </button>
        </div>
        {run.cancel_reason ? <div className="jp-trainhub-muted">{run.cancel_reason}</div> : null}
        {this.error ? <div className="jp-trainhub-error">{this.error}</div> : null}
        <PipelineCanvas
          names={names}
          edges={runEdges(run)}
          info={name => {
            const v = views.get(name)!;
            const label = stepStateLabel(v);
            return {
              subtitle: run.pipeline.steps[name]?.notebook ?? '',
              state: label,
              stateClass: v.status === 'active' ? (v.job_state ?? 'running') : v.status,
              detail: stepDetail(v, v.job_id ? this.jobs.get(v.job_id) : undefined, now)
            };
          }}
          onSelect={name => this.openStep(name ? views.get(name) : null)}
          onOpen={name => this.openStep(views.get(name))}
        />
      </div>
    );
  }
}

export class PipelineRunView extends FollowedView<RunBody> {
  constructor(
    readonly runId: string,
    private readonly settings: ServerConnection.ISettings,
    openJob: (id: string) => void,
    private readonly api: TrainHubAPI = new TrainHubAPI(settings),
    private readonly openRun: (id: string) => void = () => undefined
  ) {
    super(
      new RunBody(openJob, what => void this.act(what)),
      `trainhub-pipeline-run-${runId}`,
      'jp-trainhub-pipeline-runview-widget',
      `Run ${runId}`
    );
    void this.refresh();
  }

  protected async read(): Promise<void> {
    this.content.run = await getRun(this.settings, this.runId);
    if (this.content.run.state === 'running') {
      const page = await this.api.listJobs({ pipelineRun: this.runId, limit: 500 });
      this.content.jobs = new Map(page.jobs.map(j => [j.id, j]));
    }
  }

  protected running(): boolean {
    return !this.content.run || this.content.run.state === 'running';
  }

  private async act(what: Action): Promise<void> {
    if (what === 'again') {
      return this.runAgain();
    }
    await this.attempt(async () => {
      this.content.run = await (what === 'cancel' ? cancelRun : retryRun)(
        this.settings,
        this.runId
      );
      this.content.error = '';
    });
    if (what === 'retry') {
      void this.refresh();
    }
  }

  private async runAgain(): Promise<void> {
    const run = this.content.run;
    const asked = run ? await showRunAgainDialog(run) : null;
    if (asked) {
      await this.attempt(async () => {
        const started = await startRunAgain(this.settings, this.runId, asked);
        this.openRun(started.id);
      });
    }
  }
}
