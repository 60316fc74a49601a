/**
 * The goodput breakdown: a compact bar of where a job's time went (kept progress, start-up,
 * checkpoint stalls, waiting for data, redone steps, interrupted attempts) with the numbers
 * beside it. Used by the job view's Overview (GET jobs/{id}/usage) and the Usage panel's
 * wasteful jobs. The Overview also says, beside GPU utilization, how much of each step
 * waited for data, and what to try when that dominates.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { stallFacts } from '../datawait';
import { IDataWait, IDescribeJob, TERMINAL_STATES } from '../models';
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
  const stalls = (
    <InputStalls
      job={job}
      busy={usage?.gpu_busy_s}
      sampled={usage?.gpu_sampled_s}
      dataWait={usage?.data_wait ?? job.data_wait}
    />
  );
  if (!usage || usage.goodput === null) {
    return stalls;
  }
  return (
    <section className="jp-trainhub-job-goodput">
      <h3>
        Goodput <span className="jp-trainhub-goodput-figure">{formatShare(usage.goodput)}</span>
        {ended ? '' : <span className="jp-trainhub-muted"> so far</span>}
      </h3>
      {stalls}
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

/** GPU utilization and the share of each step spent waiting for data, with the advice. */
function InputStalls(props: {
  job: IDescribeJob;
  busy?: number;
  sampled?: number;
  dataWait?: IDataWait | null;
}): JSX.Element | null {
  const facts = stallFacts(props.dataWait, props.busy, props.sampled);
  const line = [facts.gpu, facts.wait].filter(Boolean).join(' · ');
  if (!facts.wait) {
    return null; // no DataLoader seen: GPU utilization has its charts in the Metrics tab
  }
  return (
    <div className="jp-trainhub-input-stalls">
      <div className="jp-trainhub-muted">
        {line}
        {facts.ranks ? ` (${facts.ranks})` : ''}
      </div>
      {facts.advice ? (
        <div className="jp-trainhub-banner jp-trainhub-wait jp-trainhub-stall-advice">
          {facts.advice}
        </div>
      ) : null}
    </div>
  );
}
