/**
 * The Submit as job dialog: the spec's fields, prefilled from the server config and the
 * notebook's parameters cell; "Check" asks the server (dry run) and shows its field
 * messages next to the fields; only what the backend supports is offered.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { IConfig, IDescribeJob, IFieldError } from '../models';
import { isValidName, slugName } from '../naming';
import { IParameter, parameterErrors } from '../parameters';
import { ApiError } from '../request';
import { useSweep } from './sweepform';
import {
  errorsByField,
  formToSpec,
  ISubmitForm,
  rerunRequest,
  rerunForkFrom,
  rerunStatement,
  StartFrom,
  submittedName
} from '../specform';
import { CellsAndParameters } from './cellsandparameters';
import { DialogButton, showFormDialog } from './formdialog';
import { Errors, FieldErrors, Row } from './formrow';
import { ResourceFields } from './resourcefields';

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
      spec.fork_from = rerunForkFrom(rerun, form.startFrom);
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
        {rerun?.kind === 'resubmit' && rerun.forkedFrom ? (
          <Row label="Start from" field="general" errors={{}}>
            <span className="jp-trainhub-radio-group" role="radiogroup" aria-label="Start from">
              {(
                [
                  [
                    'same',
                    `the same checkpoint (${
                      rerun.forkedFrom.step ?? 'latest'
                    } of ${rerun.forkedFrom.job_id})`
                  ],
                  [
                    'latest',
                    rerun.latestStep !== null && rerun.latestStep !== undefined
                      ? `the latest one (step ${rerun.latestStep} of ${rerun.jobId})`
                      : `the latest one of ${rerun.forkedFrom.job_id}`
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
        <ResourceFields api={api} config={config} form={form} errors={errors} update={update} />
        <CellsAndParameters
          parameters={parameters}
          form={form}
          errors={errors}
          typeErrors={typeErrors}
          update={update}
        />
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
        <DialogButton label="Cancel" kind="reject" onClick={() => props.onDone(null)} />
        <DialogButton
          label={busy === 'checking' ? 'Checking…' : 'Check'}
          disabled={!!busy}
          title={CHECK_EXPLAINED}
          onClick={() => void check()}
        />
        <DialogButton
          label={busy === 'submitting' ? 'Submitting…' : 'Submit'}
          kind="accept"
          disabled={!!busy}
        />
      </div>
    </form>
  );
}

/** A modal over the whole lab; resolves with the created job, or null when cancelled. */
export function showSubmitDialog(options: ISubmitDialogOptions): Promise<IDescribeJob | null> {
  return showFormDialog<IDescribeJob>(done => <SubmitForm options={options} onDone={done} />);
}
