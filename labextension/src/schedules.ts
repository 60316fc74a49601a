/**
 * Schedules (a notebook on a cron in a time zone) as the REST API answers them, what the
 * Schedules panel says of them, and the Schedule notebook dialog's request and errors.
 */
import { IConfig, IFieldError, IJobSpec } from './models';
import { errorsByField, FormField, formToSpec, ISubmitForm, submittedName } from './specform';

export type Concurrency = 'forbid' | 'allow' | 'replace';
export type Missed = 'run-once' | 'skip';
export type RunState = 'claimed' | 'submitted' | 'skipped' | 'refused';

/** One firing of a schedule (RunView). */
export interface IScheduleRun {
  /** The scheduled time (POSIX seconds); null for a run now. */
  at: number | null;
  at_local: string | null;
  claimed_at: number | null;
  state: RunState;
  /** The job's state now ("gone" once deleted). */
  job_state: string | null;
  /** The job's final state, once it ended. */
  outcome: string | null;
  job_id: string | null;
  /** A pipeline target's run (its graph opens instead of a job view). */
  pipeline_run?: string | null;
  reason: string | null;
}

/** What a schedule runs: a notebook's job, or a pipeline file's run. */
export type ScheduleTarget =
  | { kind: 'notebook'; job: IJobSpec }
  | { kind: 'pipeline'; file: string; parameters?: Record<string, unknown>; cache?: boolean };

/** A schedule (ScheduleView); its runs newest first. */
export interface ISchedule {
  id: string;
  name: string;
  user: string;
  team: string | null;
  created_at: number;
  target: ScheduleTarget;
  cron: string;
  cron_text: string;
  timezone: string;
  paused: boolean;
  concurrency: Concurrency;
  missed: Missed;
  starting_deadline_seconds: number | null;
  notify_failure: boolean;
  next_at: number | null;
  next_at_local: string | null;
  runs: IScheduleRun[];
}

/** POST schedules. */
export interface ICreateSchedule {
  name: string;
  target: { kind: 'notebook'; job: IJobSpec };
  cron: string;
  timezone: string;
  concurrency: Concurrency;
  missed: Missed;
  starting_deadline: string | null;
}

/** What the schedule dialog asks on top of the submit dialog's job fields. */
export interface IScheduleFields {
  cron: string;
  timezone: string;
  concurrency: Concurrency;
  missed: Missed;
  /** e.g. 10m, 2h; empty for none. */
  startingDeadline: string;
}

export type ScheduleField = keyof IScheduleFields;

/** The browser's zone, or UTC where it cannot say. */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

export function initialScheduleFields(timezone = browserTimeZone()): IScheduleFields {
  return {
    cron: '0 2 * * *',
    timezone,
    concurrency: 'forbid',
    missed: 'run-once',
    startingDeadline: ''
  };
}

/** The request for the dialog's two parts; the schedule is named as its job is. */
export function scheduleRequest(
  form: ISubmitForm,
  fields: IScheduleFields,
  config: Pick<IConfig, 'features' | 'teams'>,
  defaults: Record<string, string> = {}
): ICreateSchedule {
  return {
    name: submittedName(form),
    target: { kind: 'notebook', job: formToSpec(form, config, defaults) },
    cron: fields.cron.trim(),
    timezone: fields.timezone.trim() || 'UTC',
    concurrency: fields.concurrency,
    missed: fields.missed,
    starting_deadline: fields.startingDeadline.trim() || null
  };
}

const SCHEDULE_FIELD: Record<string, ScheduleField> = {
  cron: 'cron',
  timezone: 'timezone',
  concurrency: 'concurrency',
  missed: 'missed',
  starting_deadline: 'startingDeadline'
};

/**
 * The server's field errors of a create, under the dialog's fields: the schedule's own
 * (`cron`, `timezone`, `starting_deadline`, …) under its rows, `target.job.…` under the job
 * fields as the submit dialog shows them, the schedule's `name` under the name.
 */
export function scheduleErrors(errors: IFieldError[]): {
  job: Partial<Record<FormField, string[]>>;
  schedule: Partial<Record<ScheduleField, string[]>>;
} {
  const schedule: Partial<Record<ScheduleField, string[]>> = {};
  const rest: IFieldError[] = [];
  for (const e of errors) {
    const own = SCHEDULE_FIELD[e.field];
    if (own) {
      (schedule[own] ??= []).push(e.message);
    } else if (e.field.startsWith('target.job.')) {
      rest.push({ ...e, field: e.field.slice('target.job.'.length) });
    } else if (e.field === 'target.job' || e.field === 'target') {
      rest.push({ ...e, field: 'spec' });
    } else {
      rest.push(e);
    }
  }
  return { job: errorsByField(rest), schedule };
}

/** "Every day at 02:00 (Europe/Berlin)". */
export function whenText(s: Pick<ISchedule, 'cron_text' | 'timezone'>): string {
  const text = s.cron_text ? s.cron_text[0].toUpperCase() + s.cron_text.slice(1) : '';
  return `${text} (${s.timezone})`;
}

/** A local ISO time ("2026-12-07T02:00:00+01:00") as "2026-12-07 02:00". */
export function localTimeText(iso: string | null): string {
  if (!iso) {
    return '';
  }
  const m = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)/.exec(iso);
  return m ? `${m[1]} ${m[2]}` : iso;
}

/** "next 2026-12-07 02:00", "paused", or "no next run". */
export function nextText(s: Pick<ISchedule, 'paused' | 'next_at_local'>): string {
  if (s.paused) {
    return 'paused';
  }
  return s.next_at_local ? `next ${localTimeText(s.next_at_local)}` : 'no next run';
}

/** What a run came to, in a word or a few: the job's outcome, its state, or why it made none. */
export function runOutcome(run: IScheduleRun): string {
  switch (run.state) {
    case 'skipped':
      return run.reason ? `skipped: ${run.reason}` : 'skipped';
    case 'refused':
      return run.reason ? `refused: ${run.reason}` : 'refused';
    case 'claimed':
      return 'starting';
    default:
      return run.outcome ?? run.job_state ?? 'submitted';
  }
}

/** A key for styling a run's outcome: the job's state, or the run's when it made no job. */
export function runOutcomeKey(run: IScheduleRun): string {
  return run.state === 'submitted' ? (run.outcome ?? run.job_state ?? 'queued') : run.state;
}

/** When a run was meant for: its scheduled time in the schedule's zone, or "run now". */
export function runWhen(run: IScheduleRun): string {
  return run.at === null ? 'run now' : localTimeText(run.at_local);
}

/** "last: succeeded", or "no runs yet". */
export function lastRunText(s: Pick<ISchedule, 'runs'>): string {
  const last = s.runs[0];
  return last ? `last: ${runOutcome(last)}` : 'no runs yet';
}

/** The target's path: the notebook's, or the pipeline file's. */
export function targetPath(s: Pick<ISchedule, 'target'>): string {
  if (s.target.kind === 'pipeline') {
    return s.target.file;
  }
  const source = s.target.job.source as { path?: string } | undefined;
  return source?.path ?? '';
}
