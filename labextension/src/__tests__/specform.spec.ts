import { IConfig } from '../models';
import { IParameter } from '../parameters';
import {
  datasetNames,
  defaultJobName,
  errorsByField,
  formFromSpec,
  formToSpec,
  initialForm,
  sharePatch,
  sharesOffered,
  workerText
} from '../specform';
import { clusterConfig, fieldErrors, localConfig } from './fixtures';

const params: IParameter[] = [
  { name: 'epochs', text: '4' },
  { name: 'steps_per_epoch', text: '40' },
  { name: 'lr', text: '0.05' }
];

describe('defaultJobName', () => {
  it('mirrors the server rule', () => {
    expect(defaultJobName('examples/train_ddp.ipynb')).toBe('train-ddp');
    expect(defaultJobName('My Notebook (v2).ipynb')).toBe('my-notebook-v2');
    expect(defaultJobName('___.ipynb')).toBe('job');
    expect(defaultJobName(`${'x'.repeat(39)}-y.ipynb`)).toBe('x'.repeat(39));
  });
});

describe('formToSpec', () => {
  it('sends MIN:MAX workers as typed, and shows an elastic job as MIN:MAX again', () => {
    const form = initialForm('a/b.ipynb', clusterConfig, []);
    form.workers = ' 1:3 ';
    expect(formToSpec(form, clusterConfig).resources?.workers).toBe('1:3');
    expect(workerText({ workers: 3, min_workers: 1 })).toBe('1:3');
    expect(workerText({ workers: 3, min_workers: null })).toBe('3');
    expect(errorsByField([{ field: 'resources.min_workers', message: 'MIN > MAX' }])).toEqual({
      workers: ['MIN > MAX']
    });
  });

  it('sends changed parameters only, typed, and the local resources', () => {
    const form = initialForm('examples/train_ddp.ipynb', localConfig, params, [2, 0]);
    form.processesPerWorker = '2';
    form.parameters.epochs = '1';
    form.parameters.steps_per_epoch = '20';
    const defaults = Object.fromEntries(params.map(p => [p.name, p.text]));
    expect(formToSpec(form, localConfig, defaults)).toEqual({
      name: 'train-ddp',
      source: { kind: 'notebook', path: 'examples/train_ddp.ipynb', cells: { mode: 'all' } },
      parameters: { epochs: 1, steps_per_epoch: 20 },
      resources: { workers: 1, gpus_per_worker: 0, processes_per_worker: 2 },
      priority: 'normal'
    });
  });

  it('sends selected cells sorted, and image, team, queue where the backend has them', () => {
    const form = initialForm('a/b.ipynb', clusterConfig, [], [5, 2]);
    form.cells = 'selected';
    form.workers = '2';
    form.gpusPerWorker = '4';
    form.processesPerWorker = '';
    form.queue = 'vision-long';
    form.maxRuntime = ' 2h ';
    const spec = formToSpec(form, clusterConfig);
    expect(spec.source).toEqual({
      kind: 'notebook',
      path: 'a/b.ipynb',
      cells: { mode: 'indices', indices: [2, 5] }
    });
    expect(spec.resources).toEqual({ workers: 2, gpus_per_worker: 4 });
    expect(spec.image).toBe('pytorch-2.4');
    expect(spec.team).toBe('vision');
    expect(spec.queue).toBe('vision-long');
    expect(spec.max_runtime).toBe('2h');
  });

  it('sends CPU and memory per worker where the backend requests them, the text when odd', () => {
    const config: IConfig = {
      ...clusterConfig,
      features: [...clusterConfig.features, 'worker_resources']
    };
    const form = initialForm('n.ipynb', config, []);
    expect(formToSpec(form, config).resources).toEqual({
      workers: 1,
      gpus_per_worker: 1,
      processes_per_worker: 1
    });
    form.cpuPerWorker = ' 0.25 ';
    form.memoryPerWorker = '1500Mi';
    expect(formToSpec(form, config).resources).toMatchObject({ cpu: 0.25, memory: '1500Mi' });
    form.cpuPerWorker = 'lots';
    expect(formToSpec(form, config).resources?.cpu).toBe('lots'); // for the server to name
    expect(formToSpec(form, clusterConfig).resources?.cpu).toBeUndefined();
    expect(errorsByField([{ field: 'resources.cpu', message: 'not a number' }])).toEqual({
      cpuPerWorker: ['not a number']
    });
  });

  it('shows a placement the pool can never host next to the field to change', () => {
    // What the cluster's check (trainhub/jobs/placement.py) answers a dry run with.
    const taint = 'every node of pool a100 is tainted (gpu:NoSchedule) and the pool tolerates none';
    const memory = '2Ti per worker is more than pool a100 offers one worker (at most 1Ti)';
    const workers = '3 workers (3 x 8 GPUs) cannot all run at once';
    expect(
      errorsByField([
        { field: 'queue', message: taint },
        { field: 'resources.memory', message: memory },
        { field: 'resources.workers', message: workers }
      ])
    ).toEqual({ queue: [taint], memoryPerWorker: [memory], workers: [workers] });
  });

  it('offers the team’s GPU shares and sends the one chosen, in the pool that offers it', () => {
    const quarter = {
      share: '1/4',
      queue: 't4-shared',
      label: '¼ of a GPU (time-sliced with 3 others)'
    };
    const config: IConfig = {
      ...clusterConfig,
      teams: [
        { name: 'vision', queues: ['t4-shared', 'a100'], gpu_shares: [quarter] },
        { name: 'nlp', queues: ['a100'] }
      ]
    };
    expect(sharesOffered(config, 'vision')).toEqual([quarter]);
    expect(sharesOffered(config, 'nlp')).toEqual([]);
    expect(sharesOffered({ ...config, features: ['queues'] }, 'vision')).toEqual([]);

    const form = { ...initialForm('n.ipynb', config, []), workers: '3' };
    expect(formToSpec(form, config).resources?.gpu_share).toBeUndefined();
    const shared = { ...form, ...sharePatch(config, form, '1/4') };
    expect(shared).toMatchObject({ gpuShare: '1/4', queue: 't4-shared', workers: '1' });
    const spec = formToSpec(shared, config);
    expect(spec.resources).toEqual({
      workers: 1,
      gpus_per_worker: 0,
      gpu_share: '1/4',
      processes_per_worker: 1
    });
    expect(spec.queue).toBe('t4-shared');
    // Back to whole GPUs: one GPU, in the team's first pool that does not share.
    expect(sharePatch(config, shared, '')).toEqual({
      gpuShare: '',
      gpusPerWorker: '1',
      queue: 'a100'
    });
    // The server's refusal shows next to the share field; a rerun keeps the share.
    const refusal = 'a shared GPU holds one worker; 2 workers need whole GPUs';
    expect(errorsByField([{ field: 'resources.gpu_share', message: refusal }])).toEqual({
      gpuShare: [refusal]
    });
    const rerun = formFromSpec(spec, config, [], {
      kind: 'resubmit',
      jobId: 'j-1',
      jobName: 'n',
      suggestedName: 'n-2'
    });
    expect(rerun.gpuShare).toBe('1/4');
  });

  it('never sends what the backend cannot do', () => {
    const form = initialForm('n.ipynb', { ...localConfig, features: [] }, []);
    form.workers = '4';
    form.gpusPerWorker = '2';
    const spec = formToSpec(form, { ...localConfig, features: [] });
    expect(spec.resources).toEqual({ workers: 1, gpus_per_worker: 0, processes_per_worker: 1 });
    expect(spec.priority).toBeUndefined();
    expect(spec.queue).toBeUndefined();
  });

  it('sends the datasets picked by name, and none when none is picked', () => {
    const form = initialForm('n.ipynb', localConfig, []);
    expect(formToSpec(form, localConfig).datasets).toBeUndefined();
    form.datasets = ['imagenet', 'coco'];
    expect(formToSpec(form, localConfig).datasets).toEqual(['imagenet', 'coco']);
    expect(errorsByField([{ field: 'datasets.0.name', message: 'no dataset' }])).toEqual({
      datasets: ['no dataset']
    });
  });

  it('prefills a rerun with the datasets its spec asked for by name', () => {
    expect(
      datasetNames([
        { name: 'imagenet', path: '/datasets/imagenet', catalog: true },
        { name: 'mine', path: 'data/mine' },
        'coco'
      ])
    ).toEqual(['imagenet', 'coco']);
    expect(datasetNames(undefined)).toEqual([]);
  });

  it('passes non-numeric counts through for the server to name the field', () => {
    const form = initialForm('n.ipynb', localConfig, []);
    form.processesPerWorker = 'two';
    expect(formToSpec(form, localConfig).resources?.processes_per_worker).toBe('two');
  });
});

describe('errorsByField', () => {
  it('puts each server message next to its field', () => {
    expect(
      errorsByField(
        fieldErrors({
          name: 'use lower-case letters',
          'resources.gpus_per_worker': 'at most 8',
          resources: '4 processes per worker cannot share 2 GPU(s)',
          parameters: "'1x' is not a Python identifier",
          'source.cells.indices': 'cell 9 does not exist',
          spec: 'GPU quota of team vision exceeded'
        })
      )
    ).toEqual({
      name: ['use lower-case letters'],
      gpusPerWorker: ['at most 8'],
      processesPerWorker: ['4 processes per worker cannot share 2 GPU(s)'],
      parameters: ["parameters: '1x' is not a Python identifier"],
      cells: ['cell 9 does not exist'],
      general: ['GPU quota of team vision exceeded']
    });
  });
});
