import { reconnectDelay, ResumableSocket } from '../socket';

class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: string }) => void) | null = null;
  onclose: (() => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  close(): void {
    this.closed = true;
  }
}

describe('ResumableSocket', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    FakeSocket.all = [];
  });
  afterEach(() => jest.useRealTimers());

  it('reconnects with backoff from the offset consumed so far', () => {
    let offset = 0;
    const got: unknown[] = [];
    const statuses: string[] = [];
    const socket = new ResumableSocket({
      url: () => `ws://x/stream?offset=${offset}`,
      WebSocket: FakeSocket as unknown as typeof WebSocket,
      onMessage: d => {
        got.push(d);
        offset = (d as { next_offset: number }).next_offset;
      },
      onStatus: s => statuses.push(s),
      minDelayMs: 100
    });
    const first = FakeSocket.all[0];
    expect(first.url).toBe('ws://x/stream?offset=0');
    first.onopen!();
    first.onmessage!({ data: JSON.stringify({ text: 'a\n', offset: 0, next_offset: 2 }) });
    first.onmessage!({ data: 'not json' });
    first.onclose!();
    expect(FakeSocket.all).toHaveLength(1);
    jest.advanceTimersByTime(100);
    expect(FakeSocket.all).toHaveLength(2);
    expect(FakeSocket.all[1].url).toBe('ws://x/stream?offset=2');
    expect(got).toHaveLength(1);
    expect(statuses).toEqual(['connecting', 'open', 'waiting', 'connecting']);
    socket.dispose();
    expect(FakeSocket.all[1].closed).toBe(true);
    FakeSocket.all[1].onclose?.();
    jest.advanceTimersByTime(60000);
    expect(FakeSocket.all).toHaveLength(2);
  });

  it('doubles the delay up to a ceiling', () => {
    expect([0, 1, 2, 10].map(n => reconnectDelay(n, 500, 15000))).toEqual([500, 1000, 2000, 15000]);
  });
});
