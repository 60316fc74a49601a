/**
 * Submitting the open notebook: the Submit as job commands (all cells, or the selected ones),
 * the notebook toolbar's button and the cell context menu's entry.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { INotebookTracker, Notebook } from '@jupyterlab/notebook';

import { TrainHubAPI } from './api';
import { CommandButtonExtension } from './notebookbutton';
import { JobsModel } from './jobsmodel';
import { IConfig } from './models';
import { IParameter, PARAMETERS_TAG, parseParameterCell } from './parameters';
import { initialForm } from './specform';
import { showSubmitDialog } from './widgets/submitdialog';
import { CommandIDs, PALETTE_CATEGORY, trainhubIcon } from './commandids';

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
  for (const command of [CommandIDs.submit, CommandIDs.submitSelected]) {
    palette?.addItem({ command, category: PALETTE_CATEGORY });
  }
  app.contextMenu.addItem({
    command: CommandIDs.submitSelected,
    selector: '.jp-Notebook .jp-Cell',
    rank: 100
  });
  app.docRegistry.addWidgetExtension(
    'Notebook',
    new CommandButtonExtension(app, {
      name: 'trainhubSubmit',
      rank: 10,
      command: CommandIDs.submit,
      className: 'jp-trainhub-submit-button',
      icon: trainhubIcon,
      label: 'Submit as job',
      tooltip: 'Submit this notebook as a training job'
    })
  );
}
