/**
 * The Comments tab of a job view (and of any object that takes comments): the discussion,
 * oldest first, each comment's Markdown rendered by JupyterLab's own Markdown renderer as
 * untrusted (its sanitizer keeps no script, handler or style), a teammate's @mention marked
 * by DOM text nodes (never HTML of the writer's text); one's own comments edited or deleted
 * in place; a box to add one. Read again whenever the tab is shown.
 */
import { Dialog, MainAreaWidget, showDialog } from '@jupyterlab/apputils';
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { TrainHubAPI } from '../api';
import { CommandIDs } from '../commandids';
import { CommentKind, draftProblem, heading, IComment, markMentions } from '../comments';

let rendermime: IRenderMimeRegistry | null = null;
let opener: JupyterFrontEnd['commands'] | null = null;

export const commentsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'trainhub:comments',
  description: 'Renders comments on jobs, sweeps and pipeline runs; opens those of a sweep or run.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (app: JupyterFrontEnd, registry: IRenderMimeRegistry) => {
    rendermime = registry;
    opener = app.commands;
    const api = new TrainHubAPI(app.serviceManager.serverSettings);
    const views = new Map<string, MainAreaWidget<CommentsTab>>();
    app.commands.addCommand(CommandIDs.openComments, {
      label: 'Open comments',
      caption: 'The comments on a sweep or a pipeline run (a job view has its own tab)',
      execute: args => {
        const kind = String(args.kind ?? '') as CommentKind;
        const target = String(args.target ?? '');
        if (!kind || !target) {
          throw new Error('trainhub:open-comments needs {kind, target}');
        }
        const key = `${kind}/${target}`;
        let view = views.get(key);
        if (!view || view.isDisposed) {
          view = new MainAreaWidget({ content: new CommentsTab(api, kind, target) });
          view.id = `trainhub-comments-${kind}-${target}`;
          view.title.label = `Comments: ${target}`;
          view.title.closable = true;
          views.set(key, view);
          app.shell.add(view, 'main', { mode: 'split-right' });
        }
        app.shell.activateById(view.id);
      }
    });
  }
};

/** Open the comments on a sweep or a pipeline run beside its view (once the plugin is up). */
export function openComments(kind: CommentKind, target: string): void {
  void opener?.execute(CommandIDs.openComments, { kind, target });
}

/** One comment's Markdown as a widget: rendered where JupyterLab's renderer is at hand. */
async function rendered(comment: IComment): Promise<Widget> {
  if (!rendermime) {
    const plain = new Widget({ node: document.createElement('pre') });
    plain.node.textContent = comment.body; // no renderer: the text as written
    return plain;
  }
  const renderer = rendermime.createRenderer('text/markdown');
  await renderer.renderModel(
    new MimeModel({ data: { 'text/markdown': comment.body }, trusted: false })
  );
  markMentions(renderer.node, comment.mentions);
  return renderer;
}

function button(label: string, onClick: () => void, className = ''): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = `jp-Button jp-mod-styled jp-mod-small ${className}`.trim();
  b.textContent = label;
  b.addEventListener('click', onClick);
  return b;
}

/** A text box with its buttons: a new comment's, or an edit's. */
class Editor extends Widget {
  readonly area = document.createElement('textarea');
  private readonly problem = document.createElement('div');

  constructor(
    label: string,
    send: string,
    private readonly onSend: (body: string) => Promise<void>,
    onCancel?: () => void
  ) {
    super();
    this.addClass('jp-trainhub-comment-editor');
    this.area.setAttribute('aria-label', label);
    this.area.placeholder = 'Markdown; @name notifies a teammate';
    this.area.rows = 3;
    this.problem.className = 'jp-trainhub-comment-problem';
    const row = document.createElement('div');
    row.className = 'jp-trainhub-comment-buttons';
    row.append(button(send, () => void this.send(), 'jp-mod-accept'));
    if (onCancel) {
      row.append(button('Cancel', onCancel));
    }
    this.node.append(this.area, this.problem, row);
  }

  private async send(): Promise<void> {
    const body = this.area.value;
    const problem = draftProblem(body);
    this.problem.textContent = problem ?? '';
    if (problem) {
      return;
    }
    try {
      await this.onSend(body);
    } catch (error) {
      this.problem.textContent = (error as Error).message;
    }
  }
}

export class CommentsTab extends Panel {
  private readonly list = new Panel();
  private readonly status = new Widget();
  private loading = false;

  constructor(
    private readonly api: TrainHubAPI,
    private readonly kind: CommentKind,
    private readonly target: string
  ) {
    super();
    this.title.label = 'Comments';
    this.addClass('jp-trainhub-tab');
    this.addClass('jp-trainhub-comments');
    this.list.addClass('jp-trainhub-comment-list');
    this.status.addClass('jp-trainhub-muted');
    const editor = new Editor('New comment', 'Comment', async body => {
      await this.api.addComment(this.kind, this.target, body);
      editor.area.value = '';
      await this.load();
    });
    this.addWidget(this.status);
    this.addWidget(this.list);
    this.addWidget(editor);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.load();
  }

  /** Read the comments again and show them. */
  async load(): Promise<void> {
    if (this.loading) {
      return;
    }
    this.loading = true;
    try {
      const { comments } = await this.api.listComments(this.kind, this.target);
      const shown = await Promise.all(comments.map(c => this.card(c)));
      for (const old of [...this.list.widgets]) {
        old.dispose();
      }
      shown.forEach(card => this.list.addWidget(card));
      this.status.node.textContent = comments.length ? '' : 'No comments yet.';
    } catch (error) {
      this.status.node.textContent = `Could not load the comments: ${(error as Error).message}`;
    } finally {
      this.loading = false;
    }
  }

  private async card(comment: IComment): Promise<Panel> {
    const card = new Panel();
    card.addClass('jp-trainhub-comment');
    card.node.dataset.commentId = comment.id;
    const head = new Widget();
    head.addClass('jp-trainhub-comment-heading');
    const who = document.createElement('span');
    who.textContent = heading(comment, Date.now() / 1000);
    head.node.append(who);
    const body = await rendered(comment);
    body.addClass('jp-trainhub-comment-body');
    if (comment.mine) {
      head.node.append(
        button('Edit', () => this.edit(card, body, comment)),
        button('Delete', () => void this.remove(comment))
      );
    }
    card.addWidget(head);
    card.addWidget(body);
    return card;
  }

  private edit(card: Panel, body: Widget, comment: IComment): void {
    body.hide();
    const editor = new Editor(
      'Edit comment',
      'Save',
      async text => {
        await this.api.editComment(comment.id, text);
        await this.load();
      },
      () => {
        editor.dispose();
        body.show();
      }
    );
    editor.area.value = comment.body;
    card.addWidget(editor);
    editor.area.focus();
  }

  private async remove(comment: IComment): Promise<void> {
    const answer = await showDialog({
      title: 'Delete comment',
      body: 'Delete this comment? It cannot be brought back.',
      buttons: [Dialog.cancelButton({ label: 'Keep' }), Dialog.warnButton({ label: 'Delete' })],
      defaultButton: 0
    });
    if (answer.button.accept) {
      await this.api.deleteComment(comment.id);
      await this.load();
    }
  }
}
