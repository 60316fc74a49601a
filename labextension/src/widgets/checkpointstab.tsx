/** The job view's Checkpoints tab: each checkpoint's files, metrics and actions. */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { formatBytes, formatTime } from '../format';
import { ICheckpointInfo, IDescribeJob, TERMINAL_STATES } from '../models';
import { sharingView } from '../sharing';
import { IJobViewActions } from './jobactions';

export function Checkpoints(props: {
  job: IDescribeJob;
  api: TrainHubAPI;
  actions: IJobViewActions;
  version: number;
}): JSX.Element {
  const { job, api, actions } = props;
  const [items, setItems] = React.useState<ICheckpointInfo[] | null>(null);
  const [error, setError] = React.useState('');
  const load = React.useCallback(async () => {
    try {
      const r = await api.checkpoints(job.id);
      setItems(r.checkpoints);
      setError('');
    } catch (e) {
      setError((e as Error).message);
    }
  }, [api, job.id]);
  const active = !TERMINAL_STATES.has(job.state);
  React.useEffect(() => {
    void load();
    // Running jobs write checkpoints as they go: look again every few seconds.
    const timer = active ? setInterval(() => void load(), 3000) : null;
    return () => {
      if (timer) {
        clearInterval(timer);
      }
    };
  }, [load, props.version, active]);
  if (error) {
    return <div className="jp-trainhub-banner">{error}</div>;
  }
  if (items === null) {
    return <div className="jp-trainhub-empty">Loading checkpoints…</div>;
  }
  if (!items.length) {
    return (
      <div className="jp-trainhub-empty">
        No checkpoints yet. Training code saves them with trainhub.checkpoint.save(...).
      </div>
    );
  }
  const metricNames = [...new Set(items.flatMap(c => Object.keys(c.metrics)))].sort();
  // a teammate's job: its checkpoints are theirs to download and fork from, not to delete
  const { readOnly } = sharingView(job, actions.viewer?.user, actions.viewer?.features);
  return (
    <table className="jp-trainhub-table jp-trainhub-checkpoints">
      <thead>
        <tr>
          <th>Step</th>
          <th>Saved</th>
          <th>Size</th>
          {metricNames.map(m => (
            <th key={m}>{m}</th>
          ))}
          <th>Files</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        {[...items].reverse().map(c => (
          <tr key={c.step} data-step={c.step}>
            <td>{c.step}</td>
            <td>{formatTime(c.time)}</td>
            <td>{formatBytes(c.bytes)}</td>
            {metricNames.map(m => (
              <td key={m}>{m in c.metrics ? Number(c.metrics[m]).toPrecision(4) : ''}</td>
            ))}
            <td>
              {c.files.map(f => (
                <a
                  key={f.name}
                  className="jp-trainhub-file"
                  href={api.checkpointFileUrl(job.id, c.step, f.name)}
                  download={f.name}
                  title={`${f.name} · ${formatBytes(f.bytes)} · sha256 ${f.sha256}`}
                >
                  {f.name}
                </a>
              ))}
            </td>
            <td className="jp-trainhub-row-actions">
              <button
                className="jp-mod-styled jp-trainhub-link"
                onClick={() => void actions.loadIntoNotebook(job, c)}
              >
                Load into notebook
              </button>
              <button
                className="jp-mod-styled jp-trainhub-link"
                onClick={async () => {
                  if (actions.rerun) {
                    return actions.rerun(job, 'fork', c.step);
                  }
                  try {
                    const created = await api.fork(job.id, c.step);
                    actions.openJob(created.id);
                  } catch (e) {
                    actions.error('Fork failed', e);
                  }
                }}
              >
                Fork from
              </button>
              {actions.registerModel ? (
                <button
                  className="jp-mod-styled jp-trainhub-link jp-trainhub-register-model"
                  title="Register this checkpoint as the next version of a model"
                  onClick={() => actions.registerModel?.(job, { step: c.step })}
                >
                  Register as model
                </button>
              ) : null}
              {readOnly ? null : (
                <button
                  className="jp-mod-styled jp-trainhub-link jp-trainhub-danger"
                  onClick={async () => {
                    if (
                      await actions.confirm(
                        'Delete checkpoint',
                        `Delete the checkpoint of step ${c.step}?`
                      )
                    ) {
                      try {
                        await api.deleteCheckpoint(job.id, c.step);
                      } catch (e) {
                        actions.error('Delete failed', e);
                      }
                      void load();
                    }
                  }}
                >
                  Delete
                </button>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
