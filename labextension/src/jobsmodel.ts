/**
 * The user's jobs, kept current: one list request, then the jobs/stream websocket. Panels,
 * notifications and job views all listen to this one model.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { TrainHubAPI } from './api';
import { IJobSummary, TERMINAL_STATES } from './models';
import { wsApiUrl } from './request';
import { ResumableSocket } from './socket';

export interface IJobChange {
  job: IJobSummary;
  /** The state it had before this update; undefined for a job seen for the first time. */
  previous?: IJobSummary;
}

/** Jobs newest first (by submission order, then creation time). */
export function sortJobs(jobs: Iterable<IJobSummary>): IJobSummary[] {
  return [...jobs].sort((a, b) => (b.seq ?? 0) - (a.seq ?? 0) || b.created_at - a.created_at);
}

/** True when an update moved a job into a terminal state (worth telling the person). */
export function justFinished(change: IJobChange): boolean {
  return (
    !!change.previous &&
    !TERMINAL_STATES.has(change.previous.state) &&
    TERMINAL_STATES.has(change.job.state)
  );
}

export class JobsModel {
  private readonly jobs = new Map<string, IJobSummary>();
  private socket: ResumableSocket | null = null;
  private readonly _changed = new Signal<this, IJobChange[]>(this);
  private readonly _status = new Signal<this, string>(this);
  private _error = '';
  private _connection = 'connecting';

  constructor(readonly api: TrainHubAPI) {}

  /** Fires with the jobs that changed (all of them after a reload). */
  get changed(): ISignal<this, IJobChange[]> {
    return this._changed;
  }

  get statusChanged(): ISignal<this, string> {
    return this._status;
  }

  get connection(): string {
    return this._connection;
  }

  get error(): string {
    return this._error;
  }

  get(id: string): IJobSummary | undefined {
    return this.jobs.get(id);
  }

  list(): IJobSummary[] {
    return sortJobs(this.jobs.values());
  }

  /** Load the first page and start following changes. */
  async start(): Promise<void> {
    await this.reload();
    if (!this.socket) {
      this.socket = new ResumableSocket({
        url: () => wsApiUrl(this.api.settings, ['jobs', 'stream']),
        WebSocket: this.api.settings.WebSocket,
        onMessage: data => this.onMessage(data),
        onStatus: status => {
          const wasWaiting = this._connection === 'waiting';
          this._connection = status;
          this._status.emit(status);
          if (status === 'open' && wasWaiting) {
            void this.reload(); // catch up on whatever changed while disconnected
          }
        }
      });
    }
  }

  async reload(): Promise<void> {
    try {
      const page = await this.api.listJobs({ limit: 200 });
      this._error = '';
      this.apply(page.jobs);
    } catch (error) {
      this._error = (error as Error).message;
      this._status.emit('error');
    }
  }

  /** Merge updated summaries in; emits the changes. */
  apply(jobs: IJobSummary[]): void {
    const changes: IJobChange[] = [];
    for (const job of jobs) {
      const previous = this.jobs.get(job.id);
      this.jobs.set(job.id, job);
      changes.push({ job, previous });
    }
    if (changes.length) {
      this._changed.emit(changes);
    }
  }

  dispose(): void {
    this.socket?.dispose();
    this.socket = null;
    Signal.clearData(this);
  }

  private onMessage(data: unknown): void {
    const msg = data as { type?: string; job?: IJobSummary };
    if (msg && msg.type === 'job' && msg.job && typeof msg.job.id === 'string') {
      this.apply([msg.job]);
    }
  }
}
