/** Tags and note of a job, changed after submission in JupyterLab's own dialog. */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { parseTags } from '../joblist';
import { IJobEdit, IJobSummary } from '../models';

class EditBody extends Widget implements Dialog.IBodyWidget<IJobEdit> {
  private readonly tags: HTMLInputElement;
  private readonly note: HTMLTextAreaElement;

  constructor(job: IJobSummary) {
    super();
    this.addClass('jp-trainhub-edit-body');
    const tagsLabel = document.createElement('label');
    tagsLabel.textContent = 'Tags (separated by commas or spaces)';
    this.tags = document.createElement('input');
    this.tags.className = 'jp-mod-styled jp-trainhub-edit-tags';
    this.tags.name = 'tags';
    this.tags.value = (job.tags ?? []).join(', ');
    tagsLabel.appendChild(this.tags);
    const noteLabel = document.createElement('label');
    noteLabel.textContent = 'Note';
    this.note = document.createElement('textarea');
    this.note.className = 'jp-mod-styled jp-trainhub-edit-note';
    this.note.name = 'note';
    this.note.rows = 4;
    this.note.maxLength = 2000;
    this.note.value = job.note ?? '';
    noteLabel.appendChild(this.note);
    this.node.append(tagsLabel, noteLabel);
  }

  getValue(): IJobEdit {
    return { tags: parseTags(this.tags.value), note: this.note.value.trim() };
  }
}

/** Ask for a job's new tags and note; null when the person cancels. */
export async function showEditDialog(job: IJobSummary): Promise<IJobEdit | null> {
  const result = await showDialog({
    title: `Tags and note of ${job.name}`,
    body: new EditBody(job),
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Save' })],
    focusNodeSelector: 'input'
  });
  return result.button.accept ? result.value : null;
}
