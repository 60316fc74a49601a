/**
 * The team's model registry in Lab (pure): the REST shapes of trainhub/registry/views.py, and
 * what the Models panel and the Register as model button make of them (load snippets, the
 * lineage rows of a version, the audit log's sentences, which jobs a comparison opens).
 */
import { lineageFacts } from './lineagefacts';

export type AuditEvent = 'version' | 'alias' | 'archive' | 'unarchive';

export interface IVersionSource {
  job: string;
  attempt: number;
  kind: 'checkpoint' | 'output' | 'outputs';
  step?: number | null;
  path?: string | null;
}

export interface IModelVersion {
  model: string;
  version: number;
  user: string;
  created_at: number;
  description: string;
  source: IVersionSource;
  files: { folder: string; files: number; bytes: number; single?: string | null; linked: number };
  metrics: Record<string, number>;
  lineage: Record<string, unknown>;
  archived: boolean;
  aliases: string[];
  /** trainhub.models.load('NAME/N'), as the server writes it. */
  load: string;
}

export interface IAuditEntry {
  time: number;
  user: string;
  event: AuditEvent;
  version: number;
  alias?: string | null;
  previous?: number | null;
  reason: string;
}

export interface IModelView {
  name: string;
  /** Newest first. */
  versions: IModelVersion[];
  aliases: Record<string, number>;
  latest: number | null;
  /** Oldest first. */
  audit: IAuditEntry[];
  metric_names: string[];
}

export interface IModelSummary {
  name: string;
  versions: number;
  latest: number | null;
  aliases: Record<string, number>;
  updated_at: number;
  user: string;
}

/** What the Register as model button registers: a checkpoint's step or an output's path. */
export type RegisterWhat = { step: number } | { path: string };

export interface IRegisterRequest {
  name: string;
  from: string;
  description: string;
}

// The server's rules (trainhub/registry/refs.py), checked before asking it.
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
const ALIAS = /^[a-z][a-z0-9_-]{0,62}$/;

export function modelNameError(name: string): string {
  return NAME.test(name)
    ? ''
    : 'A model name is letters, digits, “_” and “-”, starting with a letter or digit.';
}

export function aliasError(alias: string): string {
  if (alias === 'latest') {
    return '“latest” is the newest version itself: it cannot be moved.';
  }
  return ALIAS.test(alias)
    ? ''
    : 'An alias is lower-case letters, digits, “_” and “-”, starting with a letter.';
}

/**
 * The REST body registering `what` of `jobId`: `JOB:STEP` or `JOB:PATH`. An output whose path
 * is all digits would read as a step, so it is refused here rather than registering another
 * thing.
 */
export function registerRequest(
  jobId: string,
  what: RegisterWhat,
  name: string,
  description: string
): IRegisterRequest {
  if ('path' in what && /^\d+$/.test(what.path)) {
    throw new Error(`The output ${what.path} is named like a checkpoint step: rename it.`);
  }
  const target = 'step' in what ? String(what.step) : what.path;
  return { name: name.trim(), from: `${jobId}:${target}`, description: description.trim() };
}

/** What the notification says once a version is registered. */
export function registeredText(version: Pick<IModelVersion, 'model' | 'version'>): string {
  return `${version.model} version ${version.version} registered`;
}

/** The line that loads a version: by alias where one is given, else by number. */
export function loadSnippet(model: string, by: { alias: string } | { version: number }): string {
  const ref = 'alias' in by ? `${model}@${by.alias}` : `${model}/${by.version}`;
  return `trainhub.models.load('${ref}')`;
}

/** The snippets of a version: one per alias first (what people share), then its number. */
export function versionSnippets(v: Pick<IModelVersion, 'model' | 'version' | 'aliases'>): string[] {
  return [
    ...v.aliases.map(alias => loadSnippet(v.model, { alias })),
    loadSnippet(v.model, { version: v.version })
  ];
}

/** Where a version came from, in words: "job train-1a2b, checkpoint step 300". */
export function sourceText(source: IVersionSource): string {
  const what =
    source.kind === 'checkpoint'
      ? `checkpoint step ${String(source.step)}`
      : source.kind === 'output'
        ? `output ${String(source.path)}`
        : 'outputs';
  return `job ${source.job}, ${what}`;
}

function cellsText(cells: unknown): string {
  return Array.isArray(cells) && cells.length
    ? `cells ${cells.map(i => Number(i) + 1).join(', ')}`
    : 'all cells';
}

/**
 * A version's lineage as key/value rows: the job, the notebook and its cells, the parameters,
 * the image and the digest it ran, the datasets with their fingerprints (as the job view's
 * Overview shows a job's).
 */
export function versionLineage(v: IModelVersion): Record<string, string> {
  const l = v.lineage;
  const job = (l.job ?? {}) as Record<string, unknown>;
  const source = l.source as Record<string, unknown> | undefined;
  const parameters = (l.parameters ?? {}) as Record<string, unknown>;
  const pipeline = l.pipeline as Record<string, unknown> | undefined;
  const rows: Record<string, unknown> = {
    job: `${String(job.name ?? v.source.job)} (${v.source.job}), attempt ${v.source.attempt}${
      job.state ? `, ${String(job.state)}` : ''
    }`,
    'trained by': job.user,
    from: sourceText(v.source),
    notebook: source?.path
      ? `${String(source.path)}${source.kind === 'notebook' ? ` · ${cellsText(source.cells)}` : ''}`
      : undefined,
    parameters: Object.keys(parameters).length
      ? Object.entries(parameters)
          .map(([k, value]) => `${k}=${JSON.stringify(value)}`)
          .join(', ')
      : undefined,
    pipeline: pipeline ? `run ${String(pipeline.run)}, step ${String(pipeline.step)}` : undefined,
    image: l.image,
    ...lineageFacts(l)
  };
  // lineageFacts speaks of a job's whole lineage: a version keeps no git of an unknown checkout
  if (!l.git) {
    delete rows.git;
  }
  return Object.fromEntries(
    Object.entries(rows)
      .filter(([, value]) => value !== undefined && value !== null && value !== '')
      .map(([k, value]) => [k, String(value)])
  );
}

/** One line of the audit log. */
export function auditText(e: IAuditEntry): string {
  switch (e.event) {
    case 'version':
      return `registered version ${e.version}`;
    case 'archive':
      return `archived version ${e.version}`;
    case 'unarchive':
      return `unarchived version ${e.version}`;
    case 'alias': {
      const from = e.previous ? `version ${e.previous}` : 'none';
      return e.version
        ? `@${String(e.alias)}: ${from} → version ${e.version}`
        : `@${String(e.alias)}: ${from} → removed`;
    }
  }
}

/** The audit log newest first, as people read it. */
export function auditNewestFirst(audit: IAuditEntry[]): IAuditEntry[] {
  return [...audit].reverse();
}

/** A metric's value in the versions table (as the Checkpoints tab writes them). */
export function metricText(value: number | undefined): string {
  return value === undefined ? '' : Number(value).toPrecision(4);
}

/**
 * The two jobs a comparison of two versions opens (compare takes jobs), or the sentence saying
 * why not: two versions of one job are its two steps, not two runs.
 */
export function compareJobs(
  a: IModelVersion,
  b: IModelVersion
): { ids: [string, string] } | { error: string } {
  if (a.source.job === b.source.job) {
    return {
      error: `Versions ${a.version} and ${b.version} both came from job ${a.source.job}: open it to see its steps.`
    };
  }
  // the older version first, as the compare view reads left to right
  const [older, newer] = a.version < b.version ? [a, b] : [b, a];
  return { ids: [older.source.job, newer.source.job] };
}

/** The selection after a version's checkbox is toggled: at most two, the oldest pick dropped. */
export function toggleCompare(selected: number[], version: number): number[] {
  if (selected.includes(version)) {
    return selected.filter(v => v !== version);
  }
  return [...selected, version].slice(-2);
}

/** "@production @staging" of a model's aliases pointing at `version` (or all, sorted). */
export function aliasesOf(aliases: Record<string, number>, version?: number): string[] {
  return Object.entries(aliases)
    .filter(([, v]) => version === undefined || v === version)
    .map(([a]) => a)
    .sort();
}
