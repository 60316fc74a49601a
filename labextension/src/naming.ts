/**
 * Job names, by the server's rule (trainhub/jobs/naming.py): a natural name made valid, and
 * the distinct name a job run again gets.
 */

export const MAX_NAME_LENGTH = 40;
/** What the server accepts (trainhub.jobs.spec.NAME_PATTERN). */
export const NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const NUMBERED = /^(.*)-(\d+)$/;

/** `'Sweep LR 0.001'` -> `'sweep-lr-0-001'`: a valid job name from any text. */
export function slugName(text: string, fallback = 'job'): string {
  const name = text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_NAME_LENGTH)
    .replace(/-+$/g, '');
  return name || fallback;
}

/** True when the server takes `name` as it is. */
export function isValidName(name: string): boolean {
  return name.length <= MAX_NAME_LENGTH && NAME_PATTERN.test(name);
}

/**
 * The name the server gives a job that runs `name`'s job again: `name-2`, or the next number
 * free among `taken`. `numbered`: `name` got its number this way (its job was itself run
 * again), so `train-2` is followed by `train-3`.
 */
export function successorName(name: string, taken: Iterable<string>, numbered = false): string {
  const m = numbered ? NUMBERED.exec(name) : null;
  const base = m ? m[1] : name;
  let highest = 1;
  for (const other of taken) {
    const o = NUMBERED.exec(other);
    if (o && o[1] === base) {
      highest = Math.max(highest, parseInt(o[2], 10));
    }
  }
  const suffix = `-${highest + 1}`;
  return base.slice(0, MAX_NAME_LENGTH - suffix.length).replace(/-+$/g, '') + suffix;
}
