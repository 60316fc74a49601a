/**
 * A job in the main area: Overview, Logs, Metrics, Checkpoints, Outputs, Notebook and Comments
 * tabs.
 */
import { MainAreaWidget, ReactWidget } from '@jupyterlab/apputils';
import { TabPanel } from '@lumino/widgets';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { JobsModel } from '../jobsmodel';
import { IDescribeJob, TERMINAL_STATES } from '../models';
import { stateIcon, stateIconClass } from '../stateicons';
import { LogsTab } from './logstab';
import { MetricsTab } from './metricstab';
import { NotebookTab } from './notebooktab';
import { Outputs } from './outputstab';
import { Checkpoints } from './checkpointstab';
import { CommentsTab } from './commentstab';
import { IJobViewActions } from './jobactions';
import { Overview } from './overviewtab';

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
      this.job ? <Outputs job={this.job} api={api} actions={actions} /> : null
    );
    for (const tab of [
      this.overview,
      this.logs,
      this.metrics,
      this.checkpoints,
      this.outputs,
      new NotebookTab(api, jobId),
      new CommentsTab(api, 'job', jobId)
    ]) {
      content.addWidget(tab);
    }
    content.currentChanged.connect(() => this.startCurrent());
    model.changed.connect(this.onJobsChanged, this);
    void this.refresh();
  }

  /** Select a tab by label (Overview, Logs, Metrics, Checkpoints, Outputs, Notebook, Comments). */
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
