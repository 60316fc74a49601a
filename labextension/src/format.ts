/**
 * Human-readable times, sizes and waiting explanations, and the one clock every view ticks
 * by, so that the panel and a job view say the same elapsed time at the same moment.
 */
import { ISignal, Signal } from '@lumino/signaling';
import * as React from 'react';

import { IJobSummary, TERMINAL_STATES } from './models';

/** 42s, 3m 05s, 1h 02m, 2d 3h. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) {
    return '—';
  }
  const s = Math.floor(seconds);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (d > 0) {
    return `${d}d ${h}h`;
  }
  if (h > 0) {
    return `${h}h ${pad(m)}m`;
  }
  if (m > 0) {
    return `${m}m ${pad(sec)}s`;
  }
  return `${sec}s`;
}

/**
 * How long a job has been at it: running time once started (until it finished), else the
 * time it has been waiting since submission. Times are epoch seconds.
 */
export function elapsedSeconds(job: IJobSummary, nowSeconds: number): number {
  const end = job.finished_at ?? nowSeconds;
  const start = job.started_at ?? job.created_at;
  return Math.max(end - start, 0);
}

/**
 * Elapsed time as people read it: running time once started, `waiting 1m 30s` before, and
 * `did not run` for a job that ended without starting (cancelled while queued).
 */
export function formatElapsed(job: IJobSummary, nowSeconds: number): string {
  if (!job.started_at && TERMINAL_STATES.has(job.state)) {
    return 'did not run';
  }
  const text = formatDuration(elapsedSeconds(job, nowSeconds));
  return job.started_at ? text : `waiting ${text}`;
}

/** "2 GPUs · 4 proc", or "4 proc" for a job that asks for no GPU. */
export function formatResources(job: Pick<IJobSummary, 'gpus' | 'world_size'>): string {
  const procs = `${job.world_size} proc`;
  return job.gpus > 0 ? `${job.gpus} GPU${job.gpus === 1 ? '' : 's'} · ${procs}` : procs;
}

/**
 * One clock for every view: a single timer ticks once a second while anything listens, and
 * each tick hands all listeners the same time (epoch seconds).
 */
export class Clock {
  private readonly _ticked = new Signal<this, number>(this);
  private timer: ReturnType<typeof setInterval> | null = null;
  private listeners = 0;
  private _now = Date.now() / 1000;

  constructor(private readonly intervalMs = 1000) {}

  get now(): number {
    return this.timer ? this._now : Date.now() / 1000;
  }

  get ticked(): ISignal<this, number> {
    return this._ticked;
  }

  /** Listen to ticks; the returned function stops listening (and the timer with the last). */
  subscribe(fn: (now: number) => void): () => void {
    const slot = (_: this, now: number) => fn(now);
    this._ticked.connect(slot);
    if (this.listeners++ === 0) {
      this._now = Date.now() / 1000;
      this.timer = setInterval(() => {
        this._now = Date.now() / 1000;
        this._ticked.emit(this._now);
      }, this.intervalMs);
    }
    return () => {
      this._ticked.disconnect(slot);
      if (--this.listeners === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
      }
    };
  }
}

export const clock = new Clock();

/** The shared clock's time in a React component, re-rendering on every tick. */
export function useNow(source: Clock = clock): number {
  const [now, setNow] = React.useState(source.now);
  React.useEffect(() => source.subscribe(setNow), [source]);
  return now;
}

/**
 * One line saying why a job is not running yet, or an empty string when it is. The
 * backend's reason is a whole sentence (it names the jobs ahead itself): the position is
 * only spelled out here when there is no reason.
 */
export function waitExplanation(job: IJobSummary): string {
  // A starting job (admitted, its ranks not running yet) always says what it waits for: a pod
  // the cluster cannot place, an image being pulled, or only that its pods are on their way.
  if (job.state === 'starting') {
    return job.wait_reason ?? '';
  }
  if (job.state !== 'queued' && job.state !== 'retrying') {
    return '';
  }
  if (job.wait_reason) {
    return job.wait_reason;
  }
  if (job.position !== null && job.position !== undefined) {
    return job.position === 0
      ? 'next in line'
      : `${job.position} job${job.position === 1 ? '' : 's'} ahead`;
  }
  return job.state === 'retrying' ? 'waiting to retry' : 'waiting for admission';
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) {
    return '—';
  }
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${UNITS[u]}`;
}

export function formatTime(epochSeconds: number | null | undefined): string {
  if (!epochSeconds) {
    return '—';
  }
  return new Date(epochSeconds * 1000).toLocaleString();
}

/**
 * "cell 3" for 0-based index 2: cells are numbered from 1 wherever a person reads them
 * (docs/architecture.md).
 */
export function cellLabel(index: number): string {
  return `cell ${index + 1}`;
}
