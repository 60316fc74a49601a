/**
 * The pipeline editor's side form: the selected step's name, notebook, parameters and
 * resources in the submit dialog's own fields (pipelineform.ts), written back as changed.
 */
import * as React from 'react';

import { IConfig, IFieldError } from '../models';
import { IParameter, parameterErrors } from '../parameters';
import { formChanges, stepFormErrors, stepToForm } from '../pipelineform';
import { IStepNode } from '../pipelinegraph';
import { notebookParametersOf } from '../rerun';
import { ISubmitForm } from '../specform';
import { FieldErrors, FormRow } from './formrow';
import { JobFields } from './jobfields';
import type { IPipelineEditorHost } from './pipelineeditor';
import { LinkButton } from './linkbutton';

/** The side form of the selected step: the submit dialog's fields, written back as changed. */
export function StepForm(props: {
  host: IPipelineEditorHost;
  config: IConfig;
  step: IStepNode;
  errors: IFieldError[];
  write: (changes: [string[], unknown][]) => void;
  remove: () => void;
  rename: (name: string) => string | null;
}): JSX.Element {
  const { host, config, step } = props;
  const [parameters, setParameters] = React.useState<IParameter[] | null>(null);
  const [form, setForm] = React.useState<ISubmitForm | null>(null);
  const [name, setName] = React.useState(step.name);
  const [nameError, setNameError] = React.useState('');
  React.useEffect(() => {
    let live = true;
    void notebookParametersOf(host.api, step.notebook).then(found => {
      if (live) {
        setParameters(found);
        setForm(stepToForm(step, config, found));
      }
    });
    return () => {
      live = false;
    };
  }, [step.notebook]);
  if (!form || !parameters) {
    return <div className="jp-trainhub-pipeline-form">Reading {step.notebook}…</div>;
  }
  const defaults = Object.fromEntries(parameters.map(p => [p.name, p.text]));
  const typeErrors = parameterErrors(parameters, form.parameters);
  const errors = stepFormErrors(props.errors);
  if (Object.keys(typeErrors).length) {
    errors.parameters = [
      ...(errors.parameters ?? []),
      ...Object.entries(typeErrors).map(([k, e]) => `${k}: ${e}`)
    ];
  }
  const update = (patch: Partial<ISubmitForm>) => {
    const next = { ...form, ...patch };
    const bad = Object.keys(parameterErrors(parameters, next.parameters)).length > 0;
    const changes = formChanges(form, next, config, defaults).filter(
      ([path]) => !(bad && path[0] === 'parameters')
    );
    setForm(next);
    if (changes.length) {
      props.write(changes);
    }
  };
  return (
    <form
      className="jp-trainhub-pipeline-form jp-trainhub-submit-form"
      data-step={step.name}
      onSubmit={e => e.preventDefault()}
    >
      <h3>Step</h3>
      <FormRow label="Name">
        <input
          className="jp-mod-styled"
          name="step-name"
          value={name}
          onChange={e => setName(e.target.value)}
          onBlur={() => {
            if (name !== step.name) {
              const refused = props.rename(name);
              setNameError(refused ?? '');
            }
          }}
        />
        {nameError ? <FieldErrors errors={[nameError]} id="trainhub-step-name-error" /> : null}
      </FormRow>
      <FormRow label="Notebook" several>
        <LinkButton text={step.notebook} open={() => host.openNotebook(step.notebook)} mono />
      </FormRow>
      {step.outputs.length || Object.keys(step.inputs).length ? (
        <div className="jp-trainhub-form-hint">
          {Object.keys(step.inputs).length
            ? `inputs: ${Object.entries(step.inputs)
                .map(([k, v]) => `${k} ← ${v}`)
                .join(', ')}. `
            : ''}
          {step.outputs.length ? `outputs: ${step.outputs.join(', ')}` : ''}
        </div>
      ) : null}
      <JobFields
        api={host.api}
        config={config}
        edit={{ parameters, form, errors, typeErrors, update }}
        cellsFirst
      />
      <FieldErrors errors={errors.general} id="trainhub-step-errors" />
      <button
        type="button"
        className="jp-mod-styled jp-mod-warn jp-trainhub-pipeline-remove"
        onClick={props.remove}
      >
        Remove step
      </button>
    </form>
  );
}
