/**
 * The goodput breakdown: a compact bar of where a job's time went (kept progress, start-up,
 * checkpoint stalls, redone steps, interrupted attempts) with the numbers beside it. Used by
 * the job view's Overview (GET jobs/{id}/usage) and the Usage panel's wasteful jobs.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { IDescribeJob, TERMINAL_STATES } from '../models';
import { formatGpuSeconds, formatShare, goodputSegments, IGoodputParts, IJobUsage } from '../usage';

export function GoodputBar(props: {
  parts: IGoodputParts;
  gpus: number;
  legend?: boolean;
}): JSX.Element | null {
  const { parts, gpus } = props;
  const segments = goodputSegments(parts);
  if (!segments.length) {
    return null;
  }
  const amount = (s: number) => (gpus > 0 ? formatGpuSeconds(s * gpus) : `${Math.round(s)} s`);
  return (
    <div className="jp-trainhub-goodput">
      <div
        className="jp-trainhub-goodput-bar"
        role="img"
        aria-label={`goodput ${formatShare(parts.goodput)}`}
      >
        {segments.map(s => (
          <span
            key={s.key}
            className={`jp-trainhub-goodput-${s.key}`}
            style={{ width: `${(s.share * 100).toFixed(2)}%` }}
            title={`${s.label}: ${amount(s.seconds)} (${formatShare(s.share)})`}
          />
        ))}
      </div>
      {props.legend !== false ? (
        <ul className="jp-trainhub-goodput-legend">
          {segments.map(s => (
            <li key={s.key} data-part={s.key}>
              <span className={`jp-trainhub-goodput-swatch jp-trainhub-goodput-${s.key}`} />
              {s.label} {formatShare(s.share)} · {amount(s.seconds)}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** The Overview's Goodput section: read once the job has ended, and every 10 s before. */
export function JobGoodput(props: { job: IDescribeJob; api: TrainHubAPI }): JSX.Element | null {
  const { job, api } = props;
  const [usage, setUsage] = React.useState<IJobUsage | null>(null);
  const ended = TERMINAL_STATES.has(job.state);
  React.useEffect(() => {
    if (!job.started_at) {
      return;
    }
    let live = true;
    const read = () =>
      api.jobUsage(job.id).then(
        u => live && setUsage(u),
        () => undefined // no accounting on this backend: the section stays away
      );
    void read();
    const timer = ended ? null : window.setInterval(read, 10000);
    return () => {
      live = false;
      if (timer !== null) {
        window.clearInterval(timer);
      }
    };
  }, [job.id, job.state, job.started_at]);
  if (!usage || usage.goodput === null) {
    return null;
  }
  return (
    <section className="jp-trainhub-job-goodput">
      <h3>
        Goodput <span className="jp-trainhub-goodput-figure">{formatShare(usage.goodput)}</span>
        {ended ? '' : <span className="jp-trainhub-muted"> so far</span>}
      </h3>
      <GoodputBar parts={usage} gpus={usage.gpus} />
      <div className="jp-trainhub-muted jp-trainhub-goodput-facts">
        {usage.steps} steps kept
        {usage.redone_steps ? ` · ${usage.redone_steps} redone after a restart` : ''}
        {usage.attempts > 1 ? ` · ${usage.attempts} attempts` : ''}
        {usage.requeue_s >= 1 ? ` · ${Math.round(usage.requeue_s)} s waiting between attempts` : ''}
      </div>
    </section>
  );
}
