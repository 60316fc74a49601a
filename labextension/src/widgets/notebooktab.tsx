/**
 * The Notebook tab of a job view: the notebook the job ran, with its outputs, rendered
 * read-only by JupyterLab's own notebook widget and renderers (no kernel, no session), the
 * cells done so far while the job runs. Downloads as .ipynb and HTML (nbconvert, on the
 * server), and a copy into the workspace as a new notebook.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorServices } from '@jupyterlab/codeeditor';
import { PathExt } from '@jupyterlab/coreutils';
import { NotebookModel, StaticNotebook } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Contents } from '@jupyterlab/services';
import { Panel, TabPanel, Widget } from '@lumino/widgets';

import { TrainHubAPI } from '../api';
import {
  cellsRun,
  codeCells,
  freePath,
  IExecutedNotebook,
  notebookRanks,
  positionOfCell
} from '../executednotebook';
import { IDescribeJob, TERMINAL_STATES } from '../models';
import { apiUrl, requestAPI } from '../request';
import { rankSelect } from './rankselect';

/** How often a running job's notebook is read again (the rank rewrites it every second). */
export const REFRESH_MS = 2000;

/** What rendering needs from the application; set by {@link executedNotebookPlugin}. */
interface IRendering {
  rendermime: IRenderMimeRegistry;
  editorServices: IEditorServices;
  contents: Contents.IManager;
  open: (path: string) => Promise<unknown>;
}

let rendering: IRendering | null = null;
const tabs = new Map<string, NotebookTab>();

export const executedNotebookPlugin: JupyterFrontEndPlugin<void> = {
  id: 'trainhub:executed-notebook',
  description: "Renders a job's executed notebook in its job view.",
  autoStart: true,
  requires: [IRenderMimeRegistry, IEditorServices],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    editorServices: IEditorServices
  ) => {
    rendering = {
      rendermime,
      editorServices,
      contents: app.serviceManager.contents,
      open: path => app.commands.execute('docmanager:open', { path })
    };
  }
};

/** Open the job's executed notebook at the submitted notebook's cell `cellIndex`. */
export function openExecutedCell(jobId: string, cellIndex: number): void {
  void tabs.get(jobId)?.reveal(cellIndex);
}

export class NotebookTab extends Panel {
  private readonly status: HTMLSpanElement;
  private readonly rankSelect: HTMLSelectElement;
  private readonly htmlLink: HTMLAnchorElement;
  private readonly body = new Panel();
  private notebook: StaticNotebook | null = null;
  private job: IDescribeJob | null = null;
  private content: IExecutedNotebook | null = null;
  private text = '';
  private rank = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private loading: Promise<void> | null = null;

  constructor(
    private readonly api: TrainHubAPI,
    private readonly jobId: string
  ) {
    super();
    this.addClass('jp-trainhub-notebook-tab');
    this.title.label = 'Notebook';
    tabs.set(jobId, this);

    const bar = document.createElement('div');
    bar.className = 'jp-trainhub-toolbar';
    this.rankSelect = rankSelect('Rank', v => {
      this.rank = Number(v);
      this.text = '';
      void this.load();
    });
    const ipynb = this.button('Download .ipynb', () => this.downloadIpynb());
    this.htmlLink = document.createElement('a');
    this.htmlLink.className = 'jp-mod-styled jp-Button jp-trainhub-link';
    this.htmlLink.textContent = 'Download HTML';
    this.htmlLink.href = this.htmlUrl();
    const copy = this.button('Copy into workspace', () => void this.copyIntoWorkspace());
    this.status = document.createElement('span');
    this.status.className = 'jp-trainhub-muted jp-trainhub-notebook-status';
    bar.append(this.rankSelect, ipynb, this.htmlLink, copy, this.status);
    this.addWidget(new Widget({ node: bar }));
    this.body.addClass('jp-trainhub-notebook-body');
    this.addWidget(this.body);
  }

  dispose(): void {
    if (tabs.get(this.jobId) === this) {
      tabs.delete(this.jobId);
    }
    this.stop();
    super.dispose();
  }

  /** Show this tab and scroll to the submitted notebook's cell `cellIndex`. */
  async reveal(cellIndex: number): Promise<void> {
    const panel = this.parent?.parent;
    if (panel instanceof TabPanel) {
      panel.currentWidget = this;
    }
    await (this.loading ?? this.load());
    const position = this.content ? positionOfCell(this.content, cellIndex) : -1;
    const notebook = this.notebook;
    if (!notebook || position < 0) {
      return;
    }
    await notebook.scrollToItem(position, 'center');
    const cell = notebook.widgets[position];
    cell?.addClass('jp-trainhub-flash');
    setTimeout(() => cell?.removeClass('jp-trainhub-flash'), 2000);
  }

  protected onAfterShow(): void {
    void this.load();
  }

  protected onBeforeHide(): void {
    this.stop();
  }

  private button(label: string, onClick: () => void): HTMLButtonElement {
    const b = document.createElement('button');
    b.className = 'jp-mod-styled jp-Button jp-trainhub-link';
    b.textContent = label;
    b.addEventListener('click', onClick);
    return b;
  }

  private htmlUrl(): string {
    const url = apiUrl(this.api.settings.baseUrl, ['jobs', this.jobId, 'notebook', 'html']);
    return this.rank ? `${url}?rank=${this.rank}` : url;
  }

  private stop(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  /** Read the job and its notebook; again in a moment while the job runs and the tab shows. */
  private load(): Promise<void> {
    this.stop();
    this.loading = this.read().finally(() => {
      this.loading = null;
      if (this.isVisible && this.job && !TERMINAL_STATES.has(this.job.state)) {
        this.timer = setTimeout(() => void this.load(), REFRESH_MS);
      }
    });
    return this.loading;
  }

  private async read(): Promise<void> {
    try {
      this.job = await this.api.describe(this.jobId);
      this.fillRanks(notebookRanks(this.job));
      const nb = await requestAPI<IExecutedNotebook>(
        ['jobs', this.jobId, 'notebook'],
        { query: { rank: this.rank } },
        this.api.settings
      );
      const text = JSON.stringify(nb);
      if (text !== this.text) {
        this.text = text;
        this.content = nb;
        this.render(nb);
      }
      const done = cellsRun(nb);
      const truncated = nb.metadata.trainhub?.truncated ? ' · outputs cut at the size cap' : '';
      this.status.textContent = `${done} of ${codeCells(nb)} cells run · ${
        TERMINAL_STATES.has(this.job.state) ? this.job.state : 'refreshing while the job runs'
      }${truncated}`;
    } catch (error) {
      this.status.textContent = (error as Error).message;
    }
  }

  private fillRanks(ranks: number[]): void {
    const wanted = ranks.map(String).join(',');
    if (this.rankSelect.dataset.ranks === wanted) {
      return;
    }
    this.rankSelect.dataset.ranks = wanted;
    this.rankSelect.replaceChildren(
      ...ranks.map(r => new Option(`rank ${r}`, String(r), false, r === this.rank))
    );
    this.rankSelect.hidden = ranks.length < 2;
  }

  private render(nb: IExecutedNotebook): void {
    if (!rendering) {
      this.status.textContent = 'The notebook renderer is not available.';
      return;
    }
    const scroll = this.notebook?.node.scrollTop ?? 0;
    const model = new NotebookModel();
    model.fromJSON(nb as unknown as Parameters<NotebookModel['fromJSON']>[0]);
    model.readOnly = true;
    const old = this.notebook;
    const notebook = new StaticNotebook({
      rendermime: rendering.rendermime,
      mimeTypeService: rendering.editorServices.mimeTypeService,
      contentFactory: new StaticNotebook.ContentFactory({
        editorFactory: rendering.editorServices.factoryService.newInlineEditor
      }),
      notebookConfig: { ...StaticNotebook.defaultNotebookConfig, windowingMode: 'none' }
    });
    notebook.addClass('jp-trainhub-executed-notebook');
    notebook.model = model;
    notebook.widgets.forEach(cell => (cell.readOnly = true));
    this.body.addWidget(notebook);
    this.notebook = notebook;
    old?.model?.dispose();
    old?.dispose();
    notebook.node.scrollTop = scroll;
    this.htmlLink.href = this.htmlUrl();
  }

  private downloadIpynb(): void {
    if (!this.text) {
      return;
    }
    const url = URL.createObjectURL(new Blob([this.text], { type: 'application/x-ipynb+json' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `${this.jobId}${this.rank ? `-rank-${this.rank}` : ''}.ipynb`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  /** A new notebook next to the submitted one, named after the job; nothing is overwritten. */
  private async copyIntoWorkspace(): Promise<void> {
    if (!rendering || !this.content || !this.job) {
      return;
    }
    const { contents, open } = rendering;
    const source = this.job.spec.source.path;
    const stem = `${PathExt.basename(source, PathExt.extname(source))}-${this.jobId}`;
    const exists = async (path: string) => {
      try {
        await contents.get(path, { content: false });
        return true;
      } catch (error) {
        if ((error as { response?: Response }).response?.status === 404) {
          return false;
        }
        throw error;
      }
    };
    try {
      const path = await freePath(exists, PathExt.dirname(source), stem);
      await contents.save(path, { type: 'notebook', format: 'json', content: this.content });
      this.status.textContent = `Copied to ${path}`;
      await open(path);
    } catch (error) {
      this.status.textContent = `Could not copy: ${(error as Error).message}`;
    }
  }
}
