/**
 * Pipeline runs: the answers of trainhub/api/pipelines (trainhub/pipelines/models.py), the
 * calls that ask for them, and the pure functions the run graph and the runs list work with
 * (each step's state in words, a run's duration and outcome).
 */
import { ServerConnection } from '@jupyterlab/services';

import { formatDuration, formatElapsed, waitExplanation } from './format';
import { FailureClass, IJobSummary, JobState } from './models';
import { IEdge } from './pipelinegraph';
import { requestAPI } from './request';

export type StepStatus =
  'waiting' | 'ready' | 'active' | 'succeeded' | 'reused' | 'failed' | 'cancelled' | 'not_run';

export type RunState = 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface IStepView {
  step: string;
  status: StepStatus;
  reason?: string | null;
  depends_on: string[];
  job_id?: string | null;
  reused_from?: string | null;
  job_state?: JobState | null;
  failure_class?: FailureClass | null;
  started_at?: number | null;
  finished_at?: number | null;
  retry: number;
}

export interface IRunSummary {
  id: string;
  name: string;
  user: string;
  file?: string | null;
  state: RunState;
  created_at: number;
  finished_at?: number | null;
  steps: number;
  succeeded: number;
  reused: string[];
  failed: string[];
  retries: number;
  shared: string;
  /** The run this one runs again (one's own, or a teammate's shared run). */
  started_from?: string | null;
}

export interface IDescribeRun extends IRunSummary {
  parameters: Record<string, unknown>;
  cache: boolean;
  cancel_reason?: string | null;
  step_views: IStepView[];
  pipeline: { steps: Record<string, { notebook: string }> };
}

/** What POST pipelines/check answers: the pipeline as read. */
export type CheckedPipeline = Record<string, unknown>;

export function checkPipeline(
  settings: ServerConnection.ISettings,
  file: string
): Promise<CheckedPipeline> {
  return requestAPI(['pipelines', 'check'], { method: 'POST', body: { file } }, settings);
}

/** What a new run takes besides its pipeline: parameters over the pipeline's, and the cache. */
export interface IRunOptions {
  parameters?: Record<string, unknown>;
  cache?: boolean;
}

/** POST pipelines/runs: a run of `source` (a pipeline file, or a run to start again). */
function postRun(
  settings: ServerConnection.ISettings,
  source: { file: string } | { from_run: string },
  options: IRunOptions
): Promise<IDescribeRun> {
  const body = { ...source, parameters: options.parameters ?? {}, cache: options.cache ?? true };
  return requestAPI(['pipelines', 'runs'], { method: 'POST', body }, settings);
}

export function startRun(
  settings: ServerConnection.ISettings,
  file: string,
  options: IRunOptions = {}
): Promise<IDescribeRun> {
  return postRun(settings, { file }, options);
}

/** Run `id` again as one's own: its pipeline and code, `parameters` over its parameters. */
export function startRunAgain(
  settings: ServerConnection.ISettings,
  id: string,
  options: IRunOptions = {}
): Promise<IDescribeRun> {
  return postRun(settings, { from_run: id }, options);
}

export function listRuns(settings: ServerConnection.ISettings): Promise<{ runs: IRunSummary[] }> {
  return requestAPI(['pipelines', 'runs'], {}, settings);
}

export function getRun(settings: ServerConnection.ISettings, id: string): Promise<IDescribeRun> {
  return requestAPI(['pipelines', 'runs', id], {}, settings);
}

export function cancelRun(settings: ServerConnection.ISettings, id: string): Promise<IDescribeRun> {
  return requestAPI(['pipelines', 'runs', id, 'cancel'], { method: 'POST', body: {} }, settings);
}

export function retryRun(settings: ServerConnection.ISettings, id: string): Promise<IDescribeRun> {
  return requestAPI(['pipelines', 'runs', id, 'retry'], { method: 'POST', body: {} }, settings);
}

/** A step's state in a word or two: queued/running for an active step's job, not run... */
export function stepStateLabel(view: IStepView): string {
  switch (view.status) {
    case 'active':
      return view.job_state && view.job_state !== 'running'
        ? view.job_state
        : view.job_id
          ? 'running'
          : 'submitting';
    case 'not_run':
      return 'not run';
    default:
      return view.status;
  }
}

/**
 * The sentence under a step: why it waits, how it failed, whose result it reuses; for an
 * active step with its job's summary at hand, why the job waits in the queue or how long it
 * has run.
 */
export function stepDetail(view: IStepView, job?: IJobSummary, now?: number): string {
  if (view.status === 'active' && job) {
    const waits = waitExplanation(job);
    if (waits) {
      return waits;
    }
    if (job.state === 'running' && now !== undefined) {
      return `running for ${formatElapsed(job, now)}`;
    }
  }
  if (view.status === 'reused') {
    return view.reused_from ? `reused from ${view.reused_from}` : (view.reason ?? 'reused');
  }
  if (view.status === 'failed' && view.failure_class) {
    return `${view.failure_class}: ${view.reason ?? 'its job failed'}`;
  }
  return view.reason ?? '';
}

/** The job a click on a step opens: its own, or the one whose outputs it reuses. */
export function stepJob(view: IStepView): string | null {
  return view.job_id ?? view.reused_from ?? null;
}

/** The run's steps' dependencies as the graph's edges. */
export function runEdges(run: Pick<IDescribeRun, 'step_views'>): IEdge[] {
  return run.step_views.flatMap(v =>
    v.depends_on.map(from => ({ from, to: v.step, inputs: [], explicit: true }))
  );
}

/** How long a run took (so far, while it runs). */
export function runDuration(
  run: Pick<IRunSummary, 'created_at' | 'finished_at'>,
  now: number
): string {
  const end = run.finished_at ?? now;
  return formatDuration(Math.max(0, end - run.created_at));
}

/** The runs of one pipeline file, newest first (the server lists them so). */
export function runsOfFile(runs: IRunSummary[], file: string): IRunSummary[] {
  return runs.filter(r => r.file === file);
}

/** A run's outcome in a few words: `succeeded, 1 of 3 reused`, `failed at train`. */
export function runOutcome(run: IRunSummary): string {
  const reused = run.reused.length ? `, ${run.reused.length} of ${run.steps} reused` : '';
  switch (run.state) {
    case 'running':
      return `running, ${run.succeeded} of ${run.steps} done${reused}`;
    case 'failed':
      return `failed at ${run.failed.join(', ') || 'a step'}${reused}`;
    default:
      return `${run.state}${reused}`;
  }
}

/** One run's side of a step in the comparison of two runs. */
export interface IStepSide {
  state: string;
  detail: string;
  /** How long its job ran ('' when it did not run, or runs still). */
  duration: string;
  /** Its job, or the one whose result it reused. */
  job: string | null;
}

export interface IStepComparison {
  step: string;
  a: IStepSide | null;
  b: IStepSide | null;
  /** The two runs' steps stand on the same job (one reused the other's, or both one's). */
  sameResult: boolean;
}

function side(view: IStepView | undefined): IStepSide | null {
  if (!view) {
    return null;
  }
  const ran =
    view.started_at && view.finished_at && view.status !== 'reused'
      ? formatDuration(view.finished_at - view.started_at)
      : '';
  return {
    state: stepStateLabel(view),
    detail: stepDetail(view),
    duration: ran,
    job: stepJob(view)
  };
}

/**
 * Two runs of a pipeline step by step: each step of either run (in the first run's order,
 * then the second's new ones) with its state, duration and job in each.
 */
export function compareRuns(
  a: Pick<IDescribeRun, 'step_views'>,
  b: Pick<IDescribeRun, 'step_views'>
): IStepComparison[] {
  const inA = new Map(a.step_views.map(v => [v.step, v]));
  const inB = new Map(b.step_views.map(v => [v.step, v]));
  const names = [...inA.keys(), ...[...inB.keys()].filter(n => !inA.has(n))];
  return names.map(step => {
    const sa = side(inA.get(step));
    const sb = side(inB.get(step));
    return { step, a: sa, b: sb, sameResult: !!sa?.job && sa.job === sb?.job };
  });
}
