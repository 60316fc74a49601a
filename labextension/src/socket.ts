/**
 * A websocket that reconnects with backoff and resumes where it left off: the caller keeps
 * the offset it has consumed and the URL is rebuilt from it on every (re)connect, so a
 * dropped connection loses no line and repeats none.
 */
import { Repeating } from './repeating';

export interface IResumableSocketOptions {
  /** Builds the URL for the next connection (include the current offset). */
  url: () => string;
  onMessage: (data: unknown) => void;
  /** Called on every state change; `connected` is false while waiting to reconnect. */
  onStatus?: (status: 'connecting' | 'open' | 'waiting' | 'closed') => void;
  /** The WebSocket constructor (ServerConnection settings carry one). */
  WebSocket?: typeof WebSocket;
  minDelayMs?: number;
  maxDelayMs?: number;
}

/** Delay before reconnect attempt `n` (0-based): doubling from min to max. */
export function reconnectDelay(n: number, minMs = 500, maxMs = 15000): number {
  return Math.min(maxMs, minMs * 2 ** Math.min(n, 16));
}

export class ResumableSocket extends Repeating {
  private socket: WebSocket | null = null;
  private attempts = 0;

  constructor(private readonly options: IResumableSocketOptions) {
    super();
    this.connect();
  }

  /** Stopped for good (the server said the stream ended, say): closed, never reconnected. */
  protected disposed(): void {
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      socket.onclose = null;
      socket.onmessage = null;
      socket.onerror = null;
      socket.close();
    }
    this.options.onStatus?.('closed');
  }

  private connect(): void {
    if (this.isDisposed) {
      return;
    }
    const Ctor = this.options.WebSocket ?? WebSocket;
    this.options.onStatus?.('connecting');
    const socket = new Ctor(this.options.url());
    this.socket = socket;
    socket.onopen = () => {
      this.attempts = 0;
      this.options.onStatus?.('open');
    };
    socket.onmessage = event => {
      let data: unknown;
      try {
        data = JSON.parse(String(event.data));
      } catch {
        return; // not ours: the protocol is JSON only
      }
      this.options.onMessage(data);
    };
    socket.onclose = () => {
      if (this.isDisposed || this.socket !== socket) {
        return;
      }
      this.socket = null;
      this.options.onStatus?.('waiting');
      const delay = reconnectDelay(
        this.attempts++,
        this.options.minDelayMs,
        this.options.maxDelayMs
      );
      this.schedule(() => this.connect(), delay);
    };
  }
}
