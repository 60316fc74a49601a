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
  ToolbarButton,
  WidgetTracker
} from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import {
  INotebookModel,
  INotebookTracker,
  Notebook,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { TrainHubAPI } from './api';
import { registerCompare } from './widgets/compareview';
import { registerSweepView } from './widgets/sweepview';
import { registerUsagePanel } from './widgets/usagepanel';
import { justFinished, JobsModel } from './jobsmodel';
import { ICheckpointInfo, IConfig, IDescribeJob, IJobSummary, TERMINAL_STATES } from './models';
import { IParameter, PARAMETERS_TAG, parseParameterCell } from './parameters';
import { ApiError } from './request';
import { loadCheckpointSource } from './notebookcells';
import { initialForm } from './specform';
import { revealCell } from './gotocell';
import { failureNotice } from './jobsummary';
import { IJobViewActions } from './widgets/jobactions';
import { JobView, JobViews } from './widgets/jobview';
import { IJobActions } from './widgets/jobrow';
import { JobsPanel } from './widgets/jobspanel';
import { showEditDialog } from './widgets/editdialog';
import { cancelWithConfirmation } from './cancel';
import { openRerunDialog } from './rerun';
import { showSubmitDialog } from './widgets/submitdialog';
import { executedNotebookPlugin } from './widgets/notebooktab';
import { NoticeWatch, toastOf } from './notices';

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161"><path d="M4 18h3v-6H4v6zm6.5 0h3V8h-3v10zM17 18h3V4h-3v14zM3 20h18v1.5H3z"/></g></svg>`;
export const trainhubIcon = new LabIcon({ name: 'trainhub:jobs', svgstr: ICON_SVG });

/** The palette's category of every trainhub command: typing "trainhub" finds them all. */
export const PALETTE_CATEGORY = 'trainhub: training jobs';

export const CommandIDs = {
  submit: 'trainhub:submit',
  submitSelected: 'trainhub:submit-selected',
  openJobs: 'trainhub:open-jobs',
  openJob: 'trainhub:open-job',
  cancelJob: 'trainhub:cancel-job',
  /** Registered by the compare view (args `{ids}`) and the sweep view (args `{sweepId}`). */
  compare: 'trainhub:compare',
  openSweep: 'trainhub:open-sweep'
} as const;

/** The cell tagged `parameters`, read from the open notebook. */
export function notebookParameters(notebook: Notebook): IParameter[] {
  const cells = notebook.model?.cells;
  if (!cells) {
    return [];
  }
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    const tags = cell.getMetadata('tags');
    if (cell.type === 'code' && Array.isArray(tags) && tags.includes(PARAMETERS_TAG)) {
      return parseParameterCell(cell.sharedModel.getSource());
    }
  }
  return [];
}

/** 0-based indices of the selected cells (the active one when nothing else is selected). */
export function selectedCellIndices(notebook: Notebook): number[] {
  const out: number[] = [];
  notebook.widgets.forEach((cell, i) => {
    if (notebook.isSelectedOrActive(cell)) {
      out.push(i);
    }
  });
  return out;
}

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

    // Resume and resubmit open the submit dialog prefilled from the job (rerun.ts).
    const rerun = async (
      jobId: string,
      kind: 'resubmit' | 'resume',
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

    const submit = async (onlySelected: boolean) => {
      const current = notebooks.currentWidget;
      if (!current) {
        return;
      }
      await current.context.ready;
      let cfg: IConfig;
      try {
        cfg = await config();
      } catch (error) {
        reportError('trainhub is not available', error);
        return;
      }
      const parameters = notebookParameters(current.content);
      const form = initialForm(
        current.context.path,
        cfg,
        parameters,
        selectedCellIndices(current.content)
      );
      if (onlySelected) {
        form.cells = 'selected';
      }
      const job = await showSubmitDialog({
        api,
        config: cfg,
        form,
        parameters,
        // The job runs what is on disk: save what the person sees first.
        save: () => current.context.save()
      });
      if (job) {
        model.apply([job]);
        app.shell.activateById(panel.id);
        Notification.info(`Submitted ${job.name} (${job.id}).`, {
          autoClose: 5000,
          actions: [{ label: 'Open', callback: () => void openJob(job.id) }]
        });
      }
    };

    const hasNotebook = () => notebooks.currentWidget !== null;
    app.commands.addCommand(CommandIDs.submit, {
      label: 'Submit as job',
      caption: 'Submit this notebook as a training job',
      icon: trainhubIcon,
      isEnabled: hasNotebook,
      execute: () => submit(false)
    });
    app.commands.addCommand(CommandIDs.submitSelected, {
      label: 'Submit selected cells as job',
      isEnabled: hasNotebook,
      execute: () => submit(true)
    });
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
    for (const command of [
      CommandIDs.submit,
      CommandIDs.submitSelected,
      CommandIDs.openJobs,
      CommandIDs.cancelJob
    ]) {
      palette?.addItem({ command, category: PALETTE_CATEGORY });
    }
    app.contextMenu.addItem({
      command: CommandIDs.submitSelected,
      selector: '.jp-Notebook .jp-Cell',
      rank: 100
    });
    app.docRegistry.addWidgetExtension('Notebook', new SubmitButtonExtension(app));
  }
};

/** Adds the "Submit as job" button to every notebook's toolbar. */
class SubmitButtonExtension implements DocumentRegistry.IWidgetExtension<
  NotebookPanel,
  INotebookModel
> {
  constructor(private readonly app: JupyterFrontEnd) {}

  createNew(panel: NotebookPanel): IDisposable {
    const button = new ToolbarButton({
      className: 'jp-trainhub-submit-button',
      icon: trainhubIcon,
      label: 'Submit as job',
      tooltip: 'Submit this notebook as a training job',
      onClick: () => {
        this.app.shell.activateById(panel.id);
        void this.app.commands.execute(CommandIDs.submit);
      }
    });
    panel.toolbar.insertItem(10, 'trainhubSubmit', button);
    return new DisposableDelegate(() => button.dispose());
  }
}

export default [plugin, executedNotebookPlugin];
