/**
 * What the side panels that list the server's records (Schedules, Models) share: the widget
 * with its refresh signal, asking the server again every few seconds while shown, the header
 * with its title and Reload button, and the list that says "Loading…" or why it is empty.
 * Styles: style/sidepanel.css.
 */
import { ReactWidget } from '@jupyterlab/apputils';
import { Signal } from '@lumino/signaling';
import * as React from 'react';

/** When the panel's list asks the server again: on `refresh`, and while `isVisible()`. */
export interface IPolled {
  refresh: Signal<unknown, void>;
  isVisible: () => boolean;
}

/** The panel's widget: its id, class and caption, and what makes it ask the server again. */
export abstract class SidePanel extends ReactWidget {
  /** Emitted to make the panel ask the server again (after an action, a new record). */
  readonly refresh = new Signal<unknown, void>(this);
  protected readonly polled: IPolled = { refresh: this.refresh, isVisible: () => this.isVisible };

  constructor(id: string, className: string, caption: string) {
    super();
    this.id = id;
    this.addClass('jp-trainhub-side-panel');
    this.addClass(className);
    this.title.caption = caption;
  }
}

/**
 * Calls `load` on each `refresh`, and every `pollMs` while the panel is shown (a hidden panel
 * asks nothing: it reads again on the next tick once shown).
 */
export function usePolling(load: () => Promise<void>, polled: IPolled, pollMs: number): void {
  const { refresh, isVisible } = polled;
  React.useEffect(() => {
    const onRefresh = () => void load();
    refresh.connect(onRefresh);
    const timer = setInterval(() => isVisible() && void load(), pollMs);
    return () => {
      refresh.disconnect(onRefresh);
      clearInterval(timer);
    };
  }, [load, refresh, isVisible, pollMs]);
}

/** A button of the panel's header: its glyph, its tooltip and its accessible name. */
export interface IHeaderButton {
  text: string;
  title: string;
  label: string;
  onClick: () => void;
}

/**
 * The panel's frame: title, the panel's own buttons, Reload, the last error, and the list,
 * which shows "Loading…" until the first answer and `empty` when it holds nothing.
 */
export function SidePanelFrame<T>(props: {
  className: string;
  title: string;
  buttons?: IHeaderButton[];
  reload: () => void;
  error: string;
  listClassName: string;
  items: T[] | null;
  empty: React.ReactNode;
  row: (item: T) => React.ReactNode;
}): JSX.Element {
  const { items } = props;
  const reload = { text: '⟳', title: 'Reload', label: 'Reload', onClick: props.reload };
  return (
    <div className={props.className}>
      <div className="jp-trainhub-jobs-header">
        <h2>{props.title}</h2>
        {[...(props.buttons ?? []), reload].map(b => (
          <button
            key={b.label}
            className="jp-mod-styled jp-trainhub-link"
            title={b.title}
            aria-label={b.label}
            onClick={b.onClick}
          >
            {b.text}
          </button>
        ))}
      </div>
      {props.error ? <div className="jp-trainhub-banner">{props.error}</div> : null}
      <div className={props.listClassName} role="list" aria-label={props.title}>
        {items === null ? (
          <div className="jp-trainhub-empty">Loading…</div>
        ) : items.length ? (
          items.map(props.row)
        ) : (
          <div className="jp-trainhub-empty">{props.empty}</div>
        )}
      </div>
    </div>
  );
}
