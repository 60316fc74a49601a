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

/**
 * The frame of every row of the dialog: its label, then its controls. A `label` element when
 * the row holds one control (a click on the name focuses it), a `div` when it holds several.
 */
export function FormRow(props: {
  label: React.ReactNode;
  /** The label in monospace (a parameter's name). */
  mono?: boolean;
  /** A row of several controls: a `div`, not a `label`. */
  several?: boolean;
  /** The row's data-* attributes (without `data-`), which the tests and styles select on. */
  data?: Record<string, string>;
  children: React.ReactNode;
}): JSX.Element {
  const Frame = props.several ? 'div' : 'label';
  const data = Object.fromEntries(
    Object.entries(props.data ?? {}).map(([name, value]) => [`data-${name}`, value])
  );
  return (
    <Frame className="jp-trainhub-form-row" {...data}>
      <span className={`jp-trainhub-form-label${props.mono ? ' jp-trainhub-mono' : ''}`}>
        {props.label}
      </span>
      <span className="jp-trainhub-form-control">{props.children}</span>
    </Frame>
  );
}

/**
 * A row for one field (of the spec, or of a schedule: `F` names the form's fields): its hint,
 * and the server's messages for the field.
 */
export function Row<F extends string = FormField>(props: {
  label: string;
  field: F;
  errors: Partial<Record<F, string[]>>;
  hint?: string;
  children: React.ReactNode;
}): JSX.Element {
  return (
    <FormRow label={props.label} data={{ field: props.field }}>
      {props.children}
      {props.hint ? <span className="jp-trainhub-form-hint">{props.hint}</span> : null}
      <FieldErrors errors={props.errors[props.field]} id={`trainhub-error-${props.field}`} />
    </FormRow>
  );
}
