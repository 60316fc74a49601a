/**
 * One entry of the Jobs panel: a job's row (state, progress, tags, its actions and a
 * checkbox to compare), or a sweep's row that folds its trials.
 */
import { editIcon, LabIcon, launchIcon, redoIcon, stopIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { formatElapsed, formatResources, waitExplanation } from '../format';
import { ListRow, scalarText, trialStates } from '../joblist';
import { Feature, IJobSummary, TERMINAL_STATES } from '../models';
import { pythonLiteral } from '../parameters';
import { sharingView } from '../sharing';
import { StateBadge } from './statebadge';

export interface IJobActions {
  open: (job: IJobSummary) => void;
  /** Asks first; resolves once the job is cancelled or kept. */
  cancel: (job: IJobSummary) => Promise<void>;
  /** Opens the submit dialog prefilled from the job. */
  resubmit: (job: IJobSummary) => Promise<void>;
  /** Change tags and note; resolves with the job as changed (null: left as it was). */
  edit: (job: IJobSummary) => Promise<IJobSummary | null>;
  /** Compare 2-10 jobs; absent when no comparison is installed. */
  compare?: (ids: string[]) => void;
  canCompare: () => boolean;
  openSweep?: (sweepId: string) => void;
  /** Open 1-10 jobs in one TensorBoard. */
  openTensorBoard?: (ids: string[]) => void;
  canOpenSweep: () => boolean;
  /** Who is looking (a teammate's shared job is read-only for them); undefined until known. */
  viewer?: () => { user: string; features: Feature[] } | undefined;
}

/** Every row is this tall (two lines: fourteen rows in an 800-pixel panel), so the window
 * knows what is in view without measuring. */
export const ROW_HEIGHT = 46;

/** `lr=0.001 batch=64`: parameters as the notebook would write them. */
export function parametersText(parameters: Record<string, unknown> | undefined): string {
  return Object.entries(parameters ?? {})
    .map(([k, v]) => `${k}=${pythonLiteral(v)}`)
    .join(' ');
}

/** A row's action: an icon (the row has no room for words), named for screen readers. */
function RowAction(props: {
  label: string;
  title: string;
  icon: LabIcon;
  danger?: boolean;
  disabled?: boolean;
  onClick: (e: React.MouseEvent) => void;
}): JSX.Element {
  return (
    <button
      className={`jp-mod-styled jp-trainhub-link jp-trainhub-row-action${
        props.danger ? ' jp-trainhub-danger' : ''
      }`}
      aria-label={props.label}
      title={props.title}
      disabled={props.disabled}
      onClick={props.onClick}
    >
      <props.icon.react tag="span" className="jp-trainhub-row-action-icon" />
    </button>
  );
}

export function JobRow(props: {
  job: IJobSummary;
  now: number;
  actions: IJobActions;
  trial: boolean;
  selected: boolean;
  onSelect: (job: IJobSummary, selected: boolean) => void;
  onEdited: (job: IJobSummary) => void;
}): JSX.Element {
  const { job, actions } = props;
  const wait = waitExplanation(job);
  const [busy, setBusy] = React.useState<'' | 'cancel' | 'resubmit' | 'edit'>('');
  const open = (e: React.MouseEvent) => {
    e.stopPropagation();
    actions.open(job);
  };
  const run = (what: typeof busy, fn: () => Promise<void>) => async (e: React.MouseEvent) => {
    e.stopPropagation();
    setBusy(what);
    try {
      await fn();
    } finally {
      setBusy('');
    }
  };
  const params = parametersText(job.parameters);
  const tags = job.tags ?? [];
  const viewer = actions.viewer?.();
  const sharing = sharingView(job, viewer?.user, viewer?.features);
  return (
    <div
      className={`jp-trainhub-job${props.trial ? ' jp-trainhub-job-trial' : ''}${
        props.selected ? ' jp-mod-selected' : ''
      }`}
      role="listitem"
      data-job-id={job.id}
      data-state={job.state}
      data-shared={job.shared ?? 'private'}
      title={`${job.name} (${job.id}) — ${job.source}${job.note ? `\n${job.note}` : ''}`}
      onDoubleClick={() => actions.open(job)}
      // A double click opens the job; it should not also select a word of the row.
      onMouseDown={e => {
        if (e.detail > 1) {
          e.preventDefault();
        }
      }}
      onClick={e => {
        if (e.ctrlKey || e.metaKey) {
          props.onSelect(job, !props.selected);
        }
      }}
    >
      <div className="jp-trainhub-job-line">
        <input
          type="checkbox"
          className="jp-trainhub-job-select"
          aria-label={`Select ${job.name}`}
          checked={props.selected}
          onClick={e => e.stopPropagation()}
          onChange={e => props.onSelect(job, e.target.checked)}
        />
        <span className="jp-trainhub-job-name">{job.name}</span>
        <span className="jp-trainhub-job-elapsed">{formatElapsed(job, props.now)}</span>
        <StateBadge state={job.state} />
        <div className="jp-trainhub-job-actions">
          <RowAction label="Open" title="Open the job" icon={launchIcon} onClick={open} />
          {TERMINAL_STATES.has(job.state) ? (
            <RowAction
              label="Resubmit…"
              title="Submit it again, changed if you like"
              icon={redoIcon}
              disabled={!!busy}
              onClick={run('resubmit', () => actions.resubmit(job))}
            />
          ) : sharing.readOnly ? null : (
            <RowAction
              label={busy === 'cancel' ? 'Cancelling…' : 'Cancel…'}
              title="Cancel the job"
              icon={stopIcon}
              danger
              disabled={!!busy}
              onClick={run('cancel', () => actions.cancel(job))}
            />
          )}
          {sharing.readOnly ? null : (
            <RowAction
              label="Tags…"
              title="Edit tags and note"
              icon={editIcon}
              disabled={!!busy}
              onClick={run('edit', async () => {
                const changed = await actions.edit(job);
                if (changed) {
                  props.onEdited(changed);
                }
              })}
            />
          )}
        </div>
      </div>
      <div className="jp-trainhub-job-detail">
        {sharing.label ? <span className="jp-trainhub-shared">{sharing.label}</span> : null}
        {wait ? (
          // The one thing a waiting row must say: whole in its tooltip, and in the job's view.
          <span className="jp-trainhub-job-wait" title={wait}>
            {wait}
          </span>
        ) : (
          <>
            {job.scalar ? (
              <span
                className="jp-trainhub-job-scalar"
                title={`${job.scalar.name} at step ${job.scalar.step}`}
              >
                {job.scalar.name} {scalarText(job.scalar.value)}
              </span>
            ) : null}
            <span>{formatResources(job)}</span>
            {job.attempt > 0 ? <span>attempt {job.attempt + 1}</span> : null}
            {job.failure_class && job.failure_class !== job.state ? (
              <span className="jp-trainhub-failure">{job.failure_class}</span>
            ) : null}
            {job.origin ? <span className="jp-trainhub-job-origin">{job.origin}</span> : null}
            {tags.map(t => (
              <span key={t} className="jp-trainhub-tag">
                {t}
              </span>
            ))}
            {job.note ? <span className="jp-trainhub-job-note">{job.note}</span> : null}
            <span className="jp-trainhub-job-params jp-trainhub-mono" title={params}>
              {params || 'notebook defaults'}
            </span>
          </>
        )}
      </div>
    </div>
  );
}

export function SweepRow(props: {
  row: Extract<ListRow, { kind: 'sweep' }>;
  actions: IJobActions;
  onToggle: (sweepId: string) => void;
}): JSX.Element {
  const { row, actions } = props;
  return (
    <div
      className="jp-trainhub-job jp-trainhub-sweep"
      role="listitem"
      data-sweep-id={row.sweepId}
      onDoubleClick={() => props.onToggle(row.sweepId)}
    >
      <div className="jp-trainhub-job-line">
        <button
          className="jp-mod-styled jp-trainhub-link jp-trainhub-sweep-toggle"
          aria-expanded={row.expanded}
          aria-label={`${row.expanded ? 'Fold' : 'Unfold'} sweep ${row.sweepId}`}
          onClick={() => props.onToggle(row.sweepId)}
        >
          {row.expanded ? '▾' : '▸'}
        </button>
        <span className="jp-trainhub-job-name">sweep {row.sweepId}</span>
        <span className="jp-trainhub-sweep-count">
          {row.trials.length} trial{row.trials.length === 1 ? '' : 's'}
        </span>
      </div>
      <div className="jp-trainhub-job-detail">
        <span className="jp-trainhub-sweep-states">{trialStates(row.trials)}</span>
        {actions.openSweep && actions.canOpenSweep() ? (
          <button
            className="jp-mod-styled jp-trainhub-link"
            onClick={() => actions.openSweep?.(row.sweepId)}
          >
            Open sweep
          </button>
        ) : null}
      </div>
    </div>
  );
}
