/** The Logs tab: rank selector, search, follow/pause, and the live, virtualized log view. */
import { Widget } from '@lumino/widgets';

import { TrainHubAPI } from '../api';
import { ILogChunk } from '../models';
import { chunkAction } from '../logbuffer';
import { LogView } from '../logview';
import { wsApiUrl } from '../request';
import { ResumableSocket } from '../socket';

export class LogsTab extends Widget {
  readonly view: LogView;
  private readonly rankSelect: HTMLSelectElement;
  private readonly searchInput: HTMLInputElement;
  private readonly followBox: HTMLInputElement;
  private readonly statusText: HTMLSpanElement;
  private socket: ResumableSocket | null = null;
  private consumed = 0;
  private ranks: number[] = [];
  private rank = 0;
  private ended = false;

  constructor(
    private readonly api: TrainHubAPI,
    private readonly jobId: string
  ) {
    super();
    this.addClass('jp-trainhub-logs');
    this.title.label = 'Logs';
    const bar = document.createElement('div');
    bar.className = 'jp-trainhub-toolbar';

    this.rankSelect = document.createElement('select');
    this.rankSelect.className = 'jp-mod-styled';
    this.rankSelect.setAttribute('aria-label', 'Rank');
    this.rankSelect.addEventListener('change', () => this.showRank(Number(this.rankSelect.value)));

    this.searchInput = document.createElement('input');
    this.searchInput.className = 'jp-mod-styled jp-trainhub-search';
    this.searchInput.placeholder = 'Search logs';
    this.searchInput.setAttribute('aria-label', 'Search logs');
    this.searchInput.addEventListener('keydown', e => {
      if (e.key === 'Enter') {
        this.find(!e.shiftKey);
      }
    });
    const prev = this.button('↑', 'Previous match (Shift+Enter)', () => this.find(false));
    const next = this.button('↓', 'Next match (Enter)', () => this.find(true));

    const followLabel = document.createElement('label');
    followLabel.className = 'jp-trainhub-follow';
    this.followBox = document.createElement('input');
    this.followBox.type = 'checkbox';
    this.followBox.checked = true;
    this.followBox.addEventListener('change', () => {
      this.view.follow = this.followBox.checked;
    });
    followLabel.append(this.followBox, document.createTextNode(' follow'));

    this.statusText = document.createElement('span');
    this.statusText.className = 'jp-trainhub-log-status';

    const rankLabel = document.createElement('label');
    rankLabel.append(document.createTextNode('Rank '), this.rankSelect);
    bar.append(rankLabel, this.searchInput, prev, next, followLabel, this.statusText);

    this.view = new LogView({
      onFollowChange: follow => {
        this.followBox.checked = follow;
      }
    });
    this.node.append(bar, this.view.node);
  }

  /** Load the list of ranks and start streaming the first one (once). */
  async start(): Promise<void> {
    if (this.socket || this.ended) {
      return;
    }
    await this.refreshRanks();
    this.showRank(this.ranks.includes(this.rank) ? this.rank : (this.ranks[0] ?? 0));
  }

  async refreshRanks(): Promise<void> {
    try {
      const { ranks } = await this.api.logRanks(this.jobId);
      this.ranks = ranks.length ? ranks : [0];
    } catch {
      this.ranks = this.ranks.length ? this.ranks : [0];
    }
    const current = this.rankSelect.value;
    this.rankSelect.textContent = '';
    for (const r of this.ranks) {
      const o = document.createElement('option');
      o.value = String(r);
      o.textContent = String(r);
      this.rankSelect.appendChild(o);
    }
    this.rankSelect.value = current && this.ranks.includes(Number(current)) ? current : String(this.rank);
  }

  showRank(rank: number): void {
    this.socket?.dispose();
    this.rank = rank;
    this.rankSelect.value = String(rank);
    this.consumed = 0;
    this.ended = false;
    this.view.clear();
    this.view.follow = true;
    this.setStatus('connecting…');
    this.socket = new ResumableSocket({
      url: () =>
        wsApiUrl(this.api.settings, ['jobs', this.jobId, 'logs', rank, 'stream'], {
          offset: this.consumed
        }),
      WebSocket: this.api.settings.WebSocket,
      onMessage: data => this.onMessage(data),
      onStatus: status => {
        if (!this.ended) {
          this.setStatus(status === 'open' ? 'live' : status === 'waiting' ? 'reconnecting…' : status);
        }
      }
    });
  }

  protected onAfterShow(): void {
    this.view.render();
  }

  protected onResize(): void {
    this.view.update();
  }

  dispose(): void {
    this.socket?.dispose();
    this.view.dispose();
    super.dispose();
  }

  private onMessage(data: unknown): void {
    const msg = data as Partial<ILogChunk> & { type?: string };
    if (msg.type === 'end') {
      this.ended = true;
      this.socket?.dispose();
      this.socket = null;
      this.setStatus('ended');
      void this.refreshRanks();
      return;
    }
    if (typeof msg.text !== 'string' || typeof msg.next_offset !== 'number') {
      return;
    }
    const chunk = msg as ILogChunk;
    const action = chunkAction(this.consumed, chunk);
    if (action === 'skip') {
      return;
    }
    if (action === 'gap') {
      this.view.append(`[${chunk.offset - this.consumed} bytes not available]\n`);
    }
    this.view.append(chunk.text);
    this.consumed = chunk.next_offset;
    this.setStatus('live');
  }

  private find(forward: boolean): void {
    const hit = this.view.find(this.searchInput.value, forward);
    if (this.searchInput.value) {
      this.setStatus(hit >= 0 ? `line ${hit + 1}` : 'no match');
    }
  }

  private setStatus(text: string): void {
    this.statusText.textContent = `${text} · ${this.view.lineCount.toLocaleString()} lines`;
  }

  private button(text: string, title: string, onClick: () => void): HTMLButtonElement {
    const b = document.createElement('button');
    b.className = 'jp-mod-styled jp-trainhub-icon-button';
    b.textContent = text;
    b.title = title;
    b.addEventListener('click', onClick);
    return b;
  }
}
