import { PipelineDocument } from '../pipelinedocument';

// What a person may write: blank lines between steps, quoted strings, block lists, a long
// description, comments above and beside keys. Read and written back with a change elsewhere,
// all of it stays.
const TEXT = `name: nightly
description: "Prepare the data, train on it, evaluate the model; every night at two, the whole thing on one node"

parameters:
  epochs: 3 # the default
  lr: '0.01'

steps:
  # the data first
  prepare:
    notebook: 'data/prepare.ipynb'
    outputs:
      - data
      - stats

  train:
    notebook: train.ipynb
    inputs: {data: prepare.data}
    resources:
      processes_per_worker: 2
`;

describe("a person's file, changed by the editor", () => {
  it('keeps blank lines, quotes, block lists and comments', () => {
    const p = new PipelineDocument(TEXT);
    expect(p.toString()).toBe(TEXT);
    p.setStepField('train', ['resources', 'processes_per_worker'], 4);
    p.addStep('evaluate.ipynb');
    p.connect('train', 'evaluate');
    expect(p.toString()).toBe(
      TEXT.replace('processes_per_worker: 2', 'processes_per_worker: 4') +
        '  evaluate:\n    notebook: evaluate.ipynb\n    depends_on: [train]\n'
    );
  });
});
