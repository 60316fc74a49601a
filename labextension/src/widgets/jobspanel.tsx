/**
 * The Jobs side panel: the user's jobs, live, found by words, state and sweep; a sweep's
 * trials as one expandable entry; a windowed list of equal rows that loads pages from the
 * server as it scrolls (10,000 jobs are never 10,000 DOM rows); rows that hold still under
 * the pointer; several jobs selected to compare.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { formatElapsed, formatResources, useNow, waitExplanation } from '../format';
import {
  EMPTY_QUERY,
  flattenEntries,
  groupSweeps,
  IListQuery,
  JobList,
  ListRow,
  listOptions,
  scalarText,
  StateFilter,
  trialStates,
  visibleRange
} from '../joblist';
import { JobsModel } from '../jobsmodel';
import { Feature, IJobSummary, JOB_STATES, JobState, TERMINAL_STATES } from '../models';
import { pythonLiteral } from '../parameters';
import { sharingView } from '../sharing';

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
  canOpenSweep: () => boolean;
  /** Who is looking (a teammate's shared job is read-only for them); undefined until known. */
  viewer?: () => { user: string; features: Feature[] } | undefined;
}

/** Every row is this tall, so the window knows what is in view without measuring. */
export const ROW_HEIGHT = 86;
const PAGE = 100;
export const COMPARE_MIN = 2;
export const COMPARE_MAX = 10;

export function StateBadge(props: { state: JobState }): JSX.Element {
  return (
    <span className={`jp-trainhub-state jp-trainhub-state-${props.state}`}>{props.state}</span>
  );
}

/** `lr=0.001 batch=64`: parameters as the notebook would write them. */
export function parametersText(parameters: Record<string, unknown> | undefined): string {
  return Object.entries(parameters ?? {})
    .map(([k, v]) => `${k}=${pythonLiteral(v)}`)
    .join(' ');
}

function JobRow(props: {
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
        <StateBadge state={job.state} />
      </div>
      <div className="jp-trainhub-job-meta">
        {job.scalar ? (
          <span
            className="jp-trainhub-job-scalar"
            title={`${job.scalar.name} at step ${job.scalar.step}`}
          >
            {job.scalar.name} {scalarText(job.scalar.value)}
          </span>
        ) : null}
        <span className="jp-trainhub-job-elapsed">{formatElapsed(job, props.now)}</span>
        <span>{formatResources(job)}</span>
        {job.attempt > 0 ? <span>attempt {job.attempt + 1}</span> : null}
        {job.failure_class && job.failure_class !== job.state ? (
          <span className="jp-trainhub-failure">{job.failure_class}</span>
        ) : null}
        {job.origin ? <span className="jp-trainhub-job-origin">{job.origin}</span> : null}
        {sharing.label ? <span className="jp-trainhub-shared">{sharing.label}</span> : null}
      </div>
      <div className="jp-trainhub-job-detail">
        {wait ? (
          <span className="jp-trainhub-job-wait" title={wait}>
            {wait}
          </span>
        ) : (
          <>
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
      <div className="jp-trainhub-job-actions">
        <button className="jp-mod-styled jp-trainhub-link" onClick={() => actions.open(job)}>
          Open
        </button>
        {TERMINAL_STATES.has(job.state) ? (
          <button
            className="jp-mod-styled jp-trainhub-link"
            disabled={!!busy}
            onClick={run('resubmit', () => actions.resubmit(job))}
          >
            Resubmit…
          </button>
        ) : sharing.readOnly ? null : (
          <button
            className="jp-mod-styled jp-trainhub-link jp-trainhub-danger"
            disabled={!!busy}
            onClick={run('cancel', () => actions.cancel(job))}
          >
            {busy === 'cancel' ? 'Cancelling…' : 'Cancel…'}
          </button>
        )}
        {sharing.readOnly ? null : (
          <button
            className="jp-mod-styled jp-trainhub-link"
            title="Edit tags and note"
            disabled={!!busy}
            onClick={run('edit', async () => {
              const changed = await actions.edit(job);
              if (changed) {
                props.onEdited(changed);
              }
            })}
          >
            Tags…
          </button>
        )}
      </div>
    </div>
  );
}

function SweepRow(props: {
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
      <div className="jp-trainhub-job-meta">
        <span>{trialStates(row.trials)}</span>
      </div>
      <div className="jp-trainhub-job-actions">
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

/** Text typed into a box, passed on once typing pauses. */
function useSettled<T>(value: T, ms = 250): T {
  const [settled, setSettled] = React.useState(value);
  React.useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

function JobsList(props: {
  model: JobsModel;
  api: TrainHubAPI;
  actions: IJobActions;
}): JSX.Element {
  const { model, api, actions } = props;
  const [q, setQ] = React.useState('');
  const [state, setState] = React.useState<StateFilter>('');
  const [sweep, setSweep] = React.useState('');
  const [scalarInput, setScalarInput] = React.useState('');
  const query: IListQuery = React.useMemo(
    () => ({ ...EMPTY_QUERY, q, state, sweep }),
    [q, state, sweep]
  );
  const [reloads, setReloads] = React.useState(0);
  const settledQuery = useSettled(query);
  const scalar = useSettled(scalarInput.trim(), 400);
  const list = React.useRef(new JobList());
  const [, setVersion] = React.useState(0);
  const [loading, setLoading] = React.useState(false);
  const [error, setError] = React.useState('');
  const [status, setStatus] = React.useState(model.connection);
  const [expanded, setExpanded] = React.useState<Set<string>>(new Set());
  const [selected, setSelected] = React.useState<Map<string, IJobSummary>>(new Map());
  const [scrollTop, setScrollTop] = React.useState(0);
  const [viewHeight, setViewHeight] = React.useState(600);
  const viewport = React.useRef<HTMLDivElement>(null);
  const now = useNow();
  const rerender = React.useCallback(() => setVersion(v => v + 1), []);

  // A new query: a new list, its first page from the server.
  React.useEffect(() => {
    const fresh = new JobList(settledQuery);
    fresh.hold(list.current.isHeld);
    list.current = fresh;
    let stale = false;
    setLoading(true);
    api
      .listJobs(listOptions(settledQuery, { limit: PAGE, scalar }))
      .then(page => {
        if (!stale) {
          fresh.addPage(page);
          setError('');
        }
      })
      .catch(e => !stale && setError((e as Error).message))
      .finally(() => {
        if (!stale) {
          setLoading(false);
          rerender();
        }
      });
    if (viewport.current) {
      viewport.current.scrollTop = 0;
    }
    setScrollTop(0);
    return () => {
      stale = true;
    };
  }, [api, settledQuery, scalar, reloads, rerender]);

  // Live updates, rendered at most a few times a second however many arrive.
  React.useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const onChange = (_: unknown, changes: { job: IJobSummary }[]) => {
      let shownChanged = false;
      for (const { job } of changes) {
        shownChanged = list.current.update(job) || shownChanged;
      }
      if (shownChanged && !timer) {
        timer = setTimeout(() => {
          timer = null;
          rerender();
        }, 150);
      }
    };
    const onStatus = () => setStatus(model.error ? 'error' : model.connection);
    model.changed.connect(onChange);
    model.statusChanged.connect(onStatus);
    return () => {
      model.changed.disconnect(onChange);
      model.statusChanged.disconnect(onStatus);
      if (timer) {
        clearTimeout(timer);
      }
    };
  }, [model, rerender]);

  React.useLayoutEffect(() => {
    const node = viewport.current;
    if (!node) {
      return;
    }
    const measure = () => setViewHeight(node.clientHeight || 600);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(node);
    return () => observer.disconnect();
  }, []);

  const current = list.current;
  const rows = flattenEntries(groupSweeps(current.jobs), expanded);
  const { start, end } = visibleRange(scrollTop, viewHeight, ROW_HEIGHT, rows.length);

  // Near the end of what is loaded: the next page.
  const loadMore = React.useCallback(() => {
    const l = list.current;
    if (loading || l.nextBefore === null) {
      return;
    }
    setLoading(true);
    api
      .listJobs(listOptions(l.query, { limit: PAGE, before: l.nextBefore, scalar }))
      .then(page => l === list.current && l.addPage(page))
      .catch(e => setError((e as Error).message))
      .finally(() => {
        setLoading(false);
        rerender();
      });
  }, [api, loading, scalar, rerender]);
  React.useEffect(() => {
    if (end >= rows.length - 10 && current.nextBefore !== null && !loading) {
      loadMore();
    }
  }, [end, rows.length, current.nextBefore, loading, loadMore]);

  const select = (job: IJobSummary, on: boolean) =>
    setSelected(s => {
      const next = new Map(s);
      if (on) {
        next.set(job.id, job);
      } else {
        next.delete(job.id);
      }
      return next;
    });
  const toggle = (sweepId: string) =>
    setExpanded(s => {
      const next = new Set(s);
      if (next.has(sweepId)) {
        next.delete(sweepId);
      } else {
        next.add(sweepId);
      }
      return next;
    });
  const edited = (job: IJobSummary) => {
    current.update(job);
    rerender();
  };
  const sweeps = [...new Set(current.jobs.map(j => j.sweep_id).filter(Boolean) as string[])];
  if (sweep && !sweeps.includes(sweep)) {
    sweeps.unshift(sweep);
  }
  const compareIds = [...selected.keys()];
  const compareReady =
    !!actions.compare &&
    actions.canCompare() &&
    compareIds.length >= COMPARE_MIN &&
    compareIds.length <= COMPARE_MAX;
  const filtered = !!(settledQuery.q || settledQuery.state || settledQuery.sweep);

  return (
    <div className="jp-trainhub-jobs">
      <div className="jp-trainhub-jobs-header">
        <h2>Training jobs</h2>
        <button
          className="jp-mod-styled jp-trainhub-link"
          title="Reload"
          aria-label="Reload"
          onClick={() => {
            void model.reload();
            setReloads(n => n + 1);
          }}
        >
          ⟳
        </button>
      </div>
      <div className="jp-trainhub-jobs-filters">
        <input
          className="jp-mod-styled jp-trainhub-jobs-search"
          type="search"
          aria-label="Search jobs"
          placeholder="Search name, tag, note, lr=0.01…"
          value={q}
          onChange={e => setQ(e.target.value)}
        />
        <select
          className="jp-mod-styled"
          aria-label="Filter by state"
          value={state}
          onChange={e => setState(e.target.value as StateFilter)}
        >
          <option value="">all states</option>
          <option value="active">not finished</option>
          {JOB_STATES.map(s => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        {sweeps.length ? (
          <select
            className="jp-mod-styled"
            aria-label="Filter by sweep"
            value={sweep}
            onChange={e => setSweep(e.target.value)}
          >
            <option value="">all sweeps</option>
            {sweeps.map(s => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        ) : null}
        <input
          className="jp-mod-styled jp-trainhub-jobs-scalar"
          aria-label="Show the latest value of a scalar"
          placeholder="show scalar, e.g. loss"
          value={scalarInput}
          onChange={e => setScalarInput(e.target.value)}
        />
      </div>
      <div className="jp-trainhub-jobs-bar">
        <span className="jp-trainhub-jobs-count">
          {loading && !current.jobs.length
            ? 'Loading…'
            : `${current.total} job${current.total === 1 ? '' : 's'}${filtered ? ' found' : ''}`}
        </span>
        {compareIds.length ? (
          <>
            <span>{compareIds.length} selected</span>
            <button
              className="jp-mod-styled jp-trainhub-link jp-trainhub-compare"
              disabled={!compareReady}
              title={
                !actions.compare || !actions.canCompare()
                  ? 'Comparing runs is not available'
                  : `Compare ${COMPARE_MIN} to ${COMPARE_MAX} jobs`
              }
              onClick={() => actions.compare?.(compareIds)}
            >
              Compare
            </button>
            <button
              className="jp-mod-styled jp-trainhub-link"
              onClick={() => setSelected(new Map())}
            >
              Clear
            </button>
          </>
        ) : null}
      </div>
      {status === 'waiting' || status === 'error' || error ? (
        <div className="jp-trainhub-banner">
          {error || model.error || 'Live updates interrupted; reconnecting…'}
        </div>
      ) : null}
      {current.pending ? (
        <button
          className="jp-mod-styled jp-trainhub-new-jobs"
          onClick={() => {
            current.release();
            rerender();
          }}
        >
          {current.pending} new job{current.pending === 1 ? '' : 's'}
        </button>
      ) : null}
      <div
        className="jp-trainhub-job-viewport"
        ref={viewport}
        role="list"
        aria-label="Jobs"
        onScroll={e => setScrollTop((e.target as HTMLDivElement).scrollTop)}
        onPointerEnter={() => current.hold(true)}
        onPointerLeave={() => {
          current.hold(false);
          rerender();
        }}
      >
        {rows.length ? (
          <div className="jp-trainhub-job-window" style={{ height: rows.length * ROW_HEIGHT }}>
            {rows.slice(start, end).map((row, i) => (
              <div
                key={row.kind === 'job' ? row.job.id : `sweep:${row.sweepId}`}
                className="jp-trainhub-job-slot"
                style={{ top: (start + i) * ROW_HEIGHT, height: ROW_HEIGHT }}
              >
                {row.kind === 'job' ? (
                  <JobRow
                    job={row.job}
                    trial={row.trial}
                    now={now}
                    actions={actions}
                    selected={selected.has(row.job.id)}
                    onSelect={select}
                    onEdited={edited}
                  />
                ) : (
                  <SweepRow row={row} actions={actions} onToggle={toggle} />
                )}
              </div>
            ))}
          </div>
        ) : loading ? null : (
          <div className="jp-trainhub-empty">
            {filtered ? 'No job found.' : 'No jobs yet. Open a notebook and press “Submit as job”.'}
          </div>
        )}
      </div>
    </div>
  );
}

export class JobsPanel extends ReactWidget {
  constructor(
    private readonly model: JobsModel,
    private readonly api: TrainHubAPI,
    private readonly actions: IJobActions
  ) {
    super();
    this.id = 'trainhub-jobs';
    this.addClass('jp-trainhub-jobs-panel');
    this.title.caption = 'Training jobs';
  }

  render(): JSX.Element {
    return <JobsList model={this.model} api={this.api} actions={this.actions} />;
  }
}
