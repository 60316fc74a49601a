/**
 * The Models side panel: the team's models (name, versions, latest, aliases, when and by whom
 * last changed), and one model opened below them (widgets/modeldetail.tsx). It asks the
 * server again every few seconds while shown, and at once after an action.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { Signal } from '@lumino/signaling';
import * as React from 'react';

import { TrainHubAPI } from '../api';
import { formatTime } from '../format';
import { aliasesOf, IModelSummary, IModelView } from '../registry';
import { IModelActions, ModelDetail } from './modeldetail';

const POLL_MS = 10000;

/** Which model (and version) the panel shows open. */
export interface IModelFocus {
  name: string | null;
  version: number | null;
}

function ModelsList(props: {
  api: TrainHubAPI;
  actions: IModelActions;
  refresh: Signal<unknown, void>;
  focus: IModelFocus;
  setFocus: (focus: IModelFocus) => void;
  isVisible: () => boolean;
}): JSX.Element {
  const { api, actions, refresh, focus, setFocus, isVisible } = props;
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

  React.useEffect(() => {
    const onRefresh = () => void load();
    refresh.connect(onRefresh);
    const timer = setInterval(() => isVisible() && void load(), POLL_MS);
    return () => {
      refresh.disconnect(onRefresh);
      clearInterval(timer);
    };
  }, [load, refresh, isVisible]);
  // a model opened (by a row, or by the Register button's link): read it now
  React.useEffect(() => {
    setDetail(null);
    void load();
  }, [focus.name, load]);

  return (
    <div className="jp-trainhub-models">
      <div className="jp-trainhub-jobs-header">
        <h2>Models</h2>
        <button
          className="jp-mod-styled jp-trainhub-link"
          title="Reload"
          aria-label="Reload"
          onClick={() => void load()}
        >
          ⟳
        </button>
      </div>
      {error ? <div className="jp-trainhub-banner">{error}</div> : null}
      <div className="jp-trainhub-model-list" role="list" aria-label="Models">
        {models === null ? (
          <div className="jp-trainhub-empty">Loading…</div>
        ) : models.length ? (
          models.map(m => (
            <div
              key={m.name}
              role="listitem"
              className={`jp-trainhub-model-row${focus.name === m.name ? ' jp-mod-selected' : ''}`}
              data-model={m.name}
            >
              <button
                className="jp-trainhub-model-head"
                aria-expanded={focus.name === m.name}
                onClick={() =>
                  setFocus({ name: focus.name === m.name ? null : m.name, version: null })
                }
              >
                <span className="jp-trainhub-model-name">{m.name}</span>
                <span className="jp-trainhub-model-facts">
                  {m.versions} {m.versions === 1 ? 'version' : 'versions'} · latest{' '}
                  {m.latest ?? 'none'}{' '}
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
          ))
        ) : (
          <div className="jp-trainhub-empty">
            No models yet. Register one from a job’s Checkpoints or Outputs tab (“Register as
            model”), or with trainhub model register NAME --from JOB.
          </div>
        )}
      </div>
    </div>
  );
}

export class ModelsPanel extends ReactWidget {
  /** Emitted to make the panel ask the server again (after an action, a registration). */
  readonly refresh = new Signal<unknown, void>(this);
  private focus: IModelFocus = { name: null, version: null };
  private readonly visible = (): boolean => this.isVisible;
  private readonly setFocus = (focus: IModelFocus): void => {
    this.focus = focus;
    this.update();
  };

  constructor(
    private readonly api: TrainHubAPI,
    private readonly actions: IModelActions
  ) {
    super();
    this.id = 'trainhub-models';
    this.addClass('jp-trainhub-models-panel');
    this.title.caption = 'Models of your team';
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
        refresh={this.refresh}
        focus={this.focus}
        setFocus={this.setFocus}
        isVisible={this.visible}
      />
    );
  }
}
