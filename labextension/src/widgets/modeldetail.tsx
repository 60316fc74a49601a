/**
 * One model in the Models panel: its versions side by side with their metrics (aliases as
 * badges, archived ones greyed), a version's lineage and actions when opened, two versions
 * picked to compare, and the audit log.
 */
import * as React from 'react';

import { formatBytes, formatTime } from '../format';
import {
  aliasesOf,
  auditNewestFirst,
  auditText,
  IModelVersion,
  IModelView,
  metricText,
  sourceText,
  toggleCompare,
  versionLineage,
  versionSnippets
} from '../registry';
import { CommentsButton } from './commentsbutton';
import { KeyValues } from './keyvalues';

export interface IModelActions {
  openJob: (jobId: string) => void;
  compare: (a: IModelVersion, b: IModelVersion) => void;
  copy: (snippet: string) => void;
  moveAlias: (view: IModelView, version: IModelVersion) => Promise<void>;
  archive: (view: IModelView, version: IModelVersion) => Promise<void>;
}

function AliasBadges(props: { aliases: string[] }): JSX.Element {
  return (
    <>
      {props.aliases.map(a => (
        <span key={a} className="jp-trainhub-model-alias" data-alias={a}>
          @{a}
        </span>
      ))}
    </>
  );
}

function VersionDetail(props: {
  view: IModelView;
  version: IModelVersion;
  actions: IModelActions;
}): JSX.Element {
  const { view, version: v, actions } = props;
  return (
    <div className="jp-trainhub-model-version-detail" data-version={v.version}>
      <div className="jp-trainhub-model-updated">
        {sourceText(v.source)} · registered by {v.user} {formatTime(v.created_at)}
        {v.archived ? ' · archived' : ''}
      </div>
      {v.description ? <p className="jp-trainhub-model-description">{v.description}</p> : null}
      <div className="jp-trainhub-model-actions">
        <button
          className="jp-mod-styled jp-trainhub-link"
          onClick={() => actions.openJob(v.source.job)}
          title={`Open the view of job ${v.source.job}`}
        >
          Open job {v.source.job}
        </button>
        <button
          className="jp-mod-styled jp-trainhub-link"
          disabled={v.archived}
          title={v.archived ? 'Unarchive it first' : 'Point an alias at this version'}
          onClick={() => void actions.moveAlias(view, v)}
        >
          Move alias here…
        </button>
        <button
          className="jp-mod-styled jp-trainhub-link"
          onClick={() => void actions.archive(view, v)}
        >
          {v.archived ? 'Unarchive…' : 'Archive…'}
        </button>
        <CommentsButton
          kind="model_version"
          target={`${v.model}/${v.version}`}
          className="jp-mod-styled jp-trainhub-link"
          title="The team's discussion of this version"
        />
      </div>
      <div className="jp-trainhub-model-snippets" aria-label="Load snippets">
        {versionSnippets(v).map(s => (
          <div key={s} className="jp-trainhub-model-snippet">
            <code>{s}</code>
            <button
              className="jp-mod-styled jp-trainhub-link"
              title="Copy to the clipboard"
              aria-label={`Copy ${s}`}
              onClick={() => actions.copy(s)}
            >
              Copy
            </button>
          </div>
        ))}
      </div>
      <h4>Lineage</h4>
      <KeyValues
        data={{
          ...versionLineage(v),
          files: `${v.files.files} ${v.files.files === 1 ? 'file' : 'files'}, ${formatBytes(v.files.bytes)}`
        }}
      />
    </div>
  );
}

export function ModelDetail(props: {
  view: IModelView;
  focus: number | null;
  setFocus: (version: number | null) => void;
  actions: IModelActions;
}): JSX.Element {
  const { view, focus, setFocus, actions } = props;
  const [picked, setPicked] = React.useState<number[]>([]);
  const pair = picked
    .map(n => view.versions.find(v => v.version === n))
    .filter((v): v is IModelVersion => !!v);
  const focused = view.versions.find(v => v.version === focus);
  return (
    <div className="jp-trainhub-model" data-model={view.name}>
      <div className="jp-trainhub-model-summary">
        latest {view.latest ?? 'none'} · <AliasBadges aliases={aliasesOf(view.aliases)} />
        {pair.length === 2 ? (
          <button
            className="jp-mod-styled jp-trainhub-link jp-trainhub-model-compare"
            onClick={() => actions.compare(pair[0], pair[1])}
          >
            Compare versions {pair[0].version} and {pair[1].version}
          </button>
        ) : (
          <span className="jp-trainhub-form-hint"> · tick two versions to compare them</span>
        )}
      </div>
      {/* a sidebar is narrow: the table scrolls sideways on its own, nothing else does */}
      <div className="jp-trainhub-model-table-scroll">
        <table className="jp-trainhub-table jp-trainhub-model-versions">
          <thead>
            <tr>
              <th aria-label="Compare"></th>
              <th>Version</th>
              <th>Aliases</th>
              {view.metric_names.map(m => (
                <th key={m}>{m}</th>
              ))}
              <th>Registered</th>
            </tr>
          </thead>
          <tbody>
            {view.versions.map(v => (
              <tr
                key={v.version}
                className={`jp-trainhub-model-version${v.archived ? ' jp-mod-archived' : ''}${
                  focus === v.version ? ' jp-mod-selected' : ''
                }`}
                data-version={v.version}
                data-archived={v.archived}
                title={v.archived ? 'Archived' : sourceText(v.source)}
                onClick={() => setFocus(focus === v.version ? null : v.version)}
              >
                <td onClick={e => e.stopPropagation()}>
                  <input
                    type="checkbox"
                    aria-label={`Compare version ${v.version}`}
                    checked={picked.includes(v.version)}
                    onChange={() => setPicked(toggleCompare(picked, v.version))}
                  />
                </td>
                <td>
                  <button
                    className="jp-mod-styled jp-trainhub-link"
                    aria-expanded={focus === v.version}
                  >
                    {focus === v.version ? '▾' : '▸'} {v.version}
                  </button>
                </td>
                <td>
                  <AliasBadges aliases={v.aliases} />
                  {v.archived ? <span className="jp-trainhub-form-hint">archived</span> : null}
                </td>
                {view.metric_names.map(m => (
                  <td key={m} data-metric={m}>
                    {metricText(v.metrics[m])}
                  </td>
                ))}
                <td className="jp-trainhub-model-when">
                  {formatTime(v.created_at)} · {v.user}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {focused ? (
        <>
          <h3>Version {focused.version}</h3>
          <VersionDetail view={view} version={focused} actions={actions} />
        </>
      ) : (
        <div className="jp-trainhub-form-hint">Open a version for its lineage and actions.</div>
      )}
      <h3>Audit log</h3>
      <ol className="jp-trainhub-model-audit" reversed>
        {auditNewestFirst(view.audit).map((e, i) => (
          <li key={i} data-event={e.event} data-alias={e.alias ?? undefined}>
            <div className="jp-trainhub-model-audit-what">{auditText(e)}</div>
            <div className="jp-trainhub-model-updated">
              {formatTime(e.time)} · {e.user}
            </div>
            {e.reason ? <div className="jp-trainhub-model-audit-reason">{e.reason}</div> : null}
          </li>
        ))}
      </ol>
    </div>
  );
}
