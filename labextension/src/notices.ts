/**
 * Notices the server holds for the people using it (the hub's idle-GPU warning, say), each
 * shown once as a JupyterLab notification. Polled: a notice is rare and may wait a few
 * seconds, and a server without the route (404) ends the polling quietly.
 */
import { Repeating } from './repeating';
import { ApiError } from './request';

export type NoticeLevel = 'info' | 'warning' | 'error';

/** GET notices (see openapi.yaml): ids increase, also across restarts of the server. */
export interface INotice {
  id: number;
  time: number;
  level: NoticeLevel;
  message: string;
  source: string;
}

export interface INoticeList {
  notices: INotice[];
}

export interface IToast {
  type: NoticeLevel;
  /** Milliseconds before it closes itself, or false: it stays until dismissed. */
  autoClose: number | false;
}

/** The notices after `after`, oldest first, and the id to read on from. */
export function unseen(notices: INotice[], after: number): { fresh: INotice[]; after: number } {
  const fresh = notices.filter(n => n.id > after).sort((a, b) => a.id - b.id);
  return { fresh, after: fresh.length ? fresh[fresh.length - 1].id : after };
}

/** How a notice is shown: a warning or an error stays until the person dismisses it. */
export function toastOf(level: string): IToast {
  if (level === 'warning' || level === 'error') {
    return { type: level, autoClose: false };
  }
  return { type: 'info', autoClose: 10000 };
}

/** The last id shown, as kept in the browser's storage (0: none yet, or unreadable). */
export function storedCursor(raw: string | null): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

export interface INoticeWatchOptions {
  fetch: (after: number) => Promise<INoticeList>;
  show: (notice: INotice) => void;
  /** Where the last id shown is kept, so a reload does not show a notice again. */
  storage?: Pick<Storage, 'getItem' | 'setItem'> | null;
  storageKey?: string;
  intervalMs?: number;
  /** Polling waits while the page is hidden, and catches up once it is seen again. */
  isHidden?: () => boolean;
}

export class NoticeWatch extends Repeating {
  private after: number;
  private busy = false;
  private readonly onVisible = () => {
    if (!this.hidden()) {
      void this.poll();
    }
  };

  constructor(private readonly options: INoticeWatchOptions) {
    super();
    this.after = storedCursor(this.storageGet());
    document.addEventListener('visibilitychange', this.onVisible);
    void this.poll();
  }

  protected disposed(): void {
    document.removeEventListener('visibilitychange', this.onVisible);
  }

  /** One read (skipped while hidden or while another is under way), then the next is due. */
  async poll(): Promise<void> {
    if (this.isDisposed || this.busy) {
      return;
    }
    this.cancel();
    if (!this.hidden()) {
      this.busy = true;
      try {
        const page = await this.options.fetch(this.after);
        this.take(page.notices);
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) {
          this.dispose(); // this server has no notices: nothing to poll
          return;
        }
        // Unreachable for now (a restart, the network): the next round tries again.
      } finally {
        this.busy = false;
      }
    }
    if (!this.isDisposed) {
      this.schedule(() => void this.poll(), this.options.intervalMs ?? 15000);
    }
  }

  private take(notices: INotice[]): void {
    const { fresh, after } = unseen(notices, this.after);
    if (this.isDisposed || !fresh.length) {
      return;
    }
    this.after = after;
    try {
      this.options.storage?.setItem(this.key(), String(after));
    } catch {
      // not kept (storage refused): a reload may show these again
    }
    for (const notice of fresh) {
      this.options.show(notice);
    }
  }

  private hidden(): boolean {
    return (this.options.isHidden ?? (() => document.hidden))();
  }

  private key(): string {
    return this.options.storageKey ?? 'trainhub:notices';
  }

  private storageGet(): string | null {
    try {
      return this.options.storage?.getItem(this.key()) ?? null;
    } catch {
      return null; // storage refused (privacy settings): start from the beginning
    }
  }
}
