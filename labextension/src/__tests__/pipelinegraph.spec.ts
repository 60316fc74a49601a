import { formChanges, stepFormErrors, stepToForm } from '../pipelineform';
import { errorsByStep, localChecks, mergeErrors } from '../pipelinechecks';
import { PipelineDocument } from '../pipelinedocument';
import { stepNameFor } from '../pipelinegraph';
import { layout } from '../pipelinelayout';
import { fieldErrors, localConfig as config } from './fixtures';

const TEXT = `# nightly training
name: train-eval
parameters: {epochs: 3}
steps:
  prepare:
    notebook: prepare.ipynb # writes the data
    outputs: [data]
  train:
    notebook: train.ipynb
    inputs: {data: prepare.data}
    parameters: {lr: 0.01}
    outputs: [model]
  evaluate:
    notebook: evaluate.ipynb
    depends_on: [train]
`;

describe('PipelineDocument', () => {
  it('reads steps and their wiring as edges', () => {
    const p = new PipelineDocument(TEXT);
    expect(p.stepNames()).toEqual(['prepare', 'train', 'evaluate']);
    expect(p.step('train')).toMatchObject({
      notebook: 'train.ipynb',
      inputs: { data: 'prepare.data' },
      outputs: ['model'],
      parameters: { lr: 0.01 }
    });
    expect(p.edges()).toEqual([
      { from: 'prepare', to: 'train', inputs: ['data'], explicit: false },
      { from: 'train', to: 'evaluate', inputs: [], explicit: true }
    ]);
  });

  it('writes back what it did not change as it was, comments and order included', () => {
    expect(new PipelineDocument(TEXT).toString()).toBe(TEXT);
  });

  it('adds a step named after its notebook and connects it, keeping the comments', () => {
    const p = new PipelineDocument(TEXT);
    expect(p.addStep('reports/Export Model.ipynb')).toBe('export-model');
    expect(p.connect('evaluate', 'export-model')).toBeNull();
    const text = p.toString();
    expect(text).toContain('# nightly training');
    expect(text).toContain('notebook: prepare.ipynb # writes the data');
    expect(text).toContain(
      '  export-model:\n    notebook: reports/Export Model.ipynb\n    depends_on: [evaluate]\n'
    );
    expect(new PipelineDocument(text).edges()).toContainEqual({
      from: 'evaluate',
      to: 'export-model',
      inputs: [],
      explicit: true
    });
  });

  it('adds to an existing depends_on and refuses a cycle', () => {
    const p = new PipelineDocument(TEXT);
    expect(p.connect('prepare', 'evaluate')).toBeNull();
    expect(p.step('evaluate')!.dependsOn).toEqual(['train', 'prepare']);
    expect(p.connect('evaluate', 'prepare')).toMatch(/cannot run after/);
    expect(p.connect('train', 'train')).toMatch(/cannot run after/);
    // Already implied by an input: nothing written.
    const before = p.toString();
    expect(p.connect('prepare', 'train')).toBeNull();
    expect(p.toString()).toBe(before);
  });

  it('removes a step and every mention of it', () => {
    const p = new PipelineDocument(TEXT);
    p.removeStep('train');
    expect(p.stepNames()).toEqual(['prepare', 'evaluate']);
    expect(p.toString()).not.toMatch(/train:|train\]|prepare\.data/);
    expect(p.edges()).toEqual([]);
  });

  it('disconnects both depends_on and inputs', () => {
    const p = new PipelineDocument(TEXT);
    p.disconnect('prepare', 'train');
    expect(p.step('train')!.inputs).toEqual({});
    expect(p.toString()).not.toContain('inputs');
  });

  it('names new steps apart', () => {
    expect(stepNameFor('a/train.ipynb', ['train', 'train-2'])).toBe('train-3');
    expect(stepNameFor('x'.repeat(40) + '.ipynb', [])).toHaveLength(30);
    expect(stepNameFor('___.ipynb', [])).toBe('step');
  });

  it('renames a step and what names it', () => {
    const p = new PipelineDocument(TEXT);
    expect(p.renameStep('train', 'fit')).toBeNull();
    expect(p.stepNames()).toEqual(['prepare', 'fit', 'evaluate']);
    expect(p.step('evaluate')!.dependsOn).toEqual(['fit']);
    expect(p.renameStep('fit', 'Bad Name')).toMatch(/lowercase/);
    expect(p.renameStep('fit', 'prepare')).toMatch(/exists/);
  });

  it('sets step fields, merging mappings key by key', () => {
    const p = new PipelineDocument(TEXT);
    p.setStepField('train', ['parameters'], { lr: 0.1, epochs: 2 });
    p.setStepField('train', ['resources', 'processes_per_worker'], 2);
    p.setStepField('prepare', ['outputs'], undefined);
    const t = p.step('train')!;
    expect(t.parameters).toEqual({ lr: 0.1, epochs: 2 });
    expect(t.data.resources).toEqual({ processes_per_worker: 2 });
    expect(p.toString()).toContain('parameters: {lr: 0.1, epochs: 2}');
    expect(p.step('prepare')!.outputs).toEqual([]);
  });

  it('starts a file with no steps', () => {
    const p = new PipelineDocument('');
    p.addStep('a.ipynb');
    expect(p.toString()).toBe('steps:\n  a:\n    notebook: a.ipynb\n');
  });
});

describe('layout', () => {
  it('layers by the longest path', () => {
    const p = new PipelineDocument(TEXT);
    p.addStep('side.ipynb');
    p.connect('prepare', 'evaluate');
    const places = layout(p.stepNames(), p.edges());
    expect(places).toEqual({
      prepare: { layer: 0, row: 0 },
      side: { layer: 0, row: 1 },
      train: { layer: 1, row: 0 },
      evaluate: { layer: 2, row: 0 }
    });
  });

  it('survives a cycle', () => {
    const p = new PipelineDocument(
      'steps:\n  a: {notebook: a.ipynb, depends_on: [b]}\n  b: {notebook: b.ipynb, depends_on: [a]}\n'
    );
    const places = layout(p.stepNames(), p.edges());
    expect(Object.keys(places).sort()).toEqual(['a', 'b']);
  });
});

describe('localChecks', () => {
  it('names each mistake by step and field', () => {
    const p = new PipelineDocument(
      [
        'steps:',
        '  a: {notebook: a.py, outputs: [x]}',
        '  b: {notebook: b.ipynb, depends_on: [zz], inputs: {d: a.y, e: nope, f: q.x}}',
        '  c: {depends_on: [d]}',
        '  d: {notebook: d.ipynb, depends_on: [c]}'
      ].join('\n')
    );
    expect(localChecks(p)).toEqual(
      fieldErrors({
        'steps.a.notebook': "'a.py' is not a notebook (.ipynb)",
        'steps.b.depends_on.0': "no step 'zz'",
        'steps.b.inputs.d': "step 'a' has no output 'y'; it declares x",
        'steps.b.inputs.e': "'nope' is not '<step>.<output>'",
        'steps.b.inputs.f': "no step 'q'",
        'steps.c.notebook': 'Field required',
        'steps.c.depends_on': 'is part of a cycle',
        'steps.d.depends_on': 'is part of a cycle'
      })
    );
  });

  it('says where the YAML is broken', () => {
    const errors = localChecks(new PipelineDocument('steps:\n  a: [\n'));
    expect(errors[0].field).toBe('pipeline');
    expect(errors[0].message).toMatch(/^is not valid YAML: .*line \d+/);
  });

  it("lets the server's sentence stand for the editor's on the same field", () => {
    const local = [
      { field: 'steps.b.inputs.d', message: 'no output y' },
      { field: 'steps.b.depends_on.0', message: "no step 'zz'" }
    ];
    const server = [
      { field: 'steps.b.inputs.d', message: "step 'a' has no output 'y'; it declares x" },
      { field: 'steps.a.notebook', message: 'no such notebook' }
    ];
    expect(mergeErrors(local, server)).toEqual([local[1], ...server]);
  });

  it('groups errors by step', () => {
    expect(
      errorsByStep(
        [
          { field: 'steps.train.resources.workers', message: 'too many' },
          { field: 'parameters', message: 'unknown' },
          { field: 'steps.gone.notebook', message: 'x' }
        ],
        ['train']
      )
    ).toEqual({
      train: [{ field: 'resources.workers', message: 'too many' }],
      '': [
        { field: 'parameters', message: 'unknown' },
        { field: 'steps.gone.notebook', message: 'x' }
      ]
    });
  });
});

describe('the side form', () => {
  const params = [
    { name: 'lr', text: '0.05' },
    { name: 'epochs', text: '1' }
  ];

  it('shows a step as the submit form', () => {
    const step = new PipelineDocument(TEXT).step('train')!;
    const form = stepToForm(step, config, params);
    expect(form).toMatchObject({
      notebookPath: 'train.ipynb',
      parameters: { lr: '0.01', epochs: '1' },
      processesPerWorker: '1',
      priority: 'normal'
    });
  });

  it('writes back only what changed', () => {
    const p = new PipelineDocument(TEXT);
    const before = stepToForm(p.step('train')!, config, params);
    const after = {
      ...before,
      parameters: { ...before.parameters, epochs: '3' },
      processesPerWorker: '2'
    };
    const changes = formChanges(before, after, config, { lr: '0.05', epochs: '1' });
    expect(changes).toEqual([
      [['parameters'], { lr: 0.01, epochs: 3 }],
      [['resources', 'processes_per_worker'], 2]
    ]);
    for (const [path, value] of changes) {
      p.setStepField('train', path, value);
    }
    expect(p.toString()).toContain('parameters: {lr: 0.01, epochs: 3}');
    expect(p.toString()).toContain('    resources:\n      processes_per_worker: 2\n');
  });

  it('shows errors under the form fields', () => {
    expect(
      stepFormErrors([
        { field: 'resources.gpus_per_worker', message: 'over quota' },
        { field: 'notebook', message: 'no such notebook' }
      ])
    ).toEqual({
      gpusPerWorker: ['over quota'],
      general: ['notebook: no such notebook']
    });
  });
});
