/**
 * Submitting the open notebook: the Submit as job commands (all cells, or the selected ones),
 * the notebook toolbar's button and the cell context menu's entry.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';

import { TrainHubAPI } from './api';
import { placeNotebookCommands } from './notebookbutton';
import { JobsModel } from './jobsmodel';
import { IConfig } from './models';
import { notebookForm } from './notebookform';
import { showSubmitDialog } from './widgets/submitdialog';
import { CommandIDs, trainhubIcon } from './commandids';

/** What submitting needs from the plugin: the server, the jobs model and where jobs show. */
export interface ISubmitContext {
  api: TrainHubAPI;
  model: JobsModel;
  notebooks: INotebookTracker;
  palette: ICommandPalette | null;
  config: () => Promise<IConfig>;
  reportError: (title: string, error: unknown) => void;
  openJob: (jobId: string) => void;
  /** The Jobs panel, shown once a job is submitted. */
  panelId: string;
}

export function registerSubmitCommands(app: JupyterFrontEnd, ctx: ISubmitContext): void {
  const { api, model, notebooks, palette, config, reportError, openJob, panelId } = ctx;
  const submit = async (onlySelected: boolean) => {
    const current = notebooks.currentWidget;
    if (!current) {
      return;
    }
    const opened = await notebookForm(current, config, reportError);
    if (!opened) {
      return;
    }
    if (onlySelected) {
      opened.form.cells = 'selected';
    }
    const job = await showSubmitDialog({ api, ...opened });
    if (job) {
      model.apply([job]);
      app.shell.activateById(panelId);
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
  placeNotebookCommands(app, palette, {
    palette: [CommandIDs.submit, CommandIDs.submitSelected],
    cellMenu: { command: CommandIDs.submitSelected, rank: 100 },
    button: {
      name: 'trainhubSubmit',
      rank: 10,
      command: CommandIDs.submit,
      className: 'jp-trainhub-submit-button',
      label: 'Submit as job'
    }
  });
}
