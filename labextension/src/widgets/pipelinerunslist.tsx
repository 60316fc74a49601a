/**
 * The pipeline editor's Runs: this file's runs, newest first, two of them picked to compare.
 */
import * as React from 'react';

import { formatTime } from '../format';
import { IRunSummary, runDuration, runOutcome } from '../pipelineruns';
import { LinkButton } from './linkbutton';

/** The runs of the pipeline open in the editor (null: still loading). */
export function RunsList(props: {
  runs: IRunSummary[] | null;
  error: string;
  openRun: (id: string) => void;
  compare: (ids: string[]) => void;
}): JSX.Element {
  const now = Date.now() / 1000;
  const [picked, setPicked] = React.useState<string[]>([]);
  const pick = (id: string, on: boolean) =>
    setPicked(p => (on ? [...p.filter(x => x !== id), id].slice(-2) : p.filter(x => x !== id)));
  if (!props.runs) {
    return <div className="jp-trainhub-pipeline-runs">{props.error || 'Loading runs…'}</div>;
  }
  return (
    <div className="jp-trainhub-pipeline-runs">
      <h3>
        Runs of this pipeline{' '}
        <button
          type="button"
          className="jp-mod-styled jp-trainhub-pipeline-compare-runs"
          disabled={picked.length !== 2}
          title="Pick two runs to compare them step by step"
          onClick={() =>
            // the older run first: the list is newest first
            props.compare(
              (props.runs ?? [])
                .filter(r => picked.includes(r.id))
                .map(r => r.id)
                .reverse()
            )
          }
        >
          Compare two runs
        </button>
      </h3>
      {props.runs.length ? (
        <table className="jp-trainhub-pipeline-runs-table">
          <thead>
            <tr>
              <th aria-label="pick" />
              <th>run</th>
              <th>started</th>
              <th>duration</th>
              <th>outcome</th>
              <th>reused</th>
            </tr>
          </thead>
          <tbody>
            {props.runs.map(r => (
              <tr key={r.id} data-run={r.id} data-state={r.state}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`pick run ${r.id}`}
                    checked={picked.includes(r.id)}
                    onChange={e => pick(r.id, e.target.checked)}
                  />
                </td>
                <td>
                  <LinkButton text={r.id} open={() => props.openRun(r.id)} mono />
                </td>
                <td>{formatTime(r.created_at)}</td>
                <td>{runDuration(r, now)}</td>
                <td>
                  <span className={`jp-trainhub-state jp-trainhub-state-${r.state}`}>
                    {runOutcome(r)}
                  </span>
                </td>
                <td>{r.reused.join(', ') || '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <div className="jp-trainhub-muted">No run yet.</div>
      )}
    </div>
  );
}
