/**
 * Work that runs again on a timer until it is disposed, for good: the log socket's reconnects,
 * the notice watch's polls. Disposing drops the run that is due; the subclass lets go of the
 * rest (a socket, a listener) in `disposed`.
 */
export abstract class Repeating {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;

  get isDisposed(): boolean {
    return this.stopped;
  }

  dispose(): void {
    if (this.stopped) {
      return;
    }
    this.stopped = true;
    this.cancel();
    this.disposed();
  }

  /** Run `next` in `ms` milliseconds, in place of the run that was due. */
  protected schedule(next: () => void, ms: number): void {
    this.cancel();
    this.timer = setTimeout(next, ms);
  }

  /** Drop the run that is due, if any. */
  protected cancel(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  /** Let go of what the work holds besides its timer. */
  protected abstract disposed(): void;
}
