/** The submit dialog's form state and its translation to a JobSpec (and errors back). */
import { Feature, ICellSelection, IConfig, IFieldError, IJobSpec, Priority } from './models';
import { IParameter, parameterValue } from './parameters';

export const MAX_NAME_LENGTH = 40;

export interface ISubmitForm {
  notebookPath: string;
  name: string;
  image: string;
  workers: string;
  processesPerWorker: string;
  gpusPerWorker: string;
  team: string;
  queue: string;
  priority: Priority;
  /** e.g. 90m, 2h, 1d12h; empty for no limit. */
  maxRuntime: string;
  /** Parameter name -> text as edited. */
  parameters: Record<string, string>;
  cells: 'all' | 'selected';
  selectedCells: number[];
}

/** The form's fields, also the keys field errors are shown under. */
export type FormField =
  | 'name'
  | 'image'
  | 'workers'
  | 'processesPerWorker'
  | 'gpusPerWorker'
  | 'team'
  | 'queue'
  | 'priority'
  | 'maxRuntime'
  | 'parameters'
  | 'cells'
  | 'general';

/** A valid job name from a notebook path (mirrors trainhub.jobs.spec.default_name). */
export function defaultJobName(path: string): string {
  const file = path.split('/').pop() ?? '';
  const dot = file.lastIndexOf('.');
  const stem = (dot > 0 ? file.slice(0, dot) : file).toLowerCase();
  const name = stem
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_NAME_LENGTH)
    .replace(/-+$/g, '');
  return name || 'job';
}

export function has(config: Pick<IConfig, 'features'>, feature: Feature): boolean {
  return config.features.includes(feature);
}

/** Form defaults for a notebook, from the server's config and the parameters cell. */
export function initialForm(
  notebookPath: string,
  config: IConfig,
  parameters: IParameter[],
  selectedCells: number[] = []
): ISubmitForm {
  const team = config.teams[0];
  return {
    notebookPath,
    name: defaultJobName(notebookPath),
    image: config.images[0]?.name ?? '',
    workers: '1',
    processesPerWorker: '1',
    gpusPerWorker: has(config, 'gpus') && config.limits.max_gpus_per_worker > 0 ? '1' : '0',
    team: team?.name ?? '',
    queue: team?.queues[0] ?? '',
    priority: 'normal',
    maxRuntime: '',
    parameters: Object.fromEntries(parameters.map(p => [p.name, p.text])),
    cells: 'all',
    selectedCells
  };
}

/** A count as a number when it is one; otherwise the text, for the server to name the field. */
function count(text: string): number | string {
  const t = text.trim();
  return /^\d+$/.test(t) ? parseInt(t, 10) : t;
}

/**
 * The JobSpec for a form. Only what the backend supports is sent, and only parameters whose
 * text differs from the notebook's own are overridden.
 */
export function formToSpec(
  form: ISubmitForm,
  config: Pick<IConfig, 'features' | 'teams'>,
  defaults: Record<string, string> = {}
): IJobSpec {
  const cells: ICellSelection =
    form.cells === 'selected'
      ? { mode: 'indices', indices: [...form.selectedCells].sort((a, b) => a - b) }
      : { mode: 'all' };
  const parameters: Record<string, unknown> = {};
  for (const [name, text] of Object.entries(form.parameters)) {
    if (text.trim() !== (defaults[name] ?? '').trim()) {
      parameters[name] = parameterValue(text);
    }
  }
  const resources: Record<string, unknown> = {
    workers: has(config, 'multi_node') ? count(form.workers) : 1,
    gpus_per_worker: has(config, 'gpus') ? count(form.gpusPerWorker) : 0
  };
  if (form.processesPerWorker.trim()) {
    resources.processes_per_worker = count(form.processesPerWorker);
  }
  const spec: IJobSpec = {
    name: form.name.trim(),
    source: { kind: 'notebook', path: form.notebookPath, cells },
    parameters,
    resources
  };
  if (form.image) {
    spec.image = form.image;
  }
  if (config.teams.length && form.team) {
    spec.team = form.team;
    if (has(config, 'queues') && form.queue) {
      spec.queue = form.queue;
    }
  }
  if (has(config, 'priority')) {
    spec.priority = form.priority;
  }
  if (form.maxRuntime.trim()) {
    spec.max_runtime = form.maxRuntime.trim();
  }
  return spec;
}

const FIELD_OF_PATH: [RegExp, FormField][] = [
  [/^name$/, 'name'],
  [/^image$/, 'image'],
  [/^resources\.workers$/, 'workers'],
  [/^resources\.processes_per_worker$/, 'processesPerWorker'],
  [/^resources\.gpus_per_worker$/, 'gpusPerWorker'],
  [/^team$/, 'team'],
  [/^queue$/, 'queue'],
  [/^priority$/, 'priority'],
  [/^max_runtime$/, 'maxRuntime'],
  [/^parameters(\.|$)/, 'parameters'],
  [/^source\.cells(\.|$)/, 'cells']
];

/** Group the server's field errors under the form fields they belong to. */
export function errorsByField(errors: IFieldError[]): Partial<Record<FormField, string[]>> {
  const out: Partial<Record<FormField, string[]>> = {};
  for (const e of errors) {
    const match = FIELD_OF_PATH.find(([re]) => re.test(e.field));
    const field: FormField = match ? match[1] : 'general';
    // A resources-wide rule (e.g. processes vs GPUs) reads best next to the processes field.
    const key: FormField =
      field === 'general' && e.field === 'resources' ? 'processesPerWorker' : field;
    const named = (key === 'general' && e.field !== 'spec') || key === 'parameters';
    const message = named ? `${e.field}: ${e.message}` : e.message;
    (out[key] ??= []).push(message);
  }
  return out;
}
