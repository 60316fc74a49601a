/**
 * The Schedule notebook dialog: the submit dialog's job fields (name, resources, cells and
 * parameters) and when to run: cron expression, time zone, concurrency and missed-run
 * policies, starting deadline. The server's messages show on the field they name.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { IConfig } from '../models';
import { IParameter, parameterErrors } from '../parameters';
import { ApiError } from '../request';
import {
  initialScheduleFields,
  ISchedule,
  IScheduleFields,
  ScheduleField,
  scheduleErrors,
  scheduleRequest
} from '../schedules';
import { ISubmitForm } from '../specform';
import { Errors, FieldErrors, Row } from './formrow';
import { JobFields } from './jobfields';
import { DialogButton, showFormDialog } from './formdialog';

export interface IScheduleDialogOptions {
  api: TrainHubAPI;
  config: IConfig;
  form: ISubmitForm;
  parameters: IParameter[];
  /** Saves the notebook: the schedule freezes what is on disk. */
  save?: () => Promise<void>;
}

type ScheduleErrors = Partial<Record<ScheduleField, string[]>>;

/** The schedule's own fields, in the dialog's order: a text input, or a select of `choices`. */
const WHEN_FIELDS: {
  field: ScheduleField;
  label: string;
  hint: string;
  choices?: [string, string][];
}[] = [
  {
    field: 'cron',
    label: 'Cron',
    hint: 'minute hour day-of-month month day-of-week, e.g. 0 2 * * *'
  },
  { field: 'timezone', label: 'Time zone', hint: 'e.g. Europe/Berlin' },
  {
    field: 'concurrency',
    label: 'If still running',
    hint: 'What a run does while the last one has not ended',
    choices: [
      ['forbid', 'forbid: skip the new run'],
      ['allow', 'allow: run both'],
      ['replace', 'replace: cancel the running one']
    ]
  },
  {
    field: 'missed',
    label: 'Missed runs',
    hint: 'Times that passed while nothing could fire them',
    choices: [
      ['run-once', 'run once when back'],
      ['skip', 'skip']
    ]
  },
  {
    field: 'startingDeadline',
    label: 'Starting deadline',
    hint: 'A run reached later than this is skipped, e.g. 10m; empty for none'
  }
];

function ScheduleForm(props: {
  options: IScheduleDialogOptions;
  onDone: (s: ISchedule | null) => void;
}): JSX.Element {
  const { api, config, parameters } = props.options;
  const [form, setForm] = React.useState<ISubmitForm>(props.options.form);
  const [when, setWhen] = React.useState<IScheduleFields>(initialScheduleFields);
  const [errors, setErrors] = React.useState<Errors>({});
  const [whenErrors, setWhenErrors] = React.useState<ScheduleErrors>({});
  const [busy, setBusy] = React.useState(false);
  const defaults = React.useMemo(
    () => Object.fromEntries(parameters.map(p => [p.name, p.text])),
    [parameters]
  );
  const update = (patch: Partial<ISubmitForm>) => setForm(f => ({ ...f, ...patch }));
  const updateWhen = (patch: Partial<IScheduleFields>) => setWhen(w => ({ ...w, ...patch }));
  const typeErrors = parameterErrors(parameters, form.parameters);

  const create = async () => {
    if (Object.keys(typeErrors).length) {
      setErrors({ parameters: Object.entries(typeErrors).map(([k, e]) => `${k}: ${e}`) });
      return;
    }
    setBusy(true);
    try {
      await props.options.save?.();
      props.onDone(await api.createSchedule(scheduleRequest(form, when, config, defaults)));
    } catch (error) {
      if (error instanceof ApiError && error.fieldErrors.length) {
        const split = scheduleErrors(error.fieldErrors);
        setErrors(split.job);
        setWhenErrors(split.schedule);
      } else {
        setErrors({ general: [(error as Error).message] });
        setWhenErrors({});
      }
      setBusy(false);
    }
  };

  return (
    <form
      className="jp-trainhub-submit-form jp-trainhub-schedule-form"
      onSubmit={e => {
        e.preventDefault();
        void create();
      }}
      onKeyDown={e => e.key === 'Escape' && props.onDone(null)}
    >
      <div className="jp-Dialog-header">Schedule {form.notebookPath}</div>
      <div className="jp-trainhub-form-body">
        <Row label="Name" field="name" errors={errors} hint="The schedule's and its jobs' name">
          <input
            className="jp-mod-styled"
            name="name"
            value={form.name}
            autoFocus
            onChange={e => update({ name: e.target.value })}
          />
        </Row>
        {WHEN_FIELDS.map(({ field, label, hint, choices }) => {
          // the form's values are typed by field; a control's value is the text it shows
          const control = {
            className: 'jp-mod-styled',
            name: field,
            value: when[field],
            onChange: (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
              updateWhen({ [field]: e.target.value } as Partial<IScheduleFields>)
          };
          return (
            <Row key={field} label={label} field={field} errors={whenErrors} hint={hint}>
              {choices ? (
                <select {...control}>
                  {choices.map(([value, text]) => (
                    <option key={value} value={value}>
                      {text}
                    </option>
                  ))}
                </select>
              ) : (
                <input {...control} />
              )}
            </Row>
          );
        })}
        <JobFields
          api={api}
          config={config}
          edit={{ parameters, form, errors, typeErrors, update }}
        />
        <FieldErrors errors={errors.general} id="trainhub-error-general" />
      </div>
      <div className="jp-Dialog-footer">
        <DialogButton label="Cancel" kind="reject" onClick={() => props.onDone(null)} />
        <DialogButton
          label={busy ? 'Creating…' : 'Create schedule'}
          kind="accept"
          disabled={busy}
        />
      </div>
    </form>
  );
}

/** Resolves with the created schedule, or null when cancelled. */
export function showScheduleDialog(options: IScheduleDialogOptions): Promise<ISchedule | null> {
  return showFormDialog<ISchedule>(
    done => <ScheduleForm options={options} onDone={done} />,
    'jp-trainhub-schedule-dialog'
  );
}
