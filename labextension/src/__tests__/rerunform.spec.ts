import { IConfig, IJobSpec } from '../models';
import { IParameter } from '../parameters';
import {
  formFromSpec,
  IRerun,
  rerunRequest,
  rerunForkFrom,
  rerunStatement,
  runtimeText,
  submittedName
} from '../specform';
import { localConfig } from './fixtures';

const config: IConfig = {
  ...localConfig,
  limits: { ...localConfig.limits, max_gpus_per_worker: 2 }
};

const notebook: IParameter[] = [
  { name: 'steps', text: '100' },
  { name: 'lr', text: '0.05' },
  { name: 'opt', text: "'adam'" }
];

const spec: IJobSpec = {
  name: 'train',
  source: { kind: 'notebook', path: 'dir/train.ipynb', cells: { mode: 'all' } },
  parameters: { steps: 400, lr: 0.01 },
  resources: { workers: 1, processes_per_worker: 2, gpus_per_worker: 2, cpu: 0.5, memory: '2Gi' },
  priority: 'high',
  max_runtime: 'PT1H30M',
  fork_from: { job_id: 'train-p1', step: 74 }
};

const fork: IRerun = {
  kind: 'fork',
  jobId: 'train-a1',
  jobName: 'train',
  step: 74,
  suggestedName: 'train-2'
};

describe('the dialog prefilled to run a job again', () => {
  it('takes steps, processes, parameters and settings from the job', () => {
    const form = formFromSpec(spec, config, notebook, fork);
    expect(form.notebookPath).toBe('dir/train.ipynb');
    expect(form.processesPerWorker).toBe('2');
    expect(form.gpusPerWorker).toBe('2');
    expect([form.cpuPerWorker, form.memoryPerWorker]).toEqual(['0.5', '2Gi']);
    expect(form.priority).toBe('high');
    expect(form.maxRuntime).toBe('1h30m');
    expect(form.parameters).toEqual({ steps: '400', lr: '0.01', opt: "'adam'" });
    expect(form.name).toBe(''); // the server gives the distinct name
    expect(submittedName(form)).toBe('train-2');
  });

  it('states the source', () => {
    expect(rerunStatement(fork)).toBe('Fork from step 74 of train (train-a1)');
    expect(rerunStatement({ ...fork, step: null })).toBe(
      'Fork from the latest checkpoint of train (train-a1)'
    );
    expect(rerunStatement({ ...fork, kind: 'resubmit', step: undefined })).toBe(
      'Resubmit of train (train-a1)'
    );
  });

  it('asks a resubmit of a fork: the same checkpoint, the latest, or scratch', () => {
    const again: IRerun = {
      kind: 'resubmit',
      jobId: 'train-a1',
      jobName: 'train-2',
      forkedFrom: { job_id: 'train-p1', step: 74 },
      latestStep: 300,
      suggestedName: 'train-3'
    };
    expect(rerunForkFrom(again, 'same')).toEqual({ job_id: 'train-p1', step: 74 });
    expect(rerunForkFrom(again, 'latest')).toEqual({ job_id: 'train-a1', step: 300 });
    expect(rerunForkFrom({ ...again, latestStep: null }, 'latest')).toEqual({
      job_id: 'train-p1',
      step: null
    });
    expect(rerunForkFrom(again, 'scratch')).toBeNull();
    expect(rerunStatement(again, 'same')).toBe(
      'Resubmit of train-2 (train-a1), from the same checkpoint: step 74 of train-p1'
    );
    expect(rerunStatement(again, 'latest')).toBe(
      'Resubmit of train-2 (train-a1), from its latest checkpoint (step 300)'
    );
    expect(rerunStatement(again, 'scratch')).toBe('Resubmit of train-2 (train-a1), from scratch');
  });

  it('sends what changed to the resubmit route, the name only when one was typed', () => {
    const form = formFromSpec(spec, config, notebook, fork);
    const defaults = Object.fromEntries(notebook.map(p => [p.name, p.text]));
    const changed = { ...form, parameters: { ...form.parameters, lr: '0.02' } };
    const request = rerunRequest(changed, config, defaults);
    expect(request.jobId).toBe('train-a1');
    expect(request.overrides.name).toBeUndefined();
    expect(request.overrides.parameters).toEqual({ steps: 400, lr: 0.02 });
    expect(request.overrides.fork_from).toEqual({ job_id: 'train-a1', step: 74 });
    expect(request.overrides.resources).toEqual({
      workers: 1,
      gpus_per_worker: 2,
      processes_per_worker: 2
    });
    const named = rerunRequest({ ...form, name: 'Sweep LR 0.02' }, config, defaults);
    expect(named.overrides.name).toBe('sweep-lr-0-02');
  });

  it('writes a stored runtime the way the field takes it', () => {
    expect(runtimeText('PT2H')).toBe('2h');
    expect(runtimeText('P1DT12H')).toBe('1d12h');
    expect(runtimeText(5400)).toBe('1h30m');
    expect(runtimeText(null)).toBe('');
  });
});
