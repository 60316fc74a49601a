/**
 * Shapes of the REST API, mirroring the pydantic models of trainhub
 * (trainhub/jobs/spec.py, trainhub/jobs/models.py, trainhub/checkpoints.py).
 */

export type JobState =
  | 'queued'
  | 'starting'
  | 'running'
  | 'retrying'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'suspended';

export const JOB_STATES: JobState[] = [
  'queued',
  'starting',
  'running',
  'retrying',
  'succeeded',
  'failed',
  'cancelled',
  'suspended'
];

export const TERMINAL_STATES: ReadonlySet<JobState> = new Set<JobState>([
  'succeeded',
  'failed',
  'cancelled'
]);

export type FailureClass =
  'code' | 'environment' | 'infrastructure' | 'preempted' | 'cancelled' | 'stopped_early';

export type Priority = 'low' | 'normal' | 'high';

/** Backend capabilities (trainhub/backends/base.py Feature). */
export type Feature =
  | 'multi_node'
  | 'gpus'
  | 'priority'
  | 'queues'
  | 'preemption'
  | 'pip_install'
  | 'datasets'
  | 'images'
  | 'team_sharing'
  | 'worker_resources';

export interface ICellSelection {
  mode: 'all' | 'indices' | 'tags';
  indices?: number[];
  tags?: string[];
}

export interface INotebookSource {
  kind: 'notebook';
  path: string;
  cells?: ICellSelection;
}

export interface IScriptSource {
  kind: 'script';
  path: string;
  args?: string[];
}

export interface IResources {
  /** An elastic job's most workers (MAX); a request may send "MIN:MAX". */
  workers?: number | string;
  /** An elastic job's fewest workers (MIN); null: a fixed size. */
  min_workers?: number | null;
  processes_per_worker?: number | null;
  gpus_per_worker?: number;
  /** A share of one GPU, "1/4", on a pool that shares its GPUs (one worker, no whole GPUs). */
  gpu_share?: string | null;
  cpu?: number | null;
  memory?: string | null;
}

/** The sweep a job is a trial of (trainhub/jobs/spec.py SweepRef). */
export interface ISweepRef {
  id: string;
  trial: number;
}

export interface ICheckpointRef {
  job_id: string;
  step?: number | null;
}

/** CreateJob body. */
export interface IJobSpec {
  name: string;
  source: INotebookSource | IScriptSource;
  parameters?: Record<string, unknown>;
  resources?: IResources;
  image?: string | null;
  team?: string | null;
  queue?: string | null;
  priority?: Priority;
  max_runtime?: string | number | null;
  env?: Record<string, string>;
  tags?: string[];
  fork_from?: ICheckpointRef | null;
  sweep?: ISweepRef | null;
  /** Ranks that keep their executed notebook (default [0]). */
  notebook_ranks?: number[] | 'all';
  /** Announce the job through the user's and team's alert channels on these events. */
  notify?: ('failure' | 'preemption' | 'end')[];
  /** Datasets by name (GET datasets lists those the team may read), or resolved entries. */
  datasets?: (string | { name: string; path?: string | null; catalog?: boolean })[];
}

/** A dataset the user's team may read (GET trainhub/api/datasets). */
export interface IDatasetInfo {
  name: string;
  description: string;
  read_only: boolean;
  owner: string;
  team?: string | null;
  path: string;
}

export interface IVerdict {
  failure_class: FailureClass;
  reason: string;
  retriable?: boolean;
  rank?: number | null;
  cell_index?: number | null;
  line?: number | null;
  exception?: string | null;
  message?: string | null;
  exit_code?: number | null;
  signal?: string | null;
  attempt?: number;
}

export interface ILatestScalar {
  name: string;
  step: number;
  value: number;
}

/** PATCH jobs/{id}: what may change after submission (absent: unchanged). */
/** Who besides the owner may read a job: nobody, or the owner's team (read-only). */
export type Sharing = 'private' | 'team';

export interface IJobEdit {
  tags?: string[];
  note?: string;
  shared?: Sharing;
}

export interface IJobSummary {
  id: string;
  name: string;
  user: string;
  state: JobState;
  priority: string;
  team?: string | null;
  queue?: string | null;
  gpus: number;
  world_size: number;
  created_at: number;
  started_at?: number | null;
  finished_at?: number | null;
  /** While suspended: the checkpoint step it resumes after. */
  suspended_step?: number | null;
  attempt: number;
  wait_reason?: string | null;
  position?: number | null;
  failure_class?: FailureClass | null;
  source: string;
  seq?: number | null;
  /** The sweep this job is a trial of. */
  sweep_id?: string | null;
  /** Editable after submission (PATCH jobs/{id}); spec.tags keeps what was submitted. */
  tags?: string[];
  note?: string;
  /** 'team': the owner shared it with their team, who may read it but not change it. */
  shared?: Sharing;
  /** The parameters the job was given. */
  parameters?: Record<string, unknown>;
  /** What it runs again, e.g. "fork of train-1a2b at step 74". */
  origin?: string | null;
  /** The latest value of the scalar the list was asked for (listJobs({ scalar })). */
  scalar?: ILatestScalar | null;
}

export interface ITimelineEvent {
  time: number;
  type: string;
  [key: string]: unknown;
}

/**
 * trainhub.jobs.models.DataWait (trainhub/metrics/datawait.py): shares in [0, 1], the advice
 * when waiting dominates.
 */
export interface IDataWait {
  fraction: number | null;
  wait_s: number;
  step_s: number;
  /** Each rank's own share (JSON keys: the rank as text). */
  ranks: Record<string, number | null>;
  num_workers?: number | null;
  pin_memory?: boolean | null;
  advice?: string | null;
}

export interface IDescribeJob extends IJobSummary {
  spec: IJobSpec;
  job_dir: string;
  assigned_gpus: number[];
  verdict?: IVerdict | null;
  retries: Record<string, number>;
  lineage?: Record<string, unknown> | null;
  timeline: ITimelineEvent[];
  resubmitted_from?: string | null;
  /** How much of each step the ranks waited for data (null: no DataLoader seen). */
  data_wait?: IDataWait | null;
}

export interface IJobPage {
  jobs: IJobSummary[];
  next_before?: number | null;
  total: number;
}

export interface ICheckpointFile {
  name: string;
  bytes: number;
  sha256: string;
}

/** One folder or file of a job's outputs directory (GET jobs/{id}/outputs). */
export interface IOutputEntry {
  /** Relative to the outputs directory, '/' separated. */
  path: string;
  kind: 'file' | 'dir';
  /** A file's size; a folder's: the files below it. */
  bytes: number;
  mtime: number;
}

export interface IOutputList {
  entries: IOutputEntry[];
  files: number;
  bytes: number;
  truncated: boolean;
}

export interface ICheckpointInfo {
  step: number;
  time: number;
  metrics: Record<string, number>;
  files: ICheckpointFile[];
  world_size: number;
  job_id?: string | null;
  attempt: number;
  format: string;
  sharded: boolean;
  bytes: number;
  path: string;
}

export interface IImageChoice {
  name: string;
  image: string;
  description?: string;
}

/** A share of one GPU a team's jobs may ask for, and the pool (queue) that offers it. */
export interface IGpuShare {
  share: string; // "1/4"
  queue: string;
  label: string; // "¼ of a GPU (time-sliced with 3 others)"
}

export interface ITeam {
  name: string;
  queues: string[];
  /** Shares of a GPU the team's pools offer (a cluster's teams file); none: whole GPUs only. */
  gpu_shares?: IGpuShare[];
}

export interface ILimits {
  max_workers: number;
  max_processes_per_worker: number;
  max_gpus_per_worker: number;
}

export interface IConfig {
  backend: 'local' | 'kubernetes';
  features: Feature[];
  images: IImageChoice[];
  teams: ITeam[];
  limits: ILimits;
  user: string;
  allow_pip: boolean;
}

export interface IFieldError {
  field: string;
  message: string;
}

export interface ILogChunk {
  text: string;
  offset: number;
  next_offset: number;
}

export interface INotebookParameters {
  parameters: Record<string, unknown>;
  cell_index: number | null;
  /** Names whose value is source text (not a JSON literal). */
  source_text?: string[];
  /** Each value's source text as the cell writes it (0.0 stays a float). */
  texts?: Record<string, string>;
}

export type MetricKind = 'scalars' | 'gpu' | 'system';

/** A line of metrics/scalars.jsonl. */
export interface IScalarRecord {
  time: number;
  step: number;
  name: string;
  value: number;
  rank?: number;
  attempt?: number;
}

/**
 * A line of metrics/system.jsonl: a rank's process tree (cpu_percent of one core, rss_bytes),
 * or the machine's (rank null: cpu_percent of all cores, memory_used, memory_total).
 */
export interface ISystemRecord {
  time: number;
  rank: number | null;
  pid?: number;
  cpu_percent?: number | null;
  rss_bytes?: number | null;
  host?: string;
  memory_used?: number | null;
  memory_total?: number | null;
}

/** A line of metrics/gpu.jsonl. */
export interface IGpuRecord {
  time: number;
  gpu: number;
  uuid?: string;
  utilization?: number | null;
  memory_utilization?: number | null;
  memory_used?: number | null;
  memory_total?: number | null;
  power_w?: number | null;
  temperature_c?: number | null;
}
