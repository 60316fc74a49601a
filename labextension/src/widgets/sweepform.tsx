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
const SAMPLERS: [ISweepForm['sampler'], string][] = [
  ['grid', 'grid (every combination)'],
  ['random', 'random (seeded)']
];
const MODES: [ISweepForm['mode'], string][] = [
  ['min', 'lower is better'],
  ['max', 'higher is better']
];
const EARLY_STOPS: [ISweepForm['earlyStop'], string][] = [
  ['', 'no early stopping'],
  ['median', 'median stopping'],
  ['halving', 'successive halving']
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

/** A select of the sweep fields, its options as [value, label]. */
function Select<V extends string>(props: {
  name: string;
  value: V;
  options: [V, string][];
  choose: (value: V) => void;
}): JSX.Element {
  return (
    <select
      className="jp-mod-styled"
      name={props.name}
      value={props.value}
      onChange={e => props.choose(e.target.value as V)}
    >
      {props.options.map(([value, label]) => (
        <option key={value} value={value}>
          {label}
        </option>
      ))}
    </select>
  );
}

/** A control bound to one field of the sweep form. */
interface IBound<K extends keyof ISweepForm> {
  field: K;
  form: ISweepForm;
  update: (patch: Partial<ISweepForm>) => void;
}

/** The name the UI tests find a field's control by: `maxRunning` is `sweep-max-running`. */
function controlName(field: keyof ISweepForm): string {
  return 'sweep-' + field.replace(/[A-Z]/g, c => `-${c.toLowerCase()}`);
}

/** A whole number of the sweep form, kept as typed (sweepRequest reads it). */
function NumberField(
  props: IBound<'trials' | 'maxRunning' | 'seed' | 'minSteps'> & {
    min: number;
    placeholder?: string;
    title?: string;
  }
): JSX.Element {
  const { field, form, update } = props;
  return (
    <input
      className="jp-mod-styled"
      name={controlName(field)}
      type="number"
      min={props.min}
      placeholder={props.placeholder}
      title={props.title}
      value={form[field]}
      onChange={e => update({ [field]: e.target.value })}
    />
  );
}

/** One of the sweep form's fixed choices. */
function ChoiceField<K extends 'sampler' | 'mode' | 'earlyStop'>(
  props: IBound<K> & { options: [ISweepForm[K], string][] }
): JSX.Element {
  const { field, form, update } = props;
  return (
    <Select
      name={controlName(field)}
      value={form[field]}
      options={props.options}
      choose={value => update({ [field]: value })}
    />
  );
}

function SweepFields(props: {
  names: string[];
  form: ISweepForm;
  errors: Record<string, string>;
  update: (patch: Partial<ISweepForm>) => void;
}): JSX.Element {
  const { names, form, errors, update } = props;
  const bound = { form, update };
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
                <Select
                  name={`sweep-kind-${name}`}
                  value={row.kind}
                  options={VARY_LABELS}
                  choose={kind => setRow(name, { kind })}
                />
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
            <ChoiceField field="sampler" options={SAMPLERS} {...bound} />
            <NumberField field="trials" min={1} placeholder="trials" {...bound} />
            <NumberField
              field="maxRunning"
              min={1}
              title="Trials active at once, at most"
              {...bound}
            />
            <span className="jp-trainhub-form-hint">at once</span>
            <NumberField field="seed" min={0} placeholder="seed" {...bound} />
          </FormRow>
          <FormRow label="Metric" several>
            <input
              className="jp-mod-styled jp-trainhub-mono"
              name="sweep-metric"
              placeholder="a scalar the notebook logs"
              value={form.metric}
              onChange={e => update({ metric: e.target.value })}
            />
            <ChoiceField field="mode" options={MODES} {...bound} />
            <ChoiceField field="earlyStop" options={EARLY_STOPS} {...bound} />
            {form.earlyStop ? (
              <>
                <span className="jp-trainhub-form-hint">after step</span>
                <NumberField field="minSteps" min={1} {...bound} />
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
