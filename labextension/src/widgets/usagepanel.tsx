/**
 * The Usage panel (palette: "trainhub: Usage"), in the main area: the signed-in user's and
 * their team's GPU-hours this week and month (bars per day), the team's quota per pool now,
 * the queue and the typical wait, failures by class over 30 days, and the user's most
 * wasteful jobs with their goodput. One answer of GET trainhub/api/usage/panel, read again
 * by Refresh. Values go in as text (React escapes them); colours are theme variables.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, ReactWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { formatDuration } from '../format';
import {
  barLayout,
  failureText,
  formatHours,
  formatShare,
  IUsagePanel,
  quotaBar,
  sessionGpuText
} from '../usage';
import { GoodputBar } from './goodput';

export const USAGE_COMMAND = 'trainhub:usage';
const CHART = { width: 600, height: 120, left: 44, bottom: 18 };
/** A quota's meter, left to right: used within the quota, borrowed beyond it, free (quotaBar). */
const METER_PARTS = ['used', 'borrowed', 'free'] as const;

function Figure(props: { label: string; value: string; note?: string }): JSX.Element {
  return (
    <div className="jp-trainhub-usage-figure">
      <div className="jp-trainhub-usage-figure-value">{props.value}</div>
      <div className="jp-trainhub-usage-figure-label">{props.label}</div>
      {props.note ? <div className="jp-trainhub-muted">{props.note}</div> : null}
    </div>
  );
}

/** GPU-hours per day (the user's; the team's behind them, outlined). */
function DailyChart(props: { data: IUsagePanel }): JSX.Element {
  const { daily } = props.data;
  const w = CHART.width - CHART.left;
  const h = CHART.height - CHART.bottom;
  const teamMax = Math.max(0, ...daily.map(d => d.team ?? 0));
  const mine = barLayout(
    daily.map(d => ({ label: d.day, value: d.mine })),
    w,
    h,
    teamMax
  );
  const team = props.data.team
    ? barLayout(
        daily.map(d => ({ label: d.day, value: d.team ?? 0 })),
        w,
        h,
        teamMax
      )
    : [];
  const top = Math.max(teamMax, ...daily.map(d => d.mine));
  return (
    <svg
      className="jp-trainhub-usage-daily"
      viewBox={`0 0 ${CHART.width} ${CHART.height}`}
      role="img"
      aria-label="GPU-hours per day, last 30 days"
    >
      <text className="jp-trainhub-usage-axis" x={CHART.left - 4} y={10} textAnchor="end">
        {formatHours(top)}
      </text>
      <text className="jp-trainhub-usage-axis" x={CHART.left - 4} y={h} textAnchor="end">
        0
      </text>
      <line className="jp-trainhub-usage-baseline" x1={CHART.left} x2={CHART.width} y1={h} y2={h} />
      <g transform={`translate(${CHART.left},0)`}>
        {team.map(b => (
          <rect
            key={`t${b.label}`}
            className="jp-trainhub-usage-bar-team"
            x={b.x}
            y={b.y}
            width={b.width}
            height={b.height}
          >
            <title>{`${b.label}: team ${formatHours(b.value)}`}</title>
          </rect>
        ))}
        {mine.map(b => (
          <rect
            key={`m${b.label}`}
            className="jp-trainhub-usage-bar-mine"
            x={b.x + b.width * 0.2}
            y={b.y}
            width={b.width * 0.6}
            height={b.height}
          >
            <title>{`${b.label}: mine ${formatHours(b.value)}`}</title>
          </rect>
        ))}
      </g>
      <text className="jp-trainhub-usage-axis" x={CHART.left} y={CHART.height - 4}>
        {daily[0]?.day ?? ''}
      </text>
      <text
        className="jp-trainhub-usage-axis"
        x={CHART.width}
        y={CHART.height - 4}
        textAnchor="end"
      >
        {daily[daily.length - 1]?.day ?? ''}
      </text>
    </svg>
  );
}

function Quotas(props: { data: IUsagePanel }): JSX.Element {
  const { quotas, quota_source } = props.data;
  if (!quotas.length) {
    return (
      <div className="jp-trainhub-muted">No quota known ({quota_source || 'this backend'}).</div>
    );
  }
  return (
    <table className="jp-trainhub-usage-quotas">
      <tbody>
        {quotas.map(q => {
          const bar = quotaBar(q);
          return (
            <tr key={`${q.pool}/${q.resource}`} data-pool={q.pool} data-resource={q.resource}>
              <th>
                {q.pool} <span className="jp-trainhub-muted">{q.resource}</span>
              </th>
              <td>
                <div className="jp-trainhub-usage-meter" role="img" aria-label={bar.text}>
                  {METER_PARTS.map(part => (
                    <span
                      key={part}
                      className={`jp-trainhub-usage-meter-${part}`}
                      style={{ width: `${bar[part] * 100}%` }}
                    />
                  ))}
                </div>
              </td>
              <td className="jp-trainhub-usage-quota-text">{bar.text}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function Failures(props: { data: IUsagePanel }): JSX.Element {
  const { failures, ended_30d } = props.data;
  if (!failures.length) {
    return (
      <div className="jp-trainhub-muted">
        No failure among {ended_30d} job{ended_30d === 1 ? '' : 's'} that ended in the last 30 days.
      </div>
    );
  }
  return (
    <ul className="jp-trainhub-usage-failures">
      {failures.map(f => (
        <li key={f.failure_class} data-class={f.failure_class}>
          <span className="jp-trainhub-usage-failure-text">{failureText(f)}</span>
          <span className="jp-trainhub-usage-failure-track">
            <span className="jp-trainhub-usage-failure-bar" style={{ width: `${f.rate * 100}%` }} />
          </span>
        </li>
      ))}
      <li className="jp-trainhub-muted">of {ended_30d} jobs that ended in the last 30 days</li>
    </ul>
  );
}

function Wasteful(props: { data: IUsagePanel; openJob: (id: string) => void }): JSX.Element {
  const { wasteful } = props.data;
  if (!wasteful.length) {
    return (
      <div className="jp-trainhub-muted">No job of yours lost GPU time in the last 30 days.</div>
    );
  }
  return (
    <table className="jp-trainhub-usage-wasteful">
      <thead>
        <tr>
          <th>job</th>
          <th>goodput</th>
          <th>where the time went</th>
          <th>idle GPU</th>
        </tr>
      </thead>
      <tbody>
        {wasteful.map(j => (
          <tr key={j.job_id} data-job={j.job_id}>
            <td>
              <button className="jp-trainhub-link" onClick={() => props.openJob(j.job_id)}>
                {j.job_id}
              </button>{' '}
              <span className="jp-trainhub-muted">{j.state}</span>
            </td>
            <td className="jp-trainhub-usage-goodput">{formatShare(j.goodput)}</td>
            <td>
              <GoodputBar parts={j} gpus={j.gpus} legend={false} />
            </td>
            <td>{formatHours(j.gpu_waste_s / 3600)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function UsageView(props: {
  data: IUsagePanel | null;
  error: string | null;
  refresh: () => void;
  openJob: (id: string) => void;
}): JSX.Element {
  const { data, error } = props;
  if (error) {
    return <div className="jp-trainhub-empty">Usage is not available: {error}</div>;
  }
  if (!data) {
    return <div className="jp-trainhub-empty">Loading…</div>;
  }
  return (
    <div className="jp-trainhub-usage">
      <div className="jp-trainhub-usage-head">
        <h2>
          Usage of {data.user}
          {data.team ? ` · team ${data.team}` : ''}
        </h2>
        <button className="jp-mod-styled jp-trainhub-usage-refresh" onClick={props.refresh}>
          Refresh
        </button>
      </div>
      {sessionGpuText(data.session_gpu) ? (
        <div className="jp-trainhub-usage-session-gpu">
          This session: {sessionGpuText(data.session_gpu)}
        </div>
      ) : null}
      <section className="jp-trainhub-usage-figures">
        <Figure label="my GPU-hours this week" value={formatHours(data.mine.week)} />
        <Figure label="my GPU-hours this month" value={formatHours(data.mine.month)} />
        {data.team_hours ? (
          <>
            <Figure label="team GPU-hours this week" value={formatHours(data.team_hours.week)} />
            <Figure label="team GPU-hours this month" value={formatHours(data.team_hours.month)} />
          </>
        ) : null}
        <Figure
          label="jobs waiting"
          value={String(data.waiting)}
          note={`${data.waiting_mine} of them mine`}
        />
        <Figure
          label="typical wait (median, 30 days)"
          value={data.typical_wait_s === null ? '–' : formatDuration(data.typical_wait_s)}
        />
        <Figure label="my goodput (30 days)" value={formatShare(data.goodput_30d)} />
      </section>
      <section>
        <h3>GPU-hours per day</h3>
        <DailyChart data={data} />
        {data.daily.every(d => !d.mine && !d.team) ? (
          <div className="jp-trainhub-muted jp-trainhub-usage-nogpu">
            No GPU time in the last 30 days (jobs without GPUs count no GPU-hours).
          </div>
        ) : null}
        <div className="jp-trainhub-usage-key">
          <span className="jp-trainhub-usage-swatch jp-trainhub-usage-bar-mine" /> mine
          {data.team ? (
            <>
              {' '}
              <span className="jp-trainhub-usage-swatch jp-trainhub-usage-bar-team" /> team{' '}
              {data.team}
            </>
          ) : null}
        </div>
      </section>
      <section>
        <h3>
          Quota now <span className="jp-trainhub-muted">({data.quota_source})</span>
        </h3>
        <Quotas data={data} />
      </section>
      <section>
        <h3>Failures by class</h3>
        <Failures data={data} />
      </section>
      <section>
        <h3>My most wasteful jobs</h3>
        <Wasteful data={data} openJob={props.openJob} />
      </section>
    </div>
  );
}

export class UsagePanel extends ReactWidget {
  private data: IUsagePanel | null = null;
  private error: string | null = null;

  constructor(
    private readonly api: TrainHubAPI,
    private readonly openJob: (id: string) => void
  ) {
    super();
    this.id = 'trainhub-usage';
    this.title.label = 'Usage';
    this.title.closable = true;
    this.addClass('jp-trainhub-usage-panel');
    void this.refresh();
  }

  async refresh(): Promise<void> {
    try {
      this.data = await this.api.usagePanel();
      this.error = null;
    } catch (error) {
      this.error = (error as Error).message ?? String(error);
    }
    this.update();
  }

  render(): JSX.Element {
    return (
      <UsageView
        data={this.data}
        error={this.error}
        refresh={() => void this.refresh()}
        openJob={this.openJob}
      />
    );
  }
}

export function registerUsagePanel(
  app: JupyterFrontEnd,
  api: TrainHubAPI,
  palette: ICommandPalette | null,
  category: string
): void {
  let panel: UsagePanel | null = null;
  app.commands.addCommand(USAGE_COMMAND, {
    label: 'trainhub: Usage',
    caption: 'GPU-hours, quota, waits, failures and goodput of you and your team',
    execute: () => {
      if (!panel || panel.isDisposed) {
        const openJob = (id: string) => void app.commands.execute('trainhub:open-job', { id });
        panel = new UsagePanel(api, openJob);
        app.shell.add(panel, 'main');
      } else {
        void panel.refresh();
      }
      app.shell.activateById(panel.id);
      return panel;
    }
  });
  palette?.addItem({ command: USAGE_COMMAND, category });
}
