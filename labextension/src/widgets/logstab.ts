/**
 * The Logs tab: one rank's log or all ranks merged (with rank prefixes, ordered by when each
 * cell started), trainhub's own lines on demand, a search that counts and marks every
 * match ("k of n", next/previous), follow/pause, and the live, virtualized log view.
 */
import { Widget } from '@lumino/widgets';

import { TrainHubAPI } from '../api';
import { ILogChunk } from '../models';
import { LogBuffer, chunkAction } from '../logbuffer';
import { MergedRows, RankRows } from '../logrows';
import { LogView } from '../logview';
import { wsApiUrl } from '../request';
import { ResumableSocket } from '../socket';
import { rankSelect, setOptions } from './rankselect';

const ALL = 'all';
const SEARCH_DELAY_MS = 250;
const RANKS_REFRESH_MS = 3000;

interface IRankStream {
  buffer: LogBuffer;
  socket: ResumableSocket | null;
  consumed: number;
  ended: boolean;
  status: string;
}

export class LogsTab extends Widget {
  readonly view: LogView;
  private readonly rankSelect: HTMLSelectElement;
  private readonly searchInput: HTMLInputElement;
  private readonly matchText: HTMLSpanElement;
  private readonly internalBox: HTMLInputElement;
  private readonly followBox: HTMLInputElement;
  private readonly statusText: HTMLSpanElement;
  private readonly streams = new Map<number, IRankStream>();
  private ranks: number[] = [];
  private shown: number | typeof ALL = 0;
  private started = false;
  private searchTimer: ReturnType<typeof setTimeout> | null = null;
  // A rank's log appears when that rank first writes it: the list is read again while live.
  private ranksTimer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly api: TrainHubAPI,
    private readonly jobId: string
  ) {
    super();
    this.addClass('jp-trainhub-logs');
    this.title.label = 'Logs';
    const bar = document.createElement('div');
    bar.className = 'jp-trainhub-toolbar';

    this.rankSelect = rankSelect('Rank', v => this.showRank(v === ALL ? ALL : Number(v)));

    this.searchInput = document.createElement('input');
    this.searchInput.className = 'jp-mod-styled jp-trainhub-search';
    this.searchInput.placeholder = 'Search logs';
    this.searchInput.setAttribute('aria-label', 'Search logs');
    this.searchInput.addEventListener('input', () => this.searchSoon());
    this.searchInput.addEventListener('keydown', e => {
      if (e.key === 'Enter') {
        this.step(!e.shiftKey);
      } else if (e.key === 'Escape') {
        this.searchInput.value = '';
        this.view.search('');
      }
    });
    this.matchText = document.createElement('span');
    this.matchText.className = 'jp-trainhub-log-matches';
    this.matchText.setAttribute('aria-live', 'polite');
    const prev = this.button('↑', 'Previous match (Shift+Enter)', () => this.step(false));
    const next = this.button('↓', 'Next match (Enter)', () => this.step(true));

    const internalLabel = document.createElement('label');
    internalLabel.title = "trainhub's own lines: which rank starts, images saved, how it ended";
    this.internalBox = document.createElement('input');
    this.internalBox.type = 'checkbox';
    this.internalBox.setAttribute('aria-label', 'Show trainhub lines');
    this.internalBox.addEventListener('change', () => this.applyRows());
    internalLabel.append(this.internalBox, document.createTextNode(' trainhub lines'));

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
    bar.append(
      rankLabel,
      this.searchInput,
      this.matchText,
      prev,
      next,
      internalLabel,
      followLabel,
      this.statusText
    );

    this.view = new LogView({
      onFollowChange: follow => {
        this.followBox.checked = follow;
      },
      onSearchChange: label => {
        this.matchText.textContent = label;
      }
    });
    this.node.append(bar, this.view.node);
  }

  /** Load the list of ranks and start streaming the first one (once). */
  async start(): Promise<void> {
    if (this.started) {
      return;
    }
    this.started = true;
    await this.refreshRanks();
    this.showRank(
      this.shown === ALL || this.ranks.includes(this.shown) ? this.shown : (this.ranks[0] ?? 0)
    );
    this.ranksTimer = setInterval(() => {
      if ([...this.streams.values()].some(s => !s.ended)) {
        void this.refreshRanks();
      } else if (this.ranksTimer !== null) {
        clearInterval(this.ranksTimer);
        this.ranksTimer = null;
      }
    }, RANKS_REFRESH_MS);
  }

  async refreshRanks(): Promise<void> {
    const before = this.rankSelect.options.length ? this.ranks.join(',') : null;
    try {
      const { ranks } = await this.api.logRanks(this.jobId);
      this.ranks = ranks.length ? ranks : [0];
    } catch {
      this.ranks = this.ranks.length ? this.ranks : [0];
    }
    if (this.isDisposed || this.ranks.join(',') === before) {
      return; // the same ranks: the open list is left as it is
    }
    const options =
      this.ranks.length > 1 ? [...this.ranks.map(String), ALL] : this.ranks.map(String);
    setOptions(
      this.rankSelect,
      options.map(v => [v, v === ALL ? 'all (merged by cell start time)' : v])
    );
    this.rankSelect.value = String(this.shown);
    if (this.shown === ALL) {
      this.ranks.forEach(r => this.stream(r));
      this.applyRows();
    }
  }

  /** Show one rank's log, or all ranks merged (each streamed once, kept while the tab is). */
  showRank(which: number | typeof ALL): void {
    this.shown = which;
    this.rankSelect.value = String(which);
    (which === ALL ? this.ranks : [which]).forEach(r => this.stream(r));
    this.view.follow = true;
    this.applyRows();
  }

  protected onAfterShow(): void {
    this.view.render();
  }

  protected onResize(): void {
    this.view.update();
  }

  dispose(): void {
    if (this.ranksTimer !== null) {
      clearInterval(this.ranksTimer);
    }
    this.streams.forEach(s => s.socket?.dispose());
    if (this.searchTimer) {
      clearTimeout(this.searchTimer);
    }
    this.view.dispose();
    super.dispose();
  }

  private applyRows(): void {
    const showInternal = this.internalBox.checked;
    if (this.shown === ALL) {
      const buffers = new Map(
        [...this.streams].filter(([r]) => this.ranks.includes(r)).map(([r, s]) => [r, s.buffer])
      );
      this.view.rows = new MergedRows(buffers, showInternal);
    } else {
      this.view.rows = new RankRows(this.stream(this.shown).buffer, showInternal);
    }
    this.updateStatus();
  }

  private stream(rank: number): IRankStream {
    const s = this.streams.get(rank);
    if (s) {
      return s;
    }
    const stream: IRankStream = {
      buffer: new LogBuffer(),
      socket: null,
      consumed: 0,
      ended: false,
      status: 'connecting…'
    };
    stream.socket = new ResumableSocket({
      url: () =>
        wsApiUrl(this.api.settings, ['jobs', this.jobId, 'logs', rank, 'stream'], {
          offset: stream.consumed
        }),
      WebSocket: this.api.settings.WebSocket,
      onMessage: data => this.onMessage(stream, data),
      onStatus: status => {
        if (!stream.ended) {
          stream.status =
            status === 'open' ? 'live' : status === 'waiting' ? 'reconnecting…' : status;
          this.updateStatus();
        }
      }
    });
    this.streams.set(rank, stream);
    return stream;
  }

  private onMessage(stream: IRankStream, data: unknown): void {
    const msg = data as Partial<ILogChunk> & { type?: string };
    if (msg.type === 'end') {
      stream.ended = true;
      stream.socket?.dispose();
      stream.socket = null;
      stream.status = 'ended';
      this.updateStatus();
      void this.refreshRanks();
      return;
    }
    if (typeof msg.text !== 'string' || typeof msg.next_offset !== 'number') {
      return;
    }
    const chunk = msg as ILogChunk;
    const action = chunkAction(stream.consumed, chunk);
    if (action === 'skip') {
      return;
    }
    if (action === 'gap') {
      stream.buffer.append(`[trainhub: ${chunk.offset - stream.consumed} bytes not available]\n`);
    }
    stream.buffer.append(chunk.text);
    stream.consumed = chunk.next_offset;
    stream.status = 'live';
    this.view.update();
    this.updateStatus();
  }

  private searchSoon(): void {
    if (this.searchTimer) {
      clearTimeout(this.searchTimer);
    }
    this.searchTimer = setTimeout(() => {
      this.searchTimer = null;
      this.view.search(this.searchInput.value);
    }, SEARCH_DELAY_MS);
  }

  private step(forward: boolean): void {
    if (this.searchTimer) {
      // Enter right after typing: search now, which goes to the first match.
      clearTimeout(this.searchTimer);
      this.searchTimer = null;
      this.view.search(this.searchInput.value);
      return;
    }
    this.view.searchStep(forward);
  }

  /** "live · 12,345 lines" (ended once every rank shown has ended). */
  private updateStatus(): void {
    const shown = this.shown === ALL ? this.ranks : [this.shown];
    const states = shown.map(r => this.streams.get(r)?.status ?? 'connecting…');
    const state = states.every(s => s === 'ended')
      ? 'ended'
      : (states.find(s => s !== 'ended' && s !== 'live') ?? 'live');
    this.statusText.textContent = `${state} · ${this.view.lineCount.toLocaleString()} lines`;
  }

  private button(text: string, title: string, onClick: () => void): HTMLButtonElement {
    const b = document.createElement('button');
    b.className = 'jp-mod-styled jp-trainhub-icon-button';
    b.textContent = text;
    b.title = title;
    b.setAttribute('aria-label', title);
    b.addEventListener('click', onClick);
    return b;
  }
}
