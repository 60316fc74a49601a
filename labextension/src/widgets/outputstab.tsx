/**
 * The Outputs tab of a job view: the folders and files the job wrote to
 * trainhub.outputs.path() (TRAINHUB_OUTPUT_DIR) as a tree with sizes and modification times,
 * each file a download link (an attachment sent without following links). Read again every
 * few seconds while the job runs.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { formatBytes, formatTime } from '../format';
import { IDescribeJob, IOutputList, TERMINAL_STATES } from '../models';
import { outputTree, visibleRows } from '../outputs';
import { IJobViewActions } from './jobactions';

export const OUTPUTS_REFRESH_MS = 3000;

export function Outputs(props: {
  job: IDescribeJob;
  api: TrainHubAPI;
  actions: IJobViewActions;
}): JSX.Element {
  const { job, api, actions } = props;
  const [listing, setListing] = React.useState<IOutputList | null>(null);
  const [error, setError] = React.useState('');
  const [open, setOpen] = React.useState<Set<string>>(new Set());
  const active = !TERMINAL_STATES.has(job.state);
  React.useEffect(() => {
    let live = true;
    const load = async (): Promise<void> => {
      try {
        const found = await api.outputs(job.id);
        if (live) {
          setListing(found);
          setError('');
        }
      } catch (e) {
        if (live) {
          setError((e as Error).message);
        }
      }
    };
    void load();
    const timer = active ? setInterval(() => void load(), OUTPUTS_REFRESH_MS) : null;
    return () => {
      live = false;
      if (timer) {
        clearInterval(timer);
      }
    };
  }, [api, job.id, active]);
  const tree = React.useMemo(() => outputTree(listing?.entries ?? []), [listing]);
  if (error) {
    return <div className="jp-trainhub-banner">{error}</div>;
  }
  if (listing === null) {
    return <div className="jp-trainhub-empty">Loading outputs…</div>;
  }
  if (!listing.entries.length) {
    return (
      <div className="jp-trainhub-empty">
        No outputs {active ? 'yet' : ''}. Training code writes them to trainhub.outputs.path() (the
        folder TRAINHUB_OUTPUT_DIR names); they are kept after the job ends.
      </div>
    );
  }
  const toggle = (path: string): void => {
    const next = new Set(open);
    if (!next.delete(path)) {
      next.add(path);
    }
    setOpen(next);
  };
  return (
    <div className="jp-trainhub-outputs">
      <div className="jp-trainhub-outputs-summary">
        {listing.files} {listing.files === 1 ? 'file' : 'files'}, {formatBytes(listing.bytes)}
        {listing.truncated ? ' (the first 10,000 entries)' : ''}
      </div>
      <table className="jp-trainhub-table jp-trainhub-outputs-table">
        <thead>
          <tr>
            <th>Name</th>
            <th>Size</th>
            <th>Modified</th>
            {actions.registerModel ? <th></th> : null}
          </tr>
        </thead>
        <tbody>
          {visibleRows(tree, open).map(node => {
            const { entry } = node;
            const indent = { paddingLeft: `${node.depth * 1.25 + 0.25}em` };
            return (
              <tr key={entry.path} data-path={entry.path} data-kind={entry.kind}>
                <td style={indent}>
                  {entry.kind === 'dir' ? (
                    <button
                      className="jp-mod-styled jp-trainhub-link jp-trainhub-outputs-folder"
                      aria-expanded={open.has(entry.path)}
                      onClick={() => toggle(entry.path)}
                    >
                      {open.has(entry.path) ? '▾' : '▸'} {node.name}/
                    </button>
                  ) : (
                    <a
                      className="jp-trainhub-file"
                      href={api.outputFileUrl(job.id, entry.path)}
                      download={node.name}
                      title={`Download ${entry.path}`}
                    >
                      {node.name}
                    </a>
                  )}
                </td>
                <td>{formatBytes(entry.bytes)}</td>
                <td>{formatTime(entry.mtime)}</td>
                {actions.registerModel ? (
                  <td className="jp-trainhub-row-actions">
                    <button
                      className="jp-mod-styled jp-trainhub-link jp-trainhub-register-model"
                      title={`Register ${entry.path} as the next version of a model`}
                      onClick={() => actions.registerModel?.(job, { path: entry.path })}
                    >
                      Register as model
                    </button>
                  </td>
                ) : null}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
