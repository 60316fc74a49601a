/** The Overview's failure box: where and what failed, the traceback, the way to the cell. */
import * as React from 'react';

import { cellLabel } from '../format';
import { failureWhat, failureWhere } from '../jobsummary';
import { IDescribeJob, IVerdict } from '../models';
import { openExecutedCell } from './notebooktab';
import { IJobViewActions } from './jobactions';
import { Folded } from './keyvalues';

/** Why a failed job failed: where, what, the traceback folded, and a way to the cell. */
export function FailureBox(props: {
  job: IDescribeJob;
  verdict: IVerdict;
  actions: IJobViewActions;
}) {
  const { job, verdict: v, actions } = props;
  const source = job.spec.source;
  const where = failureWhere(v);
  const traceback = (v as IVerdict & { traceback?: string | null }).traceback;
  return (
    <section className={`jp-trainhub-verdict jp-trainhub-verdict-${v.failure_class}`}>
      <h3>
        {v.failure_class} failure{v.retriable ? ' (retriable)' : ''}
      </h3>
      <p className="jp-trainhub-verdict-reason">
        {v.exception ? `${failureWhat(v)}${where ? ` in ${where}` : ''}` : v.reason}
      </p>
      {traceback ? (
        <Folded summary="Traceback" className="jp-trainhub-traceback">
          <pre className="jp-trainhub-verdict-exception">{traceback}</pre>
        </Folded>
      ) : v.exception || v.message ? (
        <pre className="jp-trainhub-verdict-exception">
          {[v.exception, v.message].filter(Boolean).join(': ')}
        </pre>
      ) : null}
      <p className="jp-trainhub-muted">
        {[
          v.rank !== null && v.rank !== undefined ? `rank ${v.rank}` : '',
          v.exit_code !== null && v.exit_code !== undefined ? `exit code ${v.exit_code}` : '',
          v.signal ?? '',
          `attempt ${(v.attempt ?? 0) + 1}`
        ]
          .filter(Boolean)
          .join(' · ')}
      </p>
      {v.cell_index !== null && v.cell_index !== undefined && source.kind === 'notebook' ? (
        <button
          className="jp-mod-styled jp-mod-accept jp-Button"
          onClick={() => void actions.openNotebookAt(source.path, v.cell_index ?? null, v.line)}
        >
          Open {source.path} at {cellLabel(v.cell_index)}
          {v.line ? `, line ${v.line}` : ''}
        </button>
      ) : null}
      {v.cell_index !== null && v.cell_index !== undefined && source.kind === 'notebook' ? (
        <button
          className="jp-mod-styled jp-Button jp-trainhub-open-executed"
          onClick={() => openExecutedCell(job.id, v.cell_index!)}
        >
          Open the executed notebook there
        </button>
      ) : null}
    </section>
  );
}
