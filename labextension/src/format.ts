/** Human-readable times, sizes and waiting explanations. */
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

export function formatElapsed(job: IJobSummary, nowSeconds: number): string {
  const text = formatDuration(elapsedSeconds(job, nowSeconds));
  return job.started_at || TERMINAL_STATES.has(job.state) ? text : `waiting ${text}`;
}

/** One line saying why a job is not running yet, or an empty string when it is. */
export function waitExplanation(job: IJobSummary): string {
  if (job.state !== 'queued' && job.state !== 'retrying') {
    return '';
  }
  const parts: string[] = [];
  if (job.wait_reason) {
    parts.push(job.wait_reason);
  }
  if (job.position !== null && job.position !== undefined) {
    parts.push(
      job.position === 0
        ? 'next in line'
        : `${job.position} job${job.position === 1 ? '' : 's'} ahead`
    );
  }
  if (!parts.length) {
    return job.state === 'retrying' ? 'waiting to retry' : 'waiting for admission';
  }
  return parts.join(' · ');
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

/** "cell 3" for 0-based index 2, as DESIGN.md wants human-facing text. */
export function cellLabel(index: number): string {
  return `cell ${index + 1}`;
}
