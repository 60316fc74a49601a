/**
 * The Jobs side panel: the user's jobs, live, found by words, state and sweep; a sweep's
 * trials as one expandable entry; a windowed list of equal rows that loads pages from the
 * server as it scrolls (10,000 jobs are never 10,000 DOM rows); rows that hold still under
 * the pointer; several jobs selected to compare.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { useNow } from '../format';
import {
  EMPTY_QUERY,
  flattenEntries,
  groupSweeps,
  IListQuery,
  JobList,
  listOptions,
  StateFilter,
  visibleRange
} from '../joblist';
import { JobsModel } from '../jobsmodel';
import { IJobSummary, JOB_STATES } from '../models';
import { IJobActions, JobRow, ROW_HEIGHT, SweepRow } from './jobrow';
import { TENSORBOARD_MOST } from '../tensorboard';

const PAGE = 100;
export const COMPARE_MIN = 2;
export const COMPARE_MAX = 10;

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
            {actions.openTensorBoard ? (
              <button
                className="jp-mod-styled jp-trainhub-link jp-trainhub-tensorboard"
                disabled={compareIds.length > TENSORBOARD_MOST}
                title={`The selected jobs' event files in one TensorBoard (1 to ${TENSORBOARD_MOST})`}
                onClick={() => actions.openTensorBoard?.(compareIds)}
              >
                TensorBoard
              </button>
            ) : null}
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
