/** What the extension's commands are called, where the palette lists them, and its icon. */
import { LabIcon } from '@jupyterlab/ui-components';

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161"><path d="M4 18h3v-6H4v6zm6.5 0h3V8h-3v10zM17 18h3V4h-3v14zM3 20h18v1.5H3z"/></g></svg>`;
export const trainhubIcon = new LabIcon({ name: 'trainhub:jobs', svgstr: ICON_SVG });

const SCHEDULE_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161"><path d="M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm0 18a8 8 0 1 1 0-16 8 8 0 0 1 0 16zm.5-13H11v6l5.2 3.2.8-1.3-4.5-2.7V7z"/></g></svg>`;
/** The Schedules panel's icon: a clock. */
export const scheduleIcon = new LabIcon({ name: 'trainhub:schedules', svgstr: SCHEDULE_SVG });

const MODELS_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161"><path d="M12 2 3 7v10l9 5 9-5V7l-9-5zm0 2.3L18.7 8 12 11.7 5.3 8 12 4.3zM5 9.7l6 3.3v6.7l-6-3.3V9.7zm8 10V13l6-3.3v6.7l-6 3.3z"/></g></svg>`;
/** The Models panel's icon: a box. */
export const modelsIcon = new LabIcon({ name: 'trainhub:models', svgstr: MODELS_SVG });

/** The palette's category of every trainhub command: typing "trainhub" finds them all. */
export const PALETTE_CATEGORY = 'trainhub: training jobs';

export const CommandIDs = {
  submit: 'trainhub:submit',
  submitSelected: 'trainhub:submit-selected',
  scheduleNotebook: 'trainhub:schedule-notebook',
  openSchedules: 'trainhub:open-schedules',
  openJobs: 'trainhub:open-jobs',
  openJob: 'trainhub:open-job',
  cancelJob: 'trainhub:cancel-job',
  /** Registered by the compare view (args `{ids}`) and the sweep view (args `{sweepId}`). */
  compare: 'trainhub:compare',
  openSweep: 'trainhub:open-sweep',
  /** Args `{ids}`: 1 to 10 jobs in one TensorBoard, in a main-area tab. */
  openTensorBoard: 'trainhub:open-tensorboard',
  /** Registered by the pipelines plugin (args `{runId}`). */
  openPipelineRun: 'trainhub:open-pipeline-run',
  /** Registered by the pipelines plugin (args `{ids: [a, b]}`, two runs). */
  comparePipelineRuns: 'trainhub:compare-pipeline-runs',
  newPipeline: 'trainhub:new-pipeline',
  /** Registered by the comments plugin (args `{kind, target}`): a sweep's or a run's. */
  openComments: 'trainhub:open-comments',
  /** The Models panel (args `{name?, version?}`: open that model, and version, in it). */
  openModels: 'trainhub:open-models',
  /** Register a job's checkpoint or output (args `{jobId, step}` or `{jobId, path}`). */
  registerModel: 'trainhub:register-model'
} as const;
