/**
 * The sweep view (command `trainhub:open-sweep` with `{sweepId}`): the sweep's rules and
 * progress, its trials as a table sortable by any column (parameters, any scalar), the best
 * trial marked, and a scatter of a parameter against a metric (charts.ts). Followed live while
 * the sweep runs. Every value goes in as text (React escapes it), never as HTML.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ServerConnection } from '@jupyterlab/services';
import * as React from 'react';

import { LineChart } from '../charts';
import {
  cancelSweep,
  getSweep,
  IDescribeSweep,
  ITrialView,
  scalarNames,
  scatter,
  SortKey,
  sortTrials,
  trialStateLabel
} from '../sweeps';
import { CommentsButton } from './commentsbutton';
import { FollowedBody, FollowedView, showOnce } from './followedview';
import { LinkButton } from './linkbutton';

export const OPEN_SWEEP_COMMAND = 'trainhub:open-sweep';

function fmt(v: unknown): string {
  if (typeof v === 'number') {
    return Number.isInteger(v) ? String(v) : v.toPrecision(4).replace(/\.?0+(e|$)/, '$1');
  }
  return v === undefined || v === null ? '–' : typeof v === 'string' ? v : JSON.stringify(v);
}

function TrialState(props: { trial: ITrialView }): JSX.Element {
  const label = trialStateLabel(props.trial);
  const cls = props.trial.failure_class === 'stopped_early' ? 'stopped_early' : label;
  return (
    <span
      className={`jp-trainhub-state jp-trainhub-state-${cls}`}
      title={props.trial.reason ?? props.trial.error ?? props.trial.wait_reason ?? ''}
    >
      {label}
    </span>
  );
}

function Scatter(props: { sweep: IDescribeSweep; param: string; metric: string }): JSX.Element {
  const box = React.useRef<HTMLDivElement>(null);
  const chart = React.useRef<LineChart | null>(null);
  const { sweep, param, metric } = props;
  React.useEffect(() => {
    chart.current = new LineChart({ title: metric, width: 520, height: 240 });
    box.current?.appendChild(chart.current.node);
    return () => chart.current?.dispose();
  }, []);
  React.useEffect(() => {
    const s = scatter(sweep, param, metric);
    chart.current?.setOptions({ title: `${metric} by ${param}`, xLabel: s.xLabel });
    chart.current?.setSeries(s.series);
  }, [sweep, param, metric]);
  return <div className="jp-trainhub-sweep-plot" ref={box} />;
}

class SweepBody extends FollowedBody {
  sweep: IDescribeSweep | null = null;
  sortKey: SortKey = 'trial';
  descending = false;
  param = '';
  metric = '';

  constructor(
    private readonly openJob: (id: string) => void,
    private readonly onCancel: () => void
  ) {
    super();
    this.addClass('jp-trainhub-sweep-body');
  }

  private sortBy(key: SortKey): void {
    this.descending = this.sortKey === key ? !this.descending : false;
    this.sortKey = key;
    this.update();
  }

  private header(label: string, key: SortKey): JSX.Element {
    const on = this.sortKey === key;
    return (
      <th key={key} aria-sort={on ? (this.descending ? 'descending' : 'ascending') : 'none'}>
        <button
          type="button"
          className="jp-trainhub-link jp-trainhub-sweep-sort"
          data-sort={key}
          onClick={() => this.sortBy(key)}
        >
          {label}
          {on ? (this.descending ? ' ▾' : ' ▴') : ''}
        </button>
      </th>
    );
  }

  /** What the plot shows on one axis (its parameter, its metric): a labelled select of names. */
  private plotChoice(
    axis: 'param' | 'metric',
    label: string,
    value: string,
    options: string[]
  ): JSX.Element {
    return (
      <label>
        {label}{' '}
        <select
          className="jp-mod-styled"
          name={`sweep-${axis}`}
          value={value}
          onChange={e => {
            this[axis] = e.target.value;
            this.update();
          }}
        >
          {options.map(o => (
            <option key={o}>{o}</option>
          ))}
        </select>
      </label>
    );
  }

  render(): JSX.Element {
    const sweep = this.sweep;
    if (!sweep) {
      return <div className="jp-trainhub-sweep">{this.error || 'Loading…'}</div>;
    }
    const params = Object.keys(sweep.sweep.space);
    const scalars = scalarNames(sweep);
    const param = params.includes(this.param) ? this.param : params[0];
    const metric = scalars.includes(this.metric) ? this.metric : (scalars[0] ?? '');
    const rows = sortTrials(sweep.trial_views, this.sortKey, this.descending, sweep);
    const rule = sweep.sweep.early_stop;
    return (
      <div className="jp-trainhub-sweep" data-sweep-id={sweep.id} data-state={sweep.state}>
        <h2>
          Sweep {sweep.id}{' '}
          <span className={`jp-trainhub-state jp-trainhub-sweep-state-${sweep.state}`}>
            {sweep.state}
          </span>
        </h2>
        <div className="jp-trainhub-sweep-facts">
          <span>
            {sweep.sampler} sampling, seed {sweep.seed}; {sweep.trials} trials, at most{' '}
            {sweep.sweep.max_running ?? 2} at once
          </span>
          <span className="jp-trainhub-sweep-progress">
            {sweep.submitted} submitted · {sweep.active} active · {sweep.ended} ended ·{' '}
            {sweep.stopped_early} stopped early
          </span>
          {rule ? (
            <span>
              early stopping: {rule.rule === 'median' ? 'median rule' : 'successive halving'} on{' '}
              {rule.metric} ({rule.mode ?? 'min'})
            </span>
          ) : null}
          {sweep.metric ? (
            <span>
              best:{' '}
              {sweep.best_trial === null || sweep.best_trial === undefined
                ? '–'
                : `trial ${sweep.best_trial}`}{' '}
              by {sweep.metric} ({sweep.mode})
            </span>
          ) : null}
          <CommentsButton kind="sweep" target={sweep.id} />
          {sweep.state === 'running' ? (
            <button
              type="button"
              className="jp-mod-styled jp-mod-warn jp-trainhub-sweep-cancel"
              onClick={this.onCancel}
            >
              Cancel sweep
            </button>
          ) : null}
        </div>
        {this.error ? <div className="jp-trainhub-error">{this.error}</div> : null}
        <table className="jp-trainhub-sweep-table">
          <thead>
            <tr>
              <th aria-label="best" />
              {this.header('trial', 'trial')}
              {this.header('state', 'state')}
              {params.map(p => this.header(p, `param:${p}`))}
              {scalars.map(s => this.header(s, `scalar:${s}`))}
              <th>job</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(t => (
              <tr
                key={t.trial}
                data-trial={t.trial}
                className={t.best ? 'jp-trainhub-sweep-best' : ''}
              >
                <td>{t.best ? <span title="best trial">★</span> : null}</td>
                <td>{t.trial}</td>
                <td>
                  <TrialState trial={t} />
                </td>
                {params.map(p => (
                  <td key={p} className="jp-trainhub-mono">
                    {fmt(t.parameters[p])}
                  </td>
                ))}
                {scalars.map(s => (
                  <td key={s} className="jp-trainhub-mono">
                    {s === sweep.metric && t.value !== null && t.value !== undefined
                      ? fmt(t.value)
                      : fmt(t.scalars[s]?.last)}
                  </td>
                ))}
                <td>
                  {t.job_id ? (
                    <LinkButton text={t.job_id} open={() => this.openJob(t.job_id!)} />
                  ) : (
                    (t.error ?? '–')
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {param && metric ? (
          <section className="jp-trainhub-sweep-plot-box">
            {this.plotChoice('param', 'parameter', param, params)}{' '}
            {this.plotChoice('metric', 'metric', metric, scalars)}
            <Scatter sweep={sweep} param={param} metric={metric} />
          </section>
        ) : (
          <div className="jp-trainhub-muted">No scalar logged yet: the plot waits for one.</div>
        )}
      </div>
    );
  }
}

export class SweepView extends FollowedView<SweepBody> {
  constructor(
    readonly sweepId: string,
    private readonly settings: ServerConnection.ISettings,
    openJob: (id: string) => void
  ) {
    super(
      new SweepBody(openJob, () => void this.cancel()),
      `trainhub-sweep-${sweepId}`,
      'jp-trainhub-sweepview',
      `Sweep ${sweepId}`
    );
    void this.refresh();
  }

  protected async read(): Promise<void> {
    this.content.sweep = await getSweep(this.settings, this.sweepId);
  }

  protected running(): boolean {
    return !this.content.sweep || this.content.sweep.state === 'running';
  }

  private async cancel(): Promise<void> {
    await this.attempt(async () => {
      this.content.sweep = await cancelSweep(this.settings, this.sweepId);
    });
  }
}

let opener: ((sweepId: string) => void) | null = null;

/** Open a sweep's view (once the command is registered); the submit dialog's sweep uses it. */
export function openSweep(sweepId: string): void {
  opener?.(sweepId);
}

/** Registers `trainhub:open-sweep` ({sweepId}); one view per sweep. */
export function registerSweepView(
  app: JupyterFrontEnd,
  settings: ServerConnection.ISettings = app.serviceManager.serverSettings
): void {
  const views = new Map<string, SweepView>();
  app.commands.addCommand(OPEN_SWEEP_COMMAND, {
    label: args => (typeof args.sweepId === 'string' ? `Sweep ${args.sweepId}` : 'Open sweep'),
    caption: 'Trials of a sweep, sortable by any scalar, and a parameter against a metric',
    execute: args => {
      const sweepId = String(args.sweepId ?? '');
      if (!sweepId) {
        throw new Error('trainhub:open-sweep needs {sweepId}');
      }
      const openJob = (id: string) => void app.commands.execute('trainhub:open-job', { id });
      return showOnce(app, views, sweepId, () => new SweepView(sweepId, settings, openJob));
    }
  });
  opener = sweepId => void app.commands.execute(OPEN_SWEEP_COMMAND, { sweepId });
}
