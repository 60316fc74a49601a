/** The cells to run and the notebook's parameters, in the submit dialog. */
import * as React from 'react';

import { IParameter, parameterKind } from '../parameters';
import { ISubmitForm } from '../specform';
import { Errors, FieldErrors, FormRow, Row } from './formrow';

export function CellsAndParameters(props: {
  parameters: IParameter[];
  form: ISubmitForm;
  errors: Errors;
  typeErrors: Record<string, string>;
  update: (patch: Partial<ISubmitForm>) => void;
}): JSX.Element {
  const { parameters, form, errors, typeErrors, update } = props;
  return (
    <>
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
          <div className="jp-trainhub-form-hint">No cell tagged “parameters” in this notebook.</div>
        )}
        {parameters.map(p => {
          const value = form.parameters[p.name] ?? '';
          const set = (text: string) =>
            update({ parameters: { ...form.parameters, [p.name]: text } });
          const changed = value.trim() !== p.text.trim() ? ' jp-mod-changed' : '';
          return (
            <FormRow key={p.name} label={p.name} mono data={{ parameter: p.name }}>
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
            </FormRow>
          );
        })}
        <FieldErrors errors={errors.parameters} id="trainhub-error-parameters" />
      </fieldset>
    </>
  );
}
