/**
 * The job's fields of a form that describes a job (a schedule's, a pipeline step's): its
 * resources (resourcefields.tsx), then the cells to run and the notebook's parameters
 * (cellsandparameters.tsx), or those first.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { IConfig } from '../models';
import { IParameter } from '../parameters';
import { ISubmitForm } from '../specform';
import { CellsAndParameters } from './cellsandparameters';
import { Errors } from './formrow';
import { ResourceFields } from './resourcefields';

/** The form being edited: the job's values, the messages for them, and how to change them. */
export interface IJobEdit {
  parameters: IParameter[];
  form: ISubmitForm;
  errors: Errors;
  /** The parameters' values that do not read as their type, by name. */
  typeErrors: Record<string, string>;
  update: (patch: Partial<ISubmitForm>) => void;
}

export function JobFields(props: {
  api: TrainHubAPI;
  config: IConfig;
  edit: IJobEdit;
  /** The cells and parameters above the resources (a pipeline step is mostly its notebook). */
  cellsFirst?: boolean;
}): JSX.Element {
  const { api, config, cellsFirst } = props;
  const { form, errors, update } = props.edit;
  const resources = (
    <ResourceFields api={api} config={config} form={form} errors={errors} update={update} />
  );
  const cells = <CellsAndParameters {...props.edit} />;
  return (
    <>
      {cellsFirst ? cells : resources}
      {cellsFirst ? resources : cells}
    </>
  );
}
