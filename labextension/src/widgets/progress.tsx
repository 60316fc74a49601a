/** The Overview's first section: a running job's progress, or a finished job's result. */
import * as React from 'react';

import { formatElapsed } from '../format';
import { bestCheckpoint, IScalarSummary, latestStep } from '../jobsummary';
import { IDescribeJob, TERMINAL_STATES } from '../models';
import { IJobRecords } from './jobrecords';
import { KeyValues } from './keyvalues';

function value(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toPrecision(4);
}

function ScalarTable(props: { scalars: IScalarSummary[]; result: boolean }): JSX.Element {
  return (
    <table className="jp-trainhub-table jp-trainhub-scalars">
      <thead>
        <tr>
          <th>Scalar</th>
          <th>{props.result ? 'Final' : 'Last'}</th>
          {props.result ? <th>Best</th> : null}
        </tr>
      </thead>
      <tbody>
        {props.scalars.map(s => (
          <tr key={s.name} data-scalar={s.name}>
            <td>{s.name}</td>
            <td>
              {value(s.last.value)} <span className="jp-trainhub-muted">at step {s.last.step}</span>
            </td>
            {props.result ? (
              <td>
                {value(s.best.value)}{' '}
                <span className="jp-trainhub-muted">
                  at step {s.best.step} ({s.minimize ? 'lowest' : 'highest'})
                </span>
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** How far a running job is, or what a finished one achieved: the first thing shown. */
export function Progress(props: { job: IDescribeJob; records: IJobRecords; now: number }) {
  const { job, records, now } = props;
  const ended = TERMINAL_STATES.has(job.state);
  if (!ended && !job.started_at) {
    return null;
  }
  const step = latestStep(records.scalars);
  const lineageCells = (job.lineage?.source as { cells?: unknown } | undefined)?.cells;
  const total = Array.isArray(lineageCells) ? lineageCells.length : null;
  const facts: Record<string, string> = {
    ...(step !== null ? { [ended ? 'last step' : 'step']: String(step) } : {}),
    ...(job.spec.source.kind === 'notebook'
      ? { cells: `${records.cellsDone}${total !== null ? ` of ${total}` : ''} done` }
      : {}),
    [ended ? 'ran for' : 'running for']: formatElapsed(job, now)
  };
  const best = ended && records.checkpoints ? bestCheckpoint(records.checkpoints) : null;
  if (best) {
    const c = best.checkpoint;
    facts['best checkpoint'] = `step ${c.step}${
      best.metric ? ` (${best.metric} ${value(c.metrics[best.metric])})` : ' (latest)'
    }`;
  }
  return (
    <section className={`jp-trainhub-progress ${ended ? 'jp-mod-result' : ''}`}>
      <h3>{ended ? 'Result' : 'Progress'}</h3>
      <KeyValues data={facts} />
      {records.scalars.length ? (
        <ScalarTable scalars={records.scalars} result={ended} />
      ) : (
        <p className="jp-trainhub-muted">
          {ended ? 'No training scalars were logged.' : 'No training scalars yet.'}
        </p>
      )}
    </section>
  );
}
