/**
 * The pipeline editor's side form: a step as the submit dialog's form (specform.ts), and the
 * form's changes back as the step's fields. A step carries the job spec's own parts, so the
 * form is the submit dialog's, turned into a spec by its own formToSpec; only the fields a
 * person changed are written back, so the file keeps what it did not say.
 */
import { IConfig, IFieldError, IJobSpec } from './models';
import { IParameter, pythonLiteral } from './parameters';
import { IStepNode } from './pipelinegraph';
import {
  errorsByField,
  FormField,
  formToSpec,
  initialForm,
  ISubmitForm,
  runtimeText
} from './specform';

/** The form of a step: the notebook's parameters under the step's own values. */
export function stepToForm(
  step: IStepNode,
  config: IConfig,
  parameters: IParameter[]
): ISubmitForm {
  const base = initialForm(step.notebook, config, parameters);
  const d = step.data;
  const res = (d.resources ?? {}) as Record<string, unknown>;
  const cells = (d.cells ?? {}) as { mode?: string; indices?: number[] };
  const given: Record<string, string> = {};
  for (const [k, v] of Object.entries(step.parameters)) {
    given[k] = pythonLiteral(v);
  }
  const text = (v: unknown, fallback: string): string =>
    v === undefined || v === null ? fallback : String(v);
  return {
    ...base,
    name: step.name,
    image: text(d.image, ''),
    workers: text(res.workers, '1'),
    processesPerWorker: text(res.processes_per_worker, '1'),
    gpusPerWorker: text(res.gpus_per_worker, '0'),
    gpuShare: text(res.gpu_share, ''),
    cpuPerWorker: text(res.cpu, ''),
    memoryPerWorker: text(res.memory, ''),
    team: '',
    queue: text(d.queue, ''),
    priority: (d.priority as ISubmitForm['priority']) ?? 'normal',
    maxRuntime: runtimeText(d.max_runtime as IJobSpec['max_runtime']),
    parameters: { ...base.parameters, ...given },
    cells: cells.mode === 'indices' ? 'selected' : 'all',
    selectedCells: cells.mode === 'indices' ? (cells.indices ?? []) : [],
    datasets: Array.isArray(d.datasets)
      ? d.datasets.flatMap(x =>
          typeof x === 'string'
            ? [x]
            : x && typeof x === 'object' && 'name' in x
              ? [String(x.name)]
              : []
        )
      : []
  };
}

/** A step's fields as the spec of its form says them (resources key by key). */
function stepFields(form: ISubmitForm, config: IConfig, defaults: Record<string, string>) {
  const spec = formToSpec(form, { ...config, teams: [] }, defaults);
  const fields: Record<string, unknown> = {
    parameters: spec.parameters ?? {},
    image: spec.image || undefined,
    queue: form.queue || undefined,
    priority: spec.priority,
    max_runtime: spec.max_runtime,
    datasets: spec.datasets?.length ? spec.datasets : undefined,
    cells: spec.source.kind === 'notebook' ? spec.source.cells : undefined
  };
  for (const [k, v] of Object.entries(spec.resources ?? {})) {
    fields[`resources.${k}`] = v;
  }
  return fields;
}

/**
 * What a change of the form writes to the step: `[path, value]` for each field whose value
 * changed (undefined: remove it). Fields the person did not touch are not written.
 */
export function formChanges(
  before: ISubmitForm,
  after: ISubmitForm,
  config: IConfig,
  defaults: Record<string, string> = {}
): [string[], unknown][] {
  const a = stepFields(before, config, defaults);
  const b = stepFields(after, config, defaults);
  const changes: [string[], unknown][] = [];
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (JSON.stringify(a[key]) !== JSON.stringify(b[key])) {
      changes.push([key.split('.'), b[key]]);
    }
  }
  return changes;
}

/** A step's errors (fields relative to the step, as errorsByStep gives them) under the
 * form's fields, as the submit dialog shows the server's. */
export function stepFormErrors(errors: IFieldError[]): Partial<Record<FormField, string[]>> {
  return errorsByField(
    errors.map(e => ({
      field: e.field === 'cells' || e.field.startsWith('cells.') ? `source.${e.field}` : e.field,
      message: e.message
    }))
  );
}
