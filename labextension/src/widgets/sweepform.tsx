/**
 * The submit dialog's sweep fields: "Sweep these parameters" turns the submit into a sweep,
 * each parameter fixed (the dialog's value) or varied as a list, a range, a log range or a
 * distribution; sampler, trials, how many at once, seed, and an early-stopping rule. The
 * dialog hooks it in with `useSweep` and submits through it when it is on.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { IJobSpec } from '../models';
import { ApiError } from '../request';
import {
  EMPTY_SWEEP_FORM,
  ISweepForm,
  IVaryRow,
  sweepRequest,
  VARY_HINTS,
  VaryKind
} from '../sweepdraft';
import { createSweep } from '../sweeps';
import { FormRow } from './formrow';
import { openSweep } from './sweepview';

const VARY_LABELS: [VaryKind, string][] = [
  ['fixed', 'fixed'],
  ['list', 'list'],
  ['range', 'range'],
  ['logrange', 'log range'],
  ['uniform', 'uniform'],
  ['loguniform', 'log-uniform'],
  ['choice', 'choice']
];

export interface ISweepHook {
  /** The sweep fields, for the dialog to place below its parameters. */
  fields: JSX.Element;
  /** Whether a submit starts a sweep. */
  active: boolean;
  /** Start the sweep of `job` and open its view; false (errors shown) when refused. */
  submit: (job: IJobSpec) => Promise<boolean>;
}

function Errors(props: { errors: string[] }): JSX.Element | null {
  return props.errors.length ? (
    <div className="jp-trainhub-field-errors" role="alert">
      {props.errors.map((e, i) => (
        <div key={i}>{e}</div>
      ))}
    </div>
  ) : null;
}

function SweepFields(props: {
  names: string[];
  form: ISweepForm;
  errors: Record<string, string>;
  update: (patch: Partial<ISweepForm>) => void;
}): JSX.Element {
  const { names, form, errors, update } = props;
  const setRow = (name: string, row: Partial<IVaryRow>) =>
    update({
      vary: {
        ...form.vary,
        [name]: { ...(form.vary[name] ?? { kind: 'fixed', text: '' }), ...row }
      }
    });
  const general = Object.entries(errors)
    .filter(([f]) => !f.startsWith('sweep.space.'))
    .map(([f, m]) => `${f}: ${m}`);
  return (
    <fieldset className="jp-trainhub-sweep-fields" data-field="sweep">
      <legend>
        <label>
          <input
            type="checkbox"
            name="sweep-enabled"
            checked={form.enabled}
            onChange={e => update({ enabled: e.target.checked })}
          />{' '}
          Sweep these parameters (each trial is a job)
        </label>
      </legend>
      {form.enabled ? (
        <>
          {names.length ? null : (
            <div className="jp-trainhub-form-hint">
              A sweep varies the parameters of the cell tagged “parameters”.
            </div>
          )}
          {names.map(name => {
            const row = form.vary[name] ?? { kind: 'fixed', text: '' };
            const error = errors[`sweep.space.${name}`];
            return (
              <FormRow key={name} label={name} mono several data={{ 'sweep-parameter': name }}>
                <select
                  className="jp-mod-styled"
                  name={`sweep-kind-${name}`}
                  value={row.kind}
                  onChange={e => setRow(name, { kind: e.target.value as VaryKind })}
                >
                  {VARY_LABELS.map(([k, label]) => (
                    <option key={k} value={k}>
                      {label}
                    </option>
                  ))}
                </select>
                {row.kind === 'fixed' ? (
                  <span className="jp-trainhub-form-hint">the value above, in every trial</span>
                ) : (
                  <input
                    className={`jp-mod-styled jp-trainhub-mono${error ? ' jp-mod-invalid' : ''}`}
                    name={`sweep-values-${name}`}
                    placeholder={VARY_HINTS[row.kind]}
                    value={row.text}
                    aria-invalid={!!error}
                    onChange={e => setRow(name, { text: e.target.value })}
                  />
                )}
                <Errors errors={error ? [error] : []} />
              </FormRow>
            );
          })}
          <FormRow label="Sampling" several>
            <select
              className="jp-mod-styled"
              name="sweep-sampler"
              value={form.sampler}
              onChange={e => update({ sampler: e.target.value as ISweepForm['sampler'] })}
            >
              <option value="grid">grid (every combination)</option>
              <option value="random">random (seeded)</option>
            </select>
            <input
              className="jp-mod-styled"
              name="sweep-trials"
              type="number"
              min={1}
              placeholder="trials"
              value={form.trials}
              onChange={e => update({ trials: e.target.value })}
            />
            <input
              className="jp-mod-styled"
              name="sweep-max-running"
              type="number"
              min={1}
              title="Trials active at once, at most"
              value={form.maxRunning}
              onChange={e => update({ maxRunning: e.target.value })}
            />
            <span className="jp-trainhub-form-hint">at once</span>
            <input
              className="jp-mod-styled"
              name="sweep-seed"
              type="number"
              min={0}
              placeholder="seed"
              value={form.seed}
              onChange={e => update({ seed: e.target.value })}
            />
          </FormRow>
          <FormRow label="Metric" several>
            <input
              className="jp-mod-styled jp-trainhub-mono"
              name="sweep-metric"
              placeholder="a scalar the notebook logs"
              value={form.metric}
              onChange={e => update({ metric: e.target.value })}
            />
            <select
              className="jp-mod-styled"
              name="sweep-mode"
              value={form.mode}
              onChange={e => update({ mode: e.target.value as ISweepForm['mode'] })}
            >
              <option value="min">lower is better</option>
              <option value="max">higher is better</option>
            </select>
            <select
              className="jp-mod-styled"
              name="sweep-early-stop"
              value={form.earlyStop}
              onChange={e => update({ earlyStop: e.target.value as ISweepForm['earlyStop'] })}
            >
              <option value="">no early stopping</option>
              <option value="median">median stopping</option>
              <option value="halving">successive halving</option>
            </select>
            {form.earlyStop ? (
              <>
                <span className="jp-trainhub-form-hint">after step</span>
                <input
                  className="jp-mod-styled"
                  name="sweep-min-steps"
                  type="number"
                  min={1}
                  value={form.minSteps}
                  onChange={e => update({ minSteps: e.target.value })}
                />
              </>
            ) : null}
          </FormRow>
          <Errors errors={general} />
        </>
      ) : null}
    </fieldset>
  );
}

/** The sweep part of the submit dialog: its fields, and its submit when it is on. */
export function useSweep(api: TrainHubAPI, names: string[]): ISweepHook {
  const [form, setForm] = React.useState<ISweepForm>(EMPTY_SWEEP_FORM);
  const [errors, setErrors] = React.useState<Record<string, string>>({});
  const update = (patch: Partial<ISweepForm>) => setForm(f => ({ ...f, ...patch }));
  const submit = async (job: IJobSpec): Promise<boolean> => {
    const request = sweepRequest(form, job);
    if ('errors' in request) {
      setErrors(request.errors);
      return false;
    }
    try {
      const sweep = await createSweep(api.settings, request);
      setErrors({});
      openSweep(sweep.id);
      return true;
    } catch (error) {
      if (error instanceof ApiError && error.fieldErrors.length) {
        setErrors(Object.fromEntries(error.fieldErrors.map(e => [e.field, e.message])));
      } else {
        setErrors({ sweep: (error as Error).message });
      }
      return false;
    }
  };
  return {
    fields: <SweepFields names={names} form={form} errors={errors} update={update} />,
    active: form.enabled,
    submit
  };
}
