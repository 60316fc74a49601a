/**
 * A main-area view of one record that goes on changing on the server (a sweep, a pipeline
 * run): read again every two seconds while it runs, the last error shown in its body, and one
 * view per record (opening it again shows the open one).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, ReactWidget } from '@jupyterlab/apputils';

const REFRESH_MS = 2000;

/** The view's body: it renders `error` (the last read or action that failed), '' for none. */
export abstract class FollowedBody extends ReactWidget {
  error = '';
}

export abstract class FollowedView<B extends FollowedBody> extends MainAreaWidget<B> {
  private timer = 0;

  constructor(content: B, id: string, className: string, label: string) {
    super({ content });
    this.id = id;
    this.addClass(className);
    this.title.label = label;
    this.title.closable = true;
  }

  /** Reads the record into the body (its error is shown there). */
  protected abstract read(): Promise<void>;

  /** Whether the record may still change: not read yet, or still running. */
  protected abstract running(): boolean;

  async refresh(): Promise<void> {
    window.clearTimeout(this.timer);
    await this.attempt(async () => {
      await this.read();
      this.content.error = '';
    });
    if (!this.isDisposed && this.running()) {
      this.timer = window.setTimeout(() => void this.refresh(), REFRESH_MS);
    }
  }

  /** Runs `action`, then renders the body, with the action's error when it failed. */
  protected async attempt(action: () => Promise<void>): Promise<void> {
    try {
      await action();
    } catch (e) {
      this.content.error = (e as Error).message ?? String(e);
    }
    this.content.update();
  }

  dispose(): void {
    window.clearTimeout(this.timer);
    super.dispose();
  }
}

/**
 * Shows the view of record `id`: the open one in `views`, or a new one `make` builds (added
 * to the main area and kept in `views`).
 */
export function showOnce<V extends MainAreaWidget>(
  app: JupyterFrontEnd,
  views: Map<string, V>,
  id: string,
  make: () => V
): V {
  let view = views.get(id);
  if (!view || view.isDisposed) {
    view = make();
    views.set(id, view);
    app.shell.add(view, 'main');
  }
  app.shell.activateById(view.id);
  return view;
}
