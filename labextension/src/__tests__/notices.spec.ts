import { INotice, INoticeList, NoticeWatch, storedCursor, toastOf, unseen } from '../notices';
import { ApiError } from '../request';

const notice = (id: number, level: INotice['level'] = 'warning'): INotice => ({
  id,
  time: id / 1000,
  level,
  message: `notice ${id}`,
  source: 'trainhub-idle-gpu'
});

/** Lets the watch's awaited fetch and what follows it run. */
const settle = async () => {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
};

class MemoryStorage {
  items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
}

describe('which notices are new, and how each is shown', () => {
  it('takes those after the cursor, oldest first, and reads on from the newest', () => {
    expect(unseen([notice(7), notice(5), notice(3)], 3)).toEqual({
      fresh: [notice(5), notice(7)],
      after: 7
    });
    expect(unseen([notice(3)], 3)).toEqual({ fresh: [], after: 3 });
    expect(unseen([], 0)).toEqual({ fresh: [], after: 0 });
  });

  it('keeps warnings and errors open until dismissed; an info closes itself', () => {
    expect(toastOf('warning')).toEqual({ type: 'warning', autoClose: false });
    expect(toastOf('error')).toEqual({ type: 'error', autoClose: false });
    expect(toastOf('info')).toEqual({ type: 'info', autoClose: 10000 });
    expect(toastOf('something new')).toEqual({ type: 'info', autoClose: 10000 });
  });

  it('reads the stored cursor, or starts from the beginning', () => {
    expect(storedCursor('1715612345678')).toBe(1715612345678);
    for (const raw of [null, '', 'x', '-3', '1.5', '1e400']) {
      expect(storedCursor(raw)).toBe(0);
    }
  });
});

describe('NoticeWatch', () => {
  let pages: (INoticeList | Error)[];
  let asked: number[];
  let shown: INotice[];
  let watch: NoticeWatch | null;
  const fetch = (after: number): Promise<INoticeList> => {
    asked.push(after);
    const page = pages.shift() ?? { notices: [] };
    return page instanceof Error ? Promise.reject(page) : Promise.resolve(page);
  };

  beforeEach(() => {
    jest.useFakeTimers();
    pages = [];
    asked = [];
    shown = [];
    watch = null;
  });
  afterEach(() => {
    watch?.dispose();
    jest.useRealTimers();
  });

  it('shows each notice once, at start and every interval, and keeps the cursor', async () => {
    const storage = new MemoryStorage();
    pages = [{ notices: [notice(1)] }, { notices: [notice(2), notice(3)] }];
    watch = new NoticeWatch({ fetch, show: n => shown.push(n), storage, intervalMs: 1000 });
    await settle();
    expect(shown.map(n => n.id)).toEqual([1]);
    jest.advanceTimersByTime(999);
    await settle();
    expect(asked).toEqual([0]);
    jest.advanceTimersByTime(1);
    await settle();
    expect(asked).toEqual([0, 1]);
    expect(shown.map(n => n.id)).toEqual([1, 2, 3]);
    expect(storage.getItem('trainhub:notices')).toBe('3');

    // a reload starts from what was shown: nothing again
    watch.dispose();
    watch = new NoticeWatch({ fetch, show: n => shown.push(n), storage, intervalMs: 1000 });
    pages = [{ notices: [notice(3)] }];
    await settle();
    expect(asked).toEqual([0, 1, 3]);
    expect(shown.map(n => n.id)).toEqual([1, 2, 3]);
  });

  it('stops for good on a server without notices (404), tries again after other errors', async () => {
    pages = [new Error('network down'), new ApiError(404, 'Not Found')];
    watch = new NoticeWatch({ fetch, show: n => shown.push(n), intervalMs: 1000 });
    await settle();
    expect(watch.isDisposed).toBe(false);
    jest.advanceTimersByTime(1000);
    await settle();
    expect(asked).toEqual([0, 0]);
    expect(watch.isDisposed).toBe(true);
    jest.advanceTimersByTime(10000);
    await settle();
    expect(asked).toEqual([0, 0]);
  });

  it('waits while the page is hidden, and reads at once when it is seen again', async () => {
    let hidden = true;
    pages = [{ notices: [notice(5)] }];
    watch = new NoticeWatch({
      fetch,
      show: n => shown.push(n),
      intervalMs: 1000,
      isHidden: () => hidden
    });
    jest.advanceTimersByTime(3000);
    await settle();
    expect(asked).toEqual([]);
    hidden = false;
    document.dispatchEvent(new Event('visibilitychange'));
    await settle();
    expect(asked).toEqual([0]);
    expect(shown.map(n => n.id)).toEqual([5]);
  });
});
