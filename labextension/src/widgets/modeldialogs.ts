/**
 * The registry's small dialogs, in JupyterLab's own Dialog: register as model (name, existing
 * names offered, and a description), move an alias (alias, reason), archive (reason). A field
 * the server would refuse is named under it before the dialog closes.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { aliasError, modelNameError } from '../registry';

interface IField {
  name: string;
  label: string;
  value?: string;
  /** Offered as the input's suggestions (a datalist). */
  options?: string[];
  multiline?: boolean;
  maxLength: number;
  /** The sentence refusing a value ('' when it is fine). */
  check?: (value: string) => string;
}

class FieldsBody extends Widget implements Dialog.IBodyWidget<Record<string, string>> {
  private readonly inputs = new Map<string, HTMLInputElement | HTMLTextAreaElement>();
  private readonly errors = new Map<string, HTMLElement>();

  constructor(
    private readonly fields: IField[],
    intro: string
  ) {
    super();
    this.addClass('jp-trainhub-edit-body');
    this.addClass('jp-trainhub-model-dialog');
    if (intro) {
      const p = document.createElement('p');
      p.className = 'jp-trainhub-form-hint';
      p.textContent = intro;
      this.node.appendChild(p);
    }
    for (const f of fields) {
      const label = document.createElement('label');
      label.textContent = f.label;
      const input = document.createElement(f.multiline ? 'textarea' : 'input');
      input.className = 'jp-mod-styled';
      input.name = f.name;
      input.maxLength = f.maxLength;
      input.value = f.value ?? '';
      if (input instanceof HTMLTextAreaElement) {
        input.rows = 3;
      } else if (f.options?.length) {
        const list = document.createElement('datalist');
        list.id = `trainhub-${f.name}-options-${Math.random().toString(36).slice(2)}`;
        for (const option of f.options) {
          const o = document.createElement('option');
          o.value = option;
          list.appendChild(o);
        }
        input.setAttribute('list', list.id);
        label.appendChild(list);
      }
      const error = document.createElement('div');
      error.className = 'jp-trainhub-field-error';
      label.append(input, error);
      this.node.appendChild(label);
      this.inputs.set(f.name, input);
      this.errors.set(f.name, error);
    }
  }

  getValue(): Record<string, string> {
    return Object.fromEntries([...this.inputs].map(([name, input]) => [name, input.value.trim()]));
  }

  /** Shows each refusal under its field. */
  showErrors(): void {
    for (const f of this.fields) {
      const message = f.check?.(this.inputs.get(f.name)!.value.trim()) ?? '';
      this.errors.get(f.name)!.textContent = message;
    }
  }
}

/**
 * The dialog's values, or null when the person cancels. A refused value opens it again with
 * what was typed and the refusal under its field (a closed Dialog disposes its body).
 */
async function askFields(
  title: string,
  intro: string,
  fields: IField[],
  accept: string
): Promise<Record<string, string> | null> {
  let typed: Record<string, string> | null = null;
  for (;;) {
    const current = fields.map(f => (typed ? { ...f, value: typed[f.name] } : f));
    const body = new FieldsBody(current, intro);
    if (typed) {
      body.showErrors();
    }
    const result = await showDialog({
      title,
      body,
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: accept })],
      focusNodeSelector: 'input, textarea'
    });
    if (!result.button.accept || !result.value) {
      return null;
    }
    typed = result.value;
    if (fields.every(f => !f.check?.(typed![f.name]))) {
      return typed;
    }
  }
}

/** Ask for the model to register into (existing names offered) and the version's description. */
export async function askRegister(
  what: string,
  names: string[]
): Promise<{ name: string; description: string } | null> {
  const values = await askFields(
    'Register as model',
    `Register ${what} as the next version of a model of your team (a new name starts a model).`,
    [
      {
        name: 'model',
        label: 'Model name',
        options: names,
        maxLength: 100,
        check: modelNameError
      },
      { name: 'description', label: 'Description', multiline: true, maxLength: 2000 }
    ],
    'Register'
  );
  return values ? { name: values.model, description: values.description } : null;
}

/**
 * Ask for a change the audit log keeps (moving an alias, archiving): `fields`, then the reason
 * the log keeps with who and when.
 */
async function askReasoned(
  title: string,
  intro: string,
  accept: string,
  fields: IField[] = []
): Promise<Record<string, string> | null> {
  const reason: IField = { name: 'reason', label: 'Reason', multiline: true, maxLength: 500 };
  return askFields(title, intro, [...fields, reason], accept);
}

/** Ask for the alias to point at `version` of `model` and the reason the audit log keeps. */
export async function askMoveAlias(
  model: string,
  version: number,
  aliases: string[]
): Promise<{ alias: string; reason: string } | null> {
  const alias: IField = {
    name: 'alias',
    label: 'Alias',
    options: [...new Set([...aliases, 'staging', 'production'])],
    maxLength: 63,
    check: aliasError
  };
  const values = await askReasoned(
    `Move an alias to ${model} version ${version}`,
    'The alias moves here from where it points now; the audit log keeps who, when and why.',
    'Move alias',
    [alias]
  );
  return values ? { alias: values.alias, reason: values.reason } : null;
}

/** Ask for the reason of archiving (or bringing back) a version. */
export async function askArchive(
  model: string,
  version: number,
  archive: boolean
): Promise<{ reason: string } | null> {
  const verb = archive ? 'Archive' : 'Unarchive';
  const values = await askReasoned(
    `${verb} ${model} version ${version}`,
    archive
      ? 'An archived version stays (by its number) but is no longer the model’s newest.'
      : 'The version becomes a candidate for the model’s newest again.',
    verb
  );
  return values ? { reason: values.reason } : null;
}
