/**
 * Fork and resubmit open the submit dialog prefilled from the job they run again: its
 * resources, settings and parameters over the notebook's own, the source said in words, and
 * the distinct name the server will give it.
 */
import { TrainHubAPI } from './api';
import { IConfig, IDescribeJob } from './models';
import { successorName } from './naming';
import { IParameter, pythonLiteral } from './parameters';
import { formFromSpec, IRerun } from './specform';
import { showSubmitDialog } from './widgets/submitdialog';

/** The notebook's parameters as the dialog shows them, from the server's reading of its
 * cell tagged `parameters`. */
export async function notebookParametersOf(api: TrainHubAPI, path: string): Promise<IParameter[]> {
  try {
    const found = await api.notebookParameters(path);
    const source = new Set(found.source_text ?? []);
    const texts = found.texts ?? {};
    return Object.entries(found.parameters).map(([name, value]) => ({
      name,
      // The cell's own text: JSON's reader turns 0.0 into 0, which would read as an int.
      text: texts[name] ?? (source.has(name) ? String(value) : pythonLiteral(value))
    }));
  } catch {
    return []; // the notebook is gone or unreadable: the job's own values are still shown
  }
}

/** The step of a job's newest checkpoint, or null when it saved none. */
async function latestStep(api: TrainHubAPI, jobId: string): Promise<number | null> {
  try {
    const { checkpoints } = await api.checkpoints(jobId);
    return checkpoints.length ? Math.max(...checkpoints.map(c => c.step)) : null;
  } catch {
    return null;
  }
}

/**
 * Open the dialog to run `job` again (`step` given: fork from that checkpoint, null for its
 * latest). Resolves with the created job, or null when the dialog was cancelled.
 */
export async function openRerunDialog(options: {
  api: TrainHubAPI;
  config: IConfig;
  job: IDescribeJob;
  kind: 'resubmit' | 'fork';
  step?: number | null;
}): Promise<IDescribeJob | null> {
  const { api, config, job, kind } = options;
  const source = job.spec.source;
  const parameters = source.kind === 'notebook' ? await notebookParametersOf(api, source.path) : [];
  const forkedFrom = kind === 'resubmit' ? (job.spec.fork_from ?? null) : null;
  const rerun: IRerun = {
    kind,
    jobId: job.id,
    jobName: job.name,
    step: kind === 'fork' ? (options.step ?? null) : undefined,
    forkedFrom,
    latestStep: forkedFrom ? await latestStep(api, job.id) : null,
    suggestedName: await suggestedName(api, job)
  };
  return showSubmitDialog({
    api,
    config,
    form: formFromSpec(job.spec, config, parameters, rerun),
    parameters
  });
}

/** The name the server will give a rerun of `job`, from the names its search finds. */
async function suggestedName(api: TrainHubAPI, job: IDescribeJob): Promise<string> {
  const numbered = !!job.resubmitted_from;
  const base = numbered ? job.name.replace(/-\d+$/, '') : job.name;
  let taken: string[] = [];
  try {
    taken = (await api.listJobs({ q: base, limit: 500 })).jobs.map(j => j.name);
  } catch {
    // the server still decides; the hint is only a forecast
  }
  return successorName(job.name, taken, numbered);
}
