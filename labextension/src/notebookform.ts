/**
 * The job form of the open notebook, which the Submit as job and Schedule notebook… commands
 * start from: its parameters cell, the selected cells, and the server's config.
 */
import { Notebook, NotebookPanel } from '@jupyterlab/notebook';

import { IConfig } from './models';
import { IParameter, PARAMETERS_TAG, parseParameterCell } from './parameters';
import { initialForm, ISubmitForm } from './specform';

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

/** What the submit and schedule dialogs open with. */
export interface INotebookForm {
  config: IConfig;
  parameters: IParameter[];
  form: ISubmitForm;
  /** Saves the notebook: the job runs what is on disk, so what the person sees is saved. */
  save: () => Promise<void>;
}

/** The form for `current`, or null (reported) when the server's config cannot be read. */
export async function notebookForm(
  current: NotebookPanel,
  config: () => Promise<IConfig>,
  reportError: (title: string, error: unknown) => void
): Promise<INotebookForm | null> {
  await current.context.ready;
  let cfg: IConfig;
  try {
    cfg = await config();
  } catch (error) {
    reportError('trainhub is not available', error);
    return null;
  }
  const parameters = notebookParameters(current.content);
  const cells = selectedCellIndices(current.content);
  return {
    config: cfg,
    parameters,
    form: initialForm(current.context.path, cfg, parameters, cells),
    save: () => current.context.save()
  };
}
