/** The trainhub JupyterLab extension: submit notebooks as training jobs and follow them. */
import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  Dialog,
  ICommandPalette,
  Notification,
  showDialog,
  showErrorMessage,
  WidgetTracker
} from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

import { TrainHubAPI } from './api';
import { registerCompare } from './widgets/compareview';
import { registerSweepView } from './widgets/sweepview';
import { registerUsagePanel } from './widgets/usagepanel';
import { registerTensorBoard } from './widgets/tensorboardview';
import { justFinished, JobsModel } from './jobsmodel';
import { ICheckpointInfo, IConfig, IDescribeJob, IJobSummary, TERMINAL_STATES } from './models';
import { ApiError } from './request';
import { loadCheckpointSource } from './notebookcells';
import { revealCell } from './gotocell';
import { failureNotice } from './jobsummary';
import { IJobViewActions } from './widgets/jobactions';
import { JobView, JobViews } from './widgets/jobview';
import { IJobActions } from './widgets/jobrow';
import { JobsPanel } from './widgets/jobspanel';
import { showEditDialog } from './widgets/editdialog';
import { cancelWithConfirmation } from './cancel';
import { openRerunDialog } from './rerun';
import { executedNotebookPlugin } from './widgets/notebooktab';
import { commentsPlugin } from './widgets/commentstab';
import { NoticeWatch, toastOf } from './notices';
import { CommandIDs, PALETTE_CATEGORY, trainhubIcon } from './commandids';
import { registerSubmitCommands } from './submitcommands';
import { registerSchedules } from './schedulecommands';
import { registerModels } from './modelcommands';
import { pipelinePlugin } from './pipelineplugin';

export { CommandIDs, PALETTE_CATEGORY, trainhubIcon } from './commandids';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'trainhub:plugin',
  description: 'Submit notebooks as distributed training jobs and follow them.',
  autoStart: true,
  requires: [INotebookTracker, IDocumentManager],
  optional: [ICommandPalette, ILayoutRestorer, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    docManager: IDocumentManager,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const api = new TrainHubAPI(app.serviceManager.serverSettings);
    registerCompare(app, api);
    registerSweepView(app);
    registerUsagePanel(app, api, palette, PALETTE_CATEGORY);
    registerTensorBoard(app, api);
    const openTensorBoard = (ids: string[]) =>
      void app.commands.execute(CommandIDs.openTensorBoard, { ids });
    const model = new JobsModel(api);
    let configPromise: Promise<IConfig> | null = null;
    const config = (): Promise<IConfig> => {
      configPromise ??= api.config().catch(error => {
        configPromise = null;
        throw error;
      });
      return configPromise;
    };
    const reportError = (title: string, error: unknown) => {
      const message =
        error instanceof ApiError && error.fieldErrors.length
          ? `${error.message}\n${error.fieldErrors.map(e => `${e.field}: ${e.message}`).join('\n')}`
          : ((error as Error).message ?? String(error));
      void showErrorMessage(title, message);
    };

    const views = new WidgetTracker<JobView>({ namespace: 'trainhub-job' });
    const jobViews = new JobViews(
      id => new JobView(id, api, model, viewActions),
      view => {
        void views.add(view);
        app.shell.add(view, 'main');
      },
      id => app.shell.activateById(id)
    );
    const openJob = (jobId: string, tab?: string): JobView => jobViews.open(jobId, tab);

    const openNotebookAt = async (path: string, cellIndex: number | null, line?: number | null) => {
      const widget = docManager.openOrReveal(path);
      if (!(widget instanceof NotebookPanel)) {
        return;
      }
      await widget.context.ready;
      await widget.revealed;
      if (cellIndex !== null) {
        await revealCell(widget.content, cellIndex, line);
      }
    };

    const viewActions: IJobViewActions = {
      openNotebookAt,
      openJob: id => void openJob(id),
      openTensorBoard,
      error: reportError,
      confirm: async (title, body) =>
        (
          await showDialog({
            title,
            body,
            buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
          })
        ).button.accept,
      loadIntoNotebook: async (job: IDescribeJob, checkpoint: ICheckpointInfo) => {
        let panel = notebooks.currentWidget;
        if (!panel && job.spec.source.kind === 'notebook') {
          const opened = docManager.openOrReveal(job.spec.source.path);
          panel = opened instanceof NotebookPanel ? opened : null;
        }
        if (!panel) {
          reportError(
            'No notebook open',
            new Error('Open a notebook to load the checkpoint into.')
          );
          return;
        }
        await panel.context.ready;
        app.shell.activateById(panel.id);
        NotebookActions.insertBelow(panel.content);
        const cell = panel.content.activeCell;
        cell?.model.sharedModel.setSource(loadCheckpointSource(checkpoint, job.name));
      }
    };

    // Fork and resubmit open the submit dialog prefilled from the job (rerun.ts).
    const rerun = async (
      jobId: string,
      kind: 'resubmit' | 'fork',
      step?: number | null
    ): Promise<void> => {
      try {
        const created = await openRerunDialog({
          api,
          config: await config(),
          job: await api.describe(jobId),
          kind,
          step
        });
        if (created) {
          model.apply([created]);
          openJob(created.id);
        }
      } catch (error) {
        reportError(`Could not ${kind} ${jobId}`, error);
      }
    };
    viewActions.rerun = (job, kind, step) => rerun(job.id, kind, step);
    viewActions.changed = job => model.apply([job]);
    viewActions.registerModel = (job, what) =>
      void app.commands.execute(CommandIDs.registerModel, { jobId: job.id, ...what });
    // Whose jobs are whose (a teammate's shared job is read-only), once the server has said.
    void config()
      .then(c => {
        viewActions.viewer = { user: c.user, features: c.features };
      })
      .catch(() => undefined);

    const cancelJob = async (job: IJobSummary): Promise<void> => {
      try {
        const cancelled = await cancelWithConfirmation(api, job);
        if (cancelled) {
          model.apply([cancelled]);
        }
      } catch (error) {
        reportError(`Could not cancel ${job.name}`, error);
      }
    };

    const jobActions: IJobActions = {
      open: (job: IJobSummary) => void openJob(job.id),
      cancel: cancelJob,
      resubmit: (job: IJobSummary) => rerun(job.id, 'resubmit'),
      edit: async (job: IJobSummary) => {
        const change = await showEditDialog(job);
        if (!change) {
          return null;
        }
        try {
          const changed = await api.editJob(job.id, change);
          model.apply([changed]);
          return changed;
        } catch (error) {
          reportError(`Could not change ${job.name}`, error);
          return null;
        }
      },
      // Registered by the compare and sweep views, when they are installed.
      compare: ids => void app.commands.execute(CommandIDs.compare, { ids }),
      canCompare: () => app.commands.hasCommand(CommandIDs.compare),
      openSweep: sweepId => void app.commands.execute(CommandIDs.openSweep, { sweepId }),
      openTensorBoard,
      canOpenSweep: () => app.commands.hasCommand(CommandIDs.openSweep),
      viewer: () => viewActions.viewer
    };

    // What the hub's services tell the people using this server (the idle-GPU warning).
    new NoticeWatch({
      fetch: after => api.notices(after),
      show: notice => {
        const toast = toastOf(notice.level);
        Notification.emit(notice.message, toast.type, { autoClose: toast.autoClose });
      },
      storage: window.localStorage,
      storageKey: `trainhub:notices:${api.settings.baseUrl}`
    });

    const panel = new JobsPanel(model, api, jobActions);
    panel.title.icon = trainhubIcon;
    app.shell.add(panel, 'left', { rank: 650 });
    restorer?.add(panel, 'trainhub-jobs');
    void model.start();

    model.changed.connect((_, changes) => {
      for (const change of changes) {
        if (!justFinished(change)) {
          continue;
        }
        const job = change.job;
        const actions = [{ label: 'Open', callback: () => void openJob(job.id) }];
        if (job.state === 'succeeded') {
          Notification.success(`Job ${job.name} succeeded.`, { autoClose: 8000, actions });
        } else if (job.state === 'failed') {
          void api
            .describe(job.id)
            .then(
              d => d.verdict,
              () => null
            )
            .then(v =>
              Notification.error(failureNotice(job.name, v), { autoClose: false, actions })
            );
        }
      }
    });

    registerSubmitCommands(app, {
      api,
      model,
      notebooks,
      palette,
      config,
      reportError,
      openJob: id => void openJob(id),
      panelId: panel.id
    });
    registerSchedules(app, { api, notebooks, palette, restorer, config, reportError });
    registerModels(app, { api, palette, restorer, reportError });
    app.commands.addCommand(CommandIDs.openJobs, {
      label: 'Open training jobs panel',
      execute: () => app.shell.activateById(panel.id)
    });
    app.commands.addCommand(CommandIDs.openJob, {
      label: args => (args.id ? `Open job ${String(args.id)}` : 'Open training job'),
      execute: args => {
        if (typeof args.id === 'string') {
          openJob(args.id, typeof args.tab === 'string' ? args.tab : undefined);
        }
      }
    });
    // The palette finds these by "trainhub" (the category) and by what they do ("cancel").
    app.commands.addCommand(CommandIDs.cancelJob, {
      label: args => (args.id ? `Cancel training job ${String(args.id)}…` : 'Cancel training job…'),
      caption: 'Cancel the job of the open job view (asks first)',
      isEnabled: args => {
        const id = typeof args.id === 'string' ? args.id : views.currentWidget?.jobId;
        const job = id ? model.get(id) : undefined;
        return !!job && !TERMINAL_STATES.has(job.state);
      },
      execute: async args => {
        const id = typeof args.id === 'string' ? args.id : views.currentWidget?.jobId;
        const job = id ? model.get(id) : undefined;
        if (job) {
          await cancelJob(job);
        }
      }
    });
    for (const command of [CommandIDs.openJobs, CommandIDs.cancelJob]) {
      palette?.addItem({ command, category: PALETTE_CATEGORY });
    }
  }
};

export default [plugin, executedNotebookPlugin, pipelinePlugin, commentsPlugin];
