/** Typed calls of the trainhub REST API (see server_extension/trainhub_server/openapi.yaml). */
import { ServerConnection } from '@jupyterlab/services';

import {
  ICheckpointInfo,
  IConfig,
  IDatasetInfo,
  IDescribeJob,
  IJobEdit,
  IJobPage,
  IJobSpec,
  ILogChunk,
  IJobSummary,
  INotebookParameters,
  IOutputList,
  JobState,
  MetricKind
} from './models';
import { IComparison } from './compare';
import { ICreateSchedule, ISchedule } from './schedules';
import { INoticeList } from './notices';
import { CommentKind, IComment, ICommentList } from './comments';
import { IModelSummary, IModelVersion, IModelView, IRegisterRequest } from './registry';
import { IJobUsage, IUsagePanel } from './usage';
import { apiUrl, requestAPI } from './request';

/** GET jobs: a page of the user's jobs, found by words (q), states and sweep. */
export interface IListOptions {
  states?: JobState[];
  limit?: number;
  before?: number | null;
  sweep?: string;
  /** Only the steps of this pipeline run. */
  pipelineRun?: string;
  q?: string;
  /** Add each job's latest value of this training scalar. */
  scalar?: string;
}

export class TrainHubAPI {
  constructor(readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  private call<T>(
    segments: (string | number)[],
    options: Parameters<typeof requestAPI>[1] = {}
  ): Promise<T> {
    return requestAPI<T>(segments, options, this.settings);
  }

  config(): Promise<IConfig> {
    return this.call(['config']);
  }

  /** Start (or find running) a TensorBoard over these jobs; `url` is where the server
   * proxies it, for the session's user only. */
  openTensorBoard(ids: string[]): Promise<{ url: string; runs: string[] }> {
    return this.call([], { method: 'POST', body: { ids }, beside: 'trainhub/tensorboard' });
  }

  /** The server's notices with an id above `after`, oldest first. */
  notices(after: number): Promise<INoticeList> {
    return this.call(['notices'], { query: { after } });
  }

  /** The datasets the user's team may ask for by name. */
  datasets(): Promise<{ datasets: IDatasetInfo[] }> {
    return this.call(['datasets']);
  }

  listJobs(options: IListOptions = {}): Promise<IJobPage> {
    return this.call(['jobs'], {
      query: {
        state: options.states,
        limit: options.limit ?? 50,
        before: options.before,
        sweep: options.sweep || undefined,
        pipeline_run: options.pipelineRun || undefined,
        q: options.q || undefined,
        scalar: options.scalar || undefined
      }
    });
  }

  /** Change a job's tags or note (its spec stays as submitted). */
  editJob(jobId: string, change: IJobEdit): Promise<IJobSummary> {
    return this.call(['jobs', jobId], { method: 'PATCH', body: change });
  }

  /** Validate only: resolves when the server accepts the spec, throws ApiError otherwise. */
  validate(spec: IJobSpec): Promise<{ valid: boolean }> {
    return this.call(['jobs'], { method: 'POST', body: spec, query: { dry_run: 1 } });
  }

  submit(spec: IJobSpec): Promise<IDescribeJob> {
    return this.call(['jobs'], { method: 'POST', body: spec });
  }

  describe(jobId: string): Promise<IDescribeJob> {
    return this.call(['jobs', jobId]);
  }

  cancel(jobId: string, reason?: string): Promise<IDescribeJob> {
    return this.call(['jobs', jobId, 'cancel'], {
      method: 'POST',
      body: reason ? { reason } : {}
    });
  }

  suspend(jobId: string, reason?: string): Promise<IDescribeJob> {
    return this.call(['jobs', jobId, 'suspend'], {
      method: 'POST',
      body: reason ? { reason } : {}
    });
  }

  resume(jobId: string): Promise<IDescribeJob> {
    return this.call(['jobs', jobId, 'resume'], { method: 'POST', body: {} });
  }

  resubmit(jobId: string, overrides?: Partial<IJobSpec>): Promise<IDescribeJob> {
    return this.call(['jobs', jobId, 'resubmit'], {
      method: 'POST',
      body: overrides ? { overrides } : {}
    });
  }

  logRanks(jobId: string): Promise<{ ranks: number[] }> {
    return this.call(['jobs', jobId, 'logs']);
  }

  logChunk(jobId: string, rank: number, offset = 0, length = 1048576): Promise<ILogChunk> {
    return this.call(['jobs', jobId, 'logs', rank], { query: { offset, length } });
  }

  metrics<R>(
    jobId: string,
    kind: MetricKind,
    offset = 0
  ): Promise<{ records: R[]; next_offset: number }> {
    return this.call(['jobs', jobId, 'metrics', kind], { query: { offset } });
  }

  checkpoints(jobId: string): Promise<{ checkpoints: ICheckpointInfo[] }> {
    return this.call(['jobs', jobId, 'checkpoints']);
  }

  deleteCheckpoint(jobId: string, step: number): Promise<void> {
    return this.call(['jobs', jobId, 'checkpoints', step], { method: 'DELETE' });
  }

  /** A new job with this one's spec (changed by `overrides`) from its checkpoint of `step`. */
  fork(jobId: string, step: number, overrides?: Partial<IJobSpec>): Promise<IDescribeJob> {
    return this.call(['jobs', jobId, 'checkpoints', step, 'fork'], {
      method: 'POST',
      body: overrides ? { overrides } : {}
    });
  }

  /** A plain link for the browser to download (the server answers with an attachment). */
  checkpointFileUrl(jobId: string, step: number, name: string): string {
    return apiUrl(this.settings.baseUrl, ['jobs', jobId, 'checkpoints', step, 'files', name]);
  }

  /** The folders and files the job wrote to its outputs directory. */
  outputs(jobId: string): Promise<IOutputList> {
    return this.call(['jobs', jobId, 'outputs']);
  }

  /** A plain link downloading one output file (an attachment, never rendered). */
  outputFileUrl(jobId: string, path: string): string {
    return apiUrl(this.settings.baseUrl, ['jobs', jobId, 'outputs', 'file'], { path });
  }

  /**
   * 2 to 10 jobs side by side; each scalar's curve downsampled to `points` points, or no
   * scalars read at all (`scalars: false`, a quick first answer).
   */
  compare(
    ids: string[],
    options: { points?: number; goals?: string[]; scalars?: boolean } = {}
  ): Promise<IComparison> {
    const { points, goals, scalars } = options;
    return this.call(['compare'], {
      query: {
        ids: ids.join(','),
        points,
        goal: goals,
        scalars: scalars === false ? 'false' : undefined
      }
    });
  }

  /** One job's usage and goodput, derived now (so far, while it runs). */
  jobUsage(jobId: string): Promise<IJobUsage> {
    return this.call(['jobs', jobId, 'usage']);
  }

  /** The Usage panel: the user's and their team's figures, in one answer. */
  usagePanel(): Promise<IUsagePanel> {
    return this.call(['usage', 'panel']);
  }

  notebookParameters(path: string): Promise<INotebookParameters> {
    return this.call(['notebook', 'parameters'], { query: { path } });
  }

  /** The user's schedules, newest first, each with its latest runs. */
  listSchedules(): Promise<{ schedules: ISchedule[] }> {
    return this.call(['schedules']);
  }

  createSchedule(request: ICreateSchedule): Promise<ISchedule> {
    return this.call(['schedules'], { method: 'POST', body: request });
  }

  /** One schedule with its whole history of runs. */
  describeSchedule(scheduleId: string): Promise<ISchedule> {
    return this.call(['schedules', scheduleId]);
  }

  /** Pause, resume or run a schedule now; answers the schedule as it is then. */
  scheduleAction(scheduleId: string, action: 'pause' | 'resume' | 'run-now'): Promise<ISchedule> {
    return this.call(['schedules', scheduleId, action], { method: 'POST', body: {} });
  }

  deleteSchedule(scheduleId: string): Promise<void> {
    return this.call(['schedules', scheduleId], { method: 'DELETE' });
  }

  /** The comments on an object the user may read, oldest first. */
  listComments(kind: CommentKind, target: string): Promise<ICommentList> {
    return this.call(['comments'], { query: { kind, target } });
  }

  addComment(kind: CommentKind, target: string, body: string): Promise<IComment> {
    return this.call(['comments'], { method: 'POST', body: { kind, target, body } });
  }

  /** Edit one's own comment (another's is refused). */
  editComment(commentId: string, body: string): Promise<IComment> {
    return this.call(['comments', commentId], { method: 'PATCH', body: { body } });
  }

  deleteComment(commentId: string): Promise<void> {
    return this.call(['comments', commentId], { method: 'DELETE' });
  }

  /** The team's models, most recently changed first. */
  listModels(): Promise<{ models: IModelSummary[] }> {
    return this.call(['registry', 'models']);
  }

  /** A model: its versions with metrics and lineage, aliases and audit log. */
  describeModel(name: string): Promise<IModelView> {
    return this.call(['registry', 'models', name]);
  }

  /** A job's checkpoint or output as the next version of a model. */
  registerModel(request: IRegisterRequest): Promise<IModelVersion> {
    return this.call(['registry', 'models'], { method: 'POST', body: request });
  }

  /** Point an alias at a version (null removes it); refused for a protected alias. */
  moveAlias(
    name: string,
    alias: string,
    version: number | null,
    reason: string
  ): Promise<IModelView> {
    return this.call(['registry', 'models', name, 'aliases', alias], {
      method: 'PUT',
      body: { version, reason }
    });
  }

  archiveVersion(
    name: string,
    version: number,
    archived: boolean,
    reason: string
  ): Promise<IModelView> {
    return this.call(['registry', 'models', name, 'versions', version, 'archive'], {
      method: 'POST',
      body: { archived, reason }
    });
  }
}
