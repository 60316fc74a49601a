/** A row of the submit dialog: label, control, hint, and the server's messages for the field. */
import * as React from 'react';

import { FormField } from '../specform';

export type Errors = Partial<Record<FormField, string[]>>;

export function FieldErrors(props: { errors?: string[]; id: string }): JSX.Element | null {
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

export function Row(props: {
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
