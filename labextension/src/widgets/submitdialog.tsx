/**
 * The Submit as job dialog: the spec's fields, prefilled from the server config and the
 * notebook's parameters cell; "Check" asks the server (dry run) and shows its field
 * messages next to the fields; only what the backend supports is offered.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { IConfig, IDatasetInfo, IDescribeJob, IFieldError, Priority } from '../models';
import { isValidName, slugName } from '../naming';
import { IParameter, parameterErrors, parameterKind } from '../parameters';
import { ApiError } from '../request';
import { useSweep } from './sweepform';
import {
  errorsByField,
  FormField,
  formToSpec,
  has,
  ISubmitForm,
  rerunRequest,
  rerunResumeFrom,
  rerunStatement,
  StartFrom,
  submittedName
} from '../specform';

/** What the Check button does, said where it is pressed. */
export const CHECK_EXPLAINED =
  'Check is a dry run: the server checks the spec, the notebook, the resources and the ' +
  'checkpoint as a submit would, and nothing is submitted.';

export interface ISubmitDialogOptions {
  api: TrainHubAPI;
  config: IConfig;
  form: ISubmitForm;
  parameters: IParameter[];
  /** Saves the notebook; called right before the job is submitted (none for a rerun of a
   * notebook that is not open). */
  save?: () => Promise<void>;
}

type Errors = Partial<Record<FormField, string[]>>;

function FieldErrors(props: { errors?: string[]; id: string }): JSX.Element | null {
  if (!props.errors?.length) {
    return null;
  }
  return (
    <div className="jp-trainhub-field-error" id={props.id} role="alert">
      {props.errors.map((e, i) => (
        <div key={i}>{e}</div>
      ))}
    </div>
  );
}

function Row(props: {
  label: string;
  field: FormField;
  errors: Errors;
  hint?: string;
  children: React.ReactNode;
}): JSX.Element {
  return (
    <label className="jp-trainhub-form-row" data-field={props.field}>
      <span className="jp-trainhub-form-label">{props.label}</span>
      <span className="jp-trainhub-form-control">
        {props.children}
        {props.hint ? <span className="jp-trainhub-form-hint">{props.hint}</span> : null}
        <FieldErrors errors={props.errors[props.field]} id={`trainhub-error-${props.field}`} />
      </span>
    </label>
  );
}

/** The datasets the user's team may read, once (none when the backend has no datasets). */
function useDatasets(api: TrainHubAPI, wanted: boolean): IDatasetInfo[] {
  const [datasets, setDatasets] = React.useState<IDatasetInfo[]>([]);
  React.useEffect(() => {
    if (!wanted) {
      return;
    }
    let live = true;
    api.datasets().then(
      answer => live && setDatasets(answer.datasets),
      () => live && setDatasets([]) // the dialog still submits; a name typed elsewhere is checked
    );
    return () => {
      live = false;
    };
  }, [api, wanted]);
  return datasets;
}

/** Where the chosen datasets appear to the ranks, or how to choose several. */
function datasetHint(offered: IDatasetInfo[], chosen: string[]): string {
  const picked = offered.filter(d => chosen.includes(d.name));
  if (!picked.length) {
    return 'Only the datasets your team may read; Ctrl or Shift to choose several';
  }
  return picked.map(d => `${d.name} at ${d.path} (read-only)`).join('; ');
}

function SubmitForm(props: {
  options: ISubmitDialogOptions;
  onDone: (job: IDescribeJob | null) => void;
}): JSX.Element {
  const { api, config, parameters } = props.options;
  const [form, setForm] = React.useState<ISubmitForm>(props.options.form);
  const [errors, setErrors] = React.useState<Errors>({});
  const [busy, setBusy] = React.useState<'' | 'checking' | 'submitting'>('');
  const [checked, setChecked] = React.useState(false);
  const sweep = useSweep(
    api,
    parameters.map(p => p.name)
  ); // sweepform.tsx
  const defaults = React.useMemo(
    () => Object.fromEntries(parameters.map(p => [p.name, p.text])),
    [parameters]
  );
  const update = (patch: Partial<ISubmitForm>) => {
    setForm(f => ({ ...f, ...patch }));
    setChecked(false);
  };
  const limits = config.limits;
  const team = config.teams.find(t => t.name === form.team);
  const offered = useDatasets(api, has(config, 'datasets'));

  const report = (error: unknown) => {
    if (error instanceof ApiError) {
      const fieldErrors: IFieldError[] = error.fieldErrors.length
        ? error.fieldErrors
        : [{ field: 'spec', message: error.message }];
      setErrors(errorsByField(fieldErrors));
    } else {
      setErrors({ general: [(error as Error).message] });
    }
  };

  const typeErrors = parameterErrors(parameters, form.parameters);
  const rerun = form.rerun;
  const typed = form.name.trim();
  const slug = typed ? slugName(typed) : '';
  const specOf = () => {
    const spec = formToSpec(form, config, defaults);
    if (rerun) {
      spec.resume_from = rerunResumeFrom(rerun, form.startFrom);
    }
    return spec;
  };

  const check = async (): Promise<boolean> => {
    if (Object.keys(typeErrors).length) {
      setErrors({ parameters: Object.entries(typeErrors).map(([k, e]) => `${k}: ${e}`) });
      return false;
    }
    setBusy('checking');
    try {
      await api.validate(specOf());
      setErrors({});
      setChecked(true);
      return true;
    } catch (error) {
      report(error);
      return false;
    } finally {
      setBusy('');
    }
  };

  const submit = async () => {
    if (!(await check())) {
      return;
    }
    setBusy('submitting');
    try {
      await props.options.save?.();
      if (sweep.active && !rerun) {
        const started = await sweep.submit(formToSpec(form, config, defaults));
        return started ? props.onDone(null) : setBusy('');
      }
      let job: IDescribeJob;
      if (rerun) {
        const request = rerunRequest(form, config, defaults);
        job = await api.resubmit(request.jobId, request.overrides);
      } else {
        job = await api.submit(formToSpec(form, config, defaults));
      }
      props.onDone(job);
    } catch (error) {
      report(error);
      setBusy('');
    }
  };

  const number = (field: keyof ISubmitForm, max: number, min = 0) => (
    <input
      className="jp-mod-styled"
      type="number"
      min={min}
      max={max}
      name={field}
      value={form[field] as string}
      onChange={e => update({ [field]: e.target.value } as Partial<ISubmitForm>)}
    />
  );

  return (
    <form
      className="jp-trainhub-submit-form"
      onSubmit={e => {
        e.preventDefault();
        void submit();
      }}
      onKeyDown={e => {
        if (e.key === 'Escape') {
          props.onDone(null);
        }
      }}
    >
      <div className="jp-Dialog-header">
        {rerun ? rerunStatement(rerun, form.startFrom) : `Submit ${form.notebookPath} as a job`}
      </div>
      <div className="jp-trainhub-form-body">
        {rerun ? (
          <div className="jp-trainhub-rerun-source" data-field="source">
            Runs {form.notebookPath} as it is now, with the resources, settings and parameters
            {` ${rerun.jobName}`} ran with, below.
          </div>
        ) : null}
        <Row
          label="Name"
          field="name"
          errors={errors}
          hint={
            typed && !isValidName(typed)
              ? `Submitted as ${slug} (lower-case letters, digits and '-')`
              : rerun && !typed
                ? `Leave empty for ${rerun.suggestedName}, told apart from ${rerun.jobName}`
                : undefined
          }
        >
          <input
            className="jp-mod-styled"
            name="name"
            value={form.name}
            placeholder={rerun?.suggestedName}
            autoFocus
            onChange={e => update({ name: e.target.value })}
          />
        </Row>
        {rerun?.kind === 'resubmit' && rerun.resumedFrom ? (
          <Row label="Start from" field="general" errors={{}}>
            <span className="jp-trainhub-radio-group" role="radiogroup" aria-label="Start from">
              {(
                [
                  [
                    'same',
                    `the same checkpoint (${
                      rerun.resumedFrom.step ?? 'latest'
                    } of ${rerun.resumedFrom.job_id})`
                  ],
                  [
                    'latest',
                    rerun.latestStep !== null && rerun.latestStep !== undefined
                      ? `the latest one (step ${rerun.latestStep} of ${rerun.jobId})`
                      : `the latest one of ${rerun.resumedFrom.job_id}`
                  ],
                  ['scratch', 'scratch (no checkpoint)']
                ] as [StartFrom, string][]
              ).map(([value, label]) => (
                <label key={value}>
                  <input
                    type="radio"
                    name="startFrom"
                    value={value}
                    checked={(form.startFrom ?? 'same') === value}
                    onChange={() => update({ startFrom: value })}
                  />
                  {label}
                </label>
              ))}
            </span>
          </Row>
        ) : null}
        {config.images.length ? (
          <Row
            label="Image"
            field="image"
            errors={errors}
            hint={config.images.find(i => i.name === form.image)?.description}
          >
            <select
              className="jp-mod-styled"
              name="image"
              value={form.image}
              onChange={e => update({ image: e.target.value })}
            >
              {config.images.map(i => (
                <option key={i.name} value={i.name}>
                  {i.name}
                </option>
              ))}
            </select>
          </Row>
        ) : null}
        {offered.length ? (
          <Row
            label="Datasets"
            field="datasets"
            errors={errors}
            hint={datasetHint(offered, form.datasets)}
          >
            <select
              className="jp-mod-styled jp-trainhub-datasets"
              name="datasets"
              multiple
              size={Math.min(offered.length, 5)}
              value={form.datasets}
              onChange={e =>
                update({ datasets: Array.from(e.target.selectedOptions, o => o.value) })
              }
            >
              {offered.map(d => (
                <option key={d.name} value={d.name} title={d.description}>
                  {d.name}
                </option>
              ))}
            </select>
          </Row>
        ) : null}
        {has(config, 'multi_node') && limits.max_workers > 1 ? (
          <Row label="Workers (nodes)" field="workers" errors={errors}>
            {number('workers', limits.max_workers, 1)}
          </Row>
        ) : null}
        <Row label="Processes per worker" field="processesPerWorker" errors={errors}>
          {number('processesPerWorker', limits.max_processes_per_worker, 1)}
        </Row>
        {has(config, 'gpus') && limits.max_gpus_per_worker > 0 ? (
          <Row label="GPUs per worker" field="gpusPerWorker" errors={errors}>
            {number('gpusPerWorker', limits.max_gpus_per_worker)}
          </Row>
        ) : null}
        {has(config, 'worker_resources') ? (
          <>
            <Row
              label="CPU per worker"
              field="cpuPerWorker"
              errors={errors}
              hint="cores, e.g. 0.5 or 8"
            >
              <input
                className="jp-mod-styled"
                name="cpuPerWorker"
                inputMode="decimal"
                placeholder="one per process"
                value={form.cpuPerWorker}
                onChange={e => update({ cpuPerWorker: e.target.value })}
              />
            </Row>
            <Row
              label="Memory per worker"
              field="memoryPerWorker"
              errors={errors}
              hint="e.g. 1500Mi or 32Gi"
            >
              <input
                className="jp-mod-styled"
                name="memoryPerWorker"
                placeholder="default"
                value={form.memoryPerWorker}
                onChange={e => update({ memoryPerWorker: e.target.value })}
              />
            </Row>
          </>
        ) : null}
        {config.teams.length ? (
          <Row label="Team" field="team" errors={errors}>
            <select
              className="jp-mod-styled"
              name="team"
              value={form.team}
              onChange={e => {
                const t = config.teams.find(x => x.name === e.target.value);
                update({ team: e.target.value, queue: t?.queues[0] ?? '' });
              }}
            >
              {config.teams.map(t => (
                <option key={t.name} value={t.name}>
                  {t.name}
                </option>
              ))}
            </select>
          </Row>
        ) : null}
        {has(config, 'queues') && team && team.queues.length ? (
          <Row label="Queue" field="queue" errors={errors}>
            <select
              className="jp-mod-styled"
              name="queue"
              value={form.queue}
              onChange={e => update({ queue: e.target.value })}
            >
              {team.queues.map(q => (
                <option key={q} value={q}>
                  {q}
                </option>
              ))}
            </select>
          </Row>
        ) : null}
        {has(config, 'priority') ? (
          <Row label="Priority" field="priority" errors={errors}>
            <select
              className="jp-mod-styled"
              name="priority"
              value={form.priority}
              onChange={e => update({ priority: e.target.value as Priority })}
            >
              <option value="low">low</option>
              <option value="normal">normal</option>
              <option value="high">high</option>
            </select>
          </Row>
        ) : null}
        <Row label="Max runtime" field="maxRuntime" errors={errors} hint="e.g. 90m, 2h, 1d12h">
          <input
            className="jp-mod-styled"
            name="maxRuntime"
            placeholder="no limit"
            value={form.maxRuntime}
            onChange={e => update({ maxRuntime: e.target.value })}
          />
        </Row>
        <Row label="Cells" field="cells" errors={errors}>
          <span className="jp-trainhub-radio-group">
            <label>
              <input
                type="radio"
                name="cells"
                value="all"
                checked={form.cells === 'all'}
                onChange={() => update({ cells: 'all' })}
              />
              all cells
            </label>
            <label>
              <input
                type="radio"
                name="cells"
                value="selected"
                disabled={!form.selectedCells.length}
                checked={form.cells === 'selected'}
                onChange={() => update({ cells: 'selected' })}
              />
              selected ({form.selectedCells.map(i => i + 1).join(', ') || 'none'})
            </label>
          </span>
        </Row>
        <fieldset className="jp-trainhub-parameters" data-field="parameters">
          <legend>Parameters</legend>
          {parameters.length ? null : (
            <div className="jp-trainhub-form-hint">
              No cell tagged “parameters” in this notebook.
            </div>
          )}
          {parameters.map(p => {
            const value = form.parameters[p.name] ?? '';
            const set = (text: string) =>
              update({ parameters: { ...form.parameters, [p.name]: text } });
            const changed = value.trim() !== p.text.trim() ? ' jp-mod-changed' : '';
            return (
              <label className="jp-trainhub-form-row" key={p.name} data-parameter={p.name}>
                <span className="jp-trainhub-form-label jp-trainhub-mono">{p.name}</span>
                <span className="jp-trainhub-form-control">
                  {parameterKind(p.text) === 'bool' ? (
                    <input
                      type="checkbox"
                      className={`jp-trainhub-param-bool${changed}`}
                      name={`param-${p.name}`}
                      checked={value.trim() === 'True'}
                      onChange={e => set(e.target.checked ? 'True' : 'False')}
                    />
                  ) : (
                    <input
                      className={`jp-mod-styled jp-trainhub-mono${changed}${
                        typeErrors[p.name] ? ' jp-mod-invalid' : ''
                      }`}
                      name={`param-${p.name}`}
                      value={value}
                      aria-invalid={!!typeErrors[p.name]}
                      onChange={e => set(e.target.value)}
                    />
                  )}
                  {p.comment ? <span className="jp-trainhub-form-hint">{p.comment}</span> : null}
                  <FieldErrors
                    errors={typeErrors[p.name] ? [typeErrors[p.name]] : undefined}
                    id={`trainhub-error-param-${p.name}`}
                  />
                </span>
              </label>
            );
          })}
          <FieldErrors errors={errors.parameters} id="trainhub-error-parameters" />
        </fieldset>
        {rerun ? null : sweep.fields}
        <FieldErrors errors={errors.general} id="trainhub-error-general" />
        {checked ? (
          <div className="jp-trainhub-form-ok">
            The server would accept this job as {submittedName(form)}; nothing was submitted yet.
          </div>
        ) : null}
      </div>
      <div className="jp-trainhub-form-hint jp-trainhub-check-hint">{CHECK_EXPLAINED}</div>
      <div className="jp-Dialog-footer">
        <button
          type="button"
          className="jp-Dialog-button jp-mod-reject jp-mod-styled"
          onClick={() => props.onDone(null)}
        >
          <span className="jp-Dialog-buttonLabel">Cancel</span>
        </button>
        <button
          type="button"
          className="jp-Dialog-button jp-mod-styled"
          disabled={!!busy}
          title={CHECK_EXPLAINED}
          onClick={() => void check()}
        >
          <span className="jp-Dialog-buttonLabel">
            {busy === 'checking' ? 'Checking…' : 'Check'}
          </span>
        </button>
        <button
          type="submit"
          className="jp-Dialog-button jp-mod-accept jp-mod-styled"
          disabled={!!busy}
        >
          <span className="jp-Dialog-buttonLabel">
            {busy === 'submitting' ? 'Submitting…' : 'Submit'}
          </span>
        </button>
      </div>
    </form>
  );
}

/** A modal over the whole lab; resolves with the created job, or null when cancelled. */
export function showSubmitDialog(options: ISubmitDialogOptions): Promise<IDescribeJob | null> {
  return new Promise(resolve => {
    let widget: ReactWidget | null = null;
    const done = (job: IDescribeJob | null) => {
      widget?.dispose();
      resolve(job);
    };
    widget = ReactWidget.create(
      <div className="jp-Dialog-content jp-trainhub-submit-dialog-content">
        <SubmitForm options={options} onDone={done} />
      </div>
    );
    widget.addClass('jp-Dialog');
    widget.addClass('jp-trainhub-submit-dialog');
    widget.node.setAttribute('role', 'dialog');
    Widget.attach(widget, document.body);
  });
}
