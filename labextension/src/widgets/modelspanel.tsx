/**
 * The Models side panel: the team's models (name, versions, latest, aliases, when and by whom
 * last changed), and one model opened below them (widgets/modeldetail.tsx). It asks the
 * server again every few seconds while shown, and at once after an action.
 */
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { formatTime } from '../format';
import { aliasesOf, IModelSummary, IModelView } from '../registry';
import { IModelActions, ModelDetail } from './modeldetail';
import { IPolled, SidePanel, SidePanelFrame, usePolling } from './sidepanel';

const POLL_MS = 10000;

/** Which model (and version) the panel shows open. */
export interface IModelFocus {
  name: string | null;
  version: number | null;
}

function ModelsList(props: {
  api: TrainHubAPI;
  actions: IModelActions;
  polled: IPolled;
  focus: IModelFocus;
  setFocus: (focus: IModelFocus) => void;
}): JSX.Element {
  const { api, actions, polled, focus, setFocus } = props;
  const [models, setModels] = React.useState<IModelSummary[] | null>(null);
  const [detail, setDetail] = React.useState<IModelView | null>(null);
  const [error, setError] = React.useState('');
  const openRef = React.useRef(focus.name);
  openRef.current = focus.name;

  const load = React.useCallback(async () => {
    try {
      const listed = await api.listModels();
      setModels(listed.models);
      const open = openRef.current;
      const view = open ? await api.describeModel(open) : null;
      if (openRef.current === open) {
        setDetail(view);
      }
      setError('');
    } catch (e) {
      setError((e as Error).message);
    }
  }, [api]);

  usePolling(load, polled, POLL_MS);
  // a model opened (by a row, or by the Register button's link): read it now
  React.useEffect(() => {
    setDetail(null);
    void load();
  }, [focus.name, load]);

  return (
    <SidePanelFrame
      className="jp-trainhub-models"
      title="Models"
      reload={() => void load()}
      error={error}
      listClassName="jp-trainhub-model-list"
      items={models}
      empty={
        <>
          No models yet. Register one from a job’s Checkpoints or Outputs tab (“Register as model”),
          or with trainhub model register NAME --from JOB.
        </>
      }
      row={m => (
        <div
          key={m.name}
          role="listitem"
          className={`jp-trainhub-side-row jp-trainhub-model-row${focus.name === m.name ? ' jp-mod-selected' : ''}`}
          data-model={m.name}
        >
          <button
            className="jp-trainhub-side-head jp-trainhub-model-head"
            aria-expanded={focus.name === m.name}
            onClick={() => setFocus({ name: focus.name === m.name ? null : m.name, version: null })}
          >
            <span className="jp-trainhub-side-name jp-trainhub-model-name">{m.name}</span>
            <span className="jp-trainhub-model-facts">
              {m.versions} {m.versions === 1 ? 'version' : 'versions'} · latest {m.latest ?? 'none'}{' '}
              {aliasesOf(m.aliases).map(a => (
                <span key={a} className="jp-trainhub-model-alias" data-alias={a}>
                  @{a}→{m.aliases[a]}
                </span>
              ))}
            </span>
            <span className="jp-trainhub-model-updated">
              {formatTime(m.updated_at)} · {m.user}
            </span>
          </button>
          {focus.name === m.name ? (
            detail && detail.name === m.name ? (
              <ModelDetail
                view={detail}
                focus={focus.version}
                setFocus={version => setFocus({ name: m.name, version })}
                actions={actions}
              />
            ) : (
              <div className="jp-trainhub-empty">Loading…</div>
            )
          ) : null}
        </div>
      )}
    />
  );
}

export class ModelsPanel extends SidePanel {
  private focus: IModelFocus = { name: null, version: null };
  private readonly setFocus = (focus: IModelFocus): void => {
    this.focus = focus;
    this.update();
  };

  constructor(
    private readonly api: TrainHubAPI,
    private readonly actions: IModelActions
  ) {
    super('trainhub-models', 'jp-trainhub-models-panel', 'Models of your team');
  }

  /** Open a model (and one of its versions) in the panel. */
  openModel(name: string, version: number | null = null): void {
    this.setFocus({ name, version });
    this.refresh.emit();
  }

  render(): JSX.Element {
    return (
      <ModelsList
        api={this.api}
        actions={this.actions}
        polled={this.polled}
        focus={this.focus}
        setFocus={this.setFocus}
      />
    );
  }
}
