/**
 * "Open in TensorBoard": one or several jobs' event files in TensorBoard, in a main-area tab.
 *
 * The server starts TensorBoard over the jobs' directories (or finds the one already running
 * over the same jobs) and proxies it below its own URL, authenticated as this session
 * (server_extension/trainhub_server/handlers/tensorboard.py); the tab is an iframe of that URL.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { IFrame, MainAreaWidget, showErrorMessage } from '@jupyterlab/apputils';

import { TrainHubAPI } from '../api';
import { CommandIDs } from '../commandids';
import { tensorBoardIds, tensorBoardTitle } from '../tensorboard';

class TensorBoardView extends MainAreaWidget<IFrame> {
  constructor(ids: string[], url: string) {
    // TensorBoard's own scripts read its data from the same origin, with the session's cookie.
    const content = new IFrame({
      sandbox: ['allow-scripts', 'allow-same-origin', 'allow-downloads', 'allow-popups']
    });
    content.url = url;
    super({ content });
    this.id = `trainhub-tensorboard-${ids.join('-')}`;
    this.addClass('jp-trainhub-tensorboard-view');
    this.title.label = tensorBoardTitle(ids);
    this.title.caption = `TensorBoard over ${ids.join(', ')}`;
    this.title.closable = true;
  }
}

export function registerTensorBoard(app: JupyterFrontEnd, api: TrainHubAPI): void {
  const views = new Map<string, TensorBoardView>();
  app.commands.addCommand(CommandIDs.openTensorBoard, {
    label: args =>
      Array.isArray(args.ids) && args.ids.length > 1
        ? `Open ${args.ids.length} jobs in TensorBoard`
        : 'Open in TensorBoard',
    caption: "The jobs' TensorBoard event files (SummaryWriter's) in TensorBoard",
    execute: async args => {
      let ids: string[];
      try {
        ids = tensorBoardIds(args);
        const key = ids.join(',');
        // Asked each time: the server reuses the running one, or starts it again after it
        // stopped unused, under a new URL.
        const { url } = await api.openTensorBoard(ids);
        let view = views.get(key);
        if (!view || view.isDisposed) {
          view = new TensorBoardView(ids, url);
          views.set(key, view);
          app.shell.add(view, 'main');
        } else if (view.content.url !== url) {
          view.content.url = url;
        }
        app.shell.activateById(view.id);
        return view;
      } catch (error) {
        void showErrorMessage('Could not open TensorBoard', (error as Error).message);
        return null;
      }
    }
  });
}
