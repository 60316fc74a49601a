/** The submit dialog's form state and its translation to a JobSpec (and errors back). */
import {
  Feature,
  ICellSelection,
  ICheckpointRef,
  IConfig,
  IFieldError,
  IGpuShare,
  IJobSpec,
  IResources,
  Priority
} from './models';
import { slugName } from './naming';
import { IParameter, parameterValueFor, pythonLiteral } from './parameters';

/** Running a job again from the dialog: what it runs again, and from where. */
export interface IRerun {
  kind: 'resubmit' | 'fork';
  jobId: string;
  jobName: string;
  /** fork: the checkpoint's step (null: the job's latest checkpoint). */
  step?: number | null;
  /** resubmit of a fork: the checkpoint it started from. */
  forkedFrom?: ICheckpointRef | null;
  /** resubmit of a fork: the step of its own latest checkpoint, if it saved one. */
  latestStep?: number | null;
  /** The name the server will give it (shown until a name of one's own is typed). */
  suggestedName: string;
}

/** Where a resubmitted fork starts. */
export type StartFrom = 'same' | 'latest' | 'scratch';

export interface ISubmitForm {
  notebookPath: string;
  name: string;
  image: string;
  workers: string;
  processesPerWorker: string;
  gpusPerWorker: string;
  /** A share of one GPU ("1/4") the team offers; empty for whole GPUs. */
  gpuShare: string;
  /** CPU cores and memory per worker (e.g. 0.5, 16Gi); empty for the backend's default. */
  cpuPerWorker: string;
  memoryPerWorker: string;
  team: string;
  queue: string;
  priority: Priority;
  /** e.g. 90m, 2h, 1d12h; empty for no limit. */
  maxRuntime: string;
  /** Parameter name -> text as edited. */
  parameters: Record<string, string>;
  cells: 'all' | 'selected';
  selectedCells: number[];
  /** Datasets asked for by name (those the team may read are offered). */
  datasets: string[];
  /** Set when the dialog runs a job again (fork, resubmit). */
  rerun?: IRerun;
  /** For a resubmit of a fork. */
  startFrom?: StartFrom;
}

/** The form's fields, also the keys field errors are shown under. */
export type FormField =
  | 'name'
  | 'image'
  | 'workers'
  | 'processesPerWorker'
  | 'gpusPerWorker'
  | 'gpuShare'
  | 'cpuPerWorker'
  | 'memoryPerWorker'
  | 'team'
  | 'queue'
  | 'priority'
  | 'maxRuntime'
  | 'parameters'
  | 'cells'
  | 'datasets'
  | 'general';

/** A valid job name from a notebook path (mirrors trainhub.jobs.spec.default_name). */
export function defaultJobName(path: string): string {
  const file = path.split('/').pop() ?? '';
  const dot = file.lastIndexOf('.');
  return slugName(dot > 0 ? file.slice(0, dot) : file);
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
    gpuShare: '',
    cpuPerWorker: '',
    memoryPerWorker: '',
    team: team?.name ?? '',
    queue: team?.queues[0] ?? '',
    priority: 'normal',
    maxRuntime: '',
    parameters: Object.fromEntries(parameters.map(p => [p.name, p.text])),
    cells: 'all',
    selectedCells,
    datasets: []
  };
}

/** The shares of a GPU the team's pools offer its jobs (none where the backend has no GPUs). */
export function sharesOffered(
  config: Pick<IConfig, 'features' | 'teams'>,
  team: string
): IGpuShare[] {
  if (!has(config, 'gpus')) {
    return [];
  }
  return config.teams.find(t => t.name === team)?.gpu_shares ?? [];
}

/**
 * What choosing a share ('' for whole GPUs) changes in the form: a share runs one worker with
 * no whole GPUs, in the pool that offers it; back to whole GPUs, one GPU in the team's first
 * queue that is no shared pool.
 */
export function sharePatch(
  config: Pick<IConfig, 'features' | 'teams'>,
  form: Pick<ISubmitForm, 'team' | 'queue'>,
  share: string
): Partial<ISubmitForm> {
  const offered = sharesOffered(config, form.team);
  const chosen = offered.find(s => s.share === share);
  if (chosen) {
    return { gpuShare: share, queue: chosen.queue, workers: '1', gpusPerWorker: '0' };
  }
  const sharedQueues = offered.map(s => s.queue);
  const team = config.teams.find(t => t.name === form.team);
  const whole = team?.queues.find(q => !sharedQueues.includes(q));
  return {
    gpuShare: '',
    gpusPerWorker: '1',
    queue: sharedQueues.includes(form.queue) ? (whole ?? form.queue) : form.queue
  };
}

/** The workers field of a job's resources: "3", or "1:3" for an elastic job. */
export function workerText(res: IResources): string {
  const most = String(res.workers ?? 1);
  return res.min_workers ? `${res.min_workers}:${most}` : most;
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
      parameters[name] = parameterValueFor(defaults[name] ?? '', text);
    }
  }
  const resources: Record<string, unknown> = {
    workers: has(config, 'multi_node') ? count(form.workers) : 1,
    gpus_per_worker: has(config, 'gpus') ? count(form.gpusPerWorker) : 0
  };
  if (form.gpuShare && has(config, 'gpus')) {
    resources.gpu_share = form.gpuShare; // the server names resources.gpu_share if it refuses
  }
  if (form.processesPerWorker.trim()) {
    resources.processes_per_worker = count(form.processesPerWorker);
  }
  if (has(config, 'worker_resources')) {
    const cpu = form.cpuPerWorker.trim();
    if (cpu) {
      resources.cpu = /^\d+(\.\d+)?$/.test(cpu) ? parseFloat(cpu) : cpu;
    }
    if (form.memoryPerWorker.trim()) {
      resources.memory = form.memoryPerWorker.trim();
    }
  }
  const spec: IJobSpec = {
    name: submittedName(form),
    source: { kind: 'notebook', path: form.notebookPath, cells },
    parameters,
    resources
  };
  if (form.image) {
    spec.image = form.image;
  }
  if (form.datasets.length) {
    spec.datasets = [...form.datasets];
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
  [/^resources\.(min_)?workers$/, 'workers'],
  [/^resources\.processes_per_worker$/, 'processesPerWorker'],
  [/^resources\.gpus_per_worker$/, 'gpusPerWorker'],
  [/^resources\.gpu_share$/, 'gpuShare'],
  [/^resources\.cpu$/, 'cpuPerWorker'],
  [/^resources\.memory$/, 'memoryPerWorker'],
  [/^team$/, 'team'],
  [/^queue$/, 'queue'],
  [/^priority$/, 'priority'],
  [/^max_runtime$/, 'maxRuntime'],
  [/^parameters(\.|$)/, 'parameters'],
  [/^source\.cells(\.|$)/, 'cells'],
  [/^datasets(\.|$)/, 'datasets']
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

/** The name a form submits: what was typed, made valid by the server's rule; for a job run
 * again with no name typed, the name the server will give it. */
export function submittedName(form: Pick<ISubmitForm, 'name' | 'rerun'>): string {
  if (!form.name.trim() && form.rerun) {
    return form.rerun.suggestedName;
  }
  return form.name.trim() ? slugName(form.name) : '';
}

/** "Fork from step 74 of train-1a2b": what a rerun runs again, in words. */
export function rerunStatement(rerun: IRerun, startFrom: StartFrom = 'same'): string {
  const of = `${rerun.jobName} (${rerun.jobId})`;
  if (rerun.kind === 'fork') {
    return rerun.step !== null && rerun.step !== undefined
      ? `Fork from step ${rerun.step} of ${of}`
      : `Fork from the latest checkpoint of ${of}`;
  }
  const from = rerun.forkedFrom;
  if (!from || startFrom === 'scratch') {
    return `Resubmit of ${of}${from ? ', from scratch' : ''}`;
  }
  if (startFrom === 'latest' && rerun.latestStep !== null && rerun.latestStep !== undefined) {
    return `Resubmit of ${of}, from its latest checkpoint (step ${rerun.latestStep})`;
  }
  const step =
    from.step !== null && from.step !== undefined ? `step ${from.step}` : 'the latest checkpoint';
  return `Resubmit of ${of}, from the same checkpoint: ${step} of ${from.job_id}`;
}

/** The checkpoint a rerun starts from (null: from scratch). */
export function rerunForkFrom(rerun: IRerun, startFrom: StartFrom = 'same'): ICheckpointRef | null {
  if (rerun.kind === 'fork') {
    return { job_id: rerun.jobId, step: rerun.step ?? null };
  }
  if (!rerun.forkedFrom || startFrom === 'scratch') {
    return null;
  }
  if (startFrom === 'latest') {
    return rerun.latestStep !== null && rerun.latestStep !== undefined
      ? { job_id: rerun.jobId, step: rerun.latestStep }
      : { job_id: rerun.forkedFrom.job_id, step: null };
  }
  return rerun.forkedFrom;
}

/**
 * The resubmit request of a rerun form: the source job and the spec fields to change. The
 * name is left to the server (a distinct one) unless one was typed.
 */
export function rerunRequest(
  form: ISubmitForm,
  config: Pick<IConfig, 'features' | 'teams'>,
  defaults: Record<string, string> = {}
): { jobId: string; overrides: Partial<IJobSpec> } {
  const rerun = form.rerun!;
  const { name, ...rest } = formToSpec(form, config, defaults);
  const overrides: Partial<IJobSpec> = {
    ...rest,
    fork_from: rerunForkFrom(rerun, form.startFrom)
  };
  if (form.name.trim()) {
    overrides.name = name;
  }
  return { jobId: rerun.jobId, overrides };
}

/**
 * The form for running `spec` again: its resources, settings and parameters (each as
 * Python source, over the notebook's own), the name left for the server to choose.
 */
export function formFromSpec(
  spec: IJobSpec,
  config: IConfig,
  parameters: IParameter[],
  rerun: IRerun
): ISubmitForm {
  const base = initialForm(spec.source.path, config, parameters);
  const res = spec.resources ?? {};
  const cells = spec.source.kind === 'notebook' ? spec.source.cells : undefined;
  const given: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.parameters ?? {})) {
    given[k] = pythonLiteral(v);
  }
  return {
    ...base,
    name: '',
    image: spec.image ?? base.image,
    workers: workerText(res),
    processesPerWorker:
      res.processes_per_worker !== null && res.processes_per_worker !== undefined
        ? String(res.processes_per_worker)
        : '',
    gpusPerWorker: String(res.gpus_per_worker ?? 0),
    gpuShare: res.gpu_share ?? '',
    cpuPerWorker: res.cpu !== null && res.cpu !== undefined ? String(res.cpu) : '',
    memoryPerWorker: res.memory ?? '',
    team: spec.team ?? base.team,
    queue: spec.queue ?? base.queue,
    priority: spec.priority ?? base.priority,
    maxRuntime: runtimeText(spec.max_runtime),
    parameters: { ...base.parameters, ...given },
    cells: cells?.mode === 'indices' ? 'selected' : 'all',
    selectedCells: cells?.mode === 'indices' ? (cells.indices ?? []) : [],
    datasets: datasetNames(spec.datasets),
    rerun,
    startFrom: rerun.forkedFrom ? 'same' : undefined
  };
}

/** A stored max_runtime (seconds, or an ISO 8601 duration such as PT1H30M) as 1h30m. */
export function runtimeText(value: IJobSpec['max_runtime']): string {
  if (value === null || value === undefined || value === '') {
    return '';
  }
  let seconds: number;
  if (typeof value === 'number') {
    seconds = value;
  } else {
    const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(value);
    if (!m) {
      return value;
    }
    const [d, h, mi, s] = m.slice(1).map(x => (x ? parseFloat(x) : 0));
    seconds = d * 86400 + h * 3600 + mi * 60 + s;
  }
  const parts: string[] = [];
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1]
  ] as const) {
    const n = Math.floor(seconds / size);
    if (n) {
      parts.push(`${n}${unit}`);
      seconds -= n * size;
    }
  }
  return parts.join('') || '';
}

/** The names of a stored spec's datasets asked for by name (a path of one's own is kept by the
 * resubmit's spec, not offered in the picker). */
export function datasetNames(datasets: IJobSpec['datasets']): string[] {
  return (datasets ?? []).flatMap(d =>
    typeof d === 'string' ? [d] : d.catalog || !d.path ? [d.name] : []
  );
}
