import { ICheckpointInfo } from '../models';
import { loadCheckpointSource } from '../notebookcells';
import { parsePythonLiteral } from '../parameters';

const checkpoint = (path: string): ICheckpointInfo => ({
  step: 19,
  time: 0,
  metrics: {},
  files: [],
  world_size: 2,
  attempt: 0,
  format: 'torch',
  sharded: false,
  bytes: 0,
  path
});

describe('loadCheckpointSource', () => {
  it('loads the checkpoint directory with trainhub.checkpoint.load', () => {
    const source = loadCheckpointSource(checkpoint('/data/jobs/j-1/checkpoints/0000000019'), 'j');
    expect(source).toContain(
      'state = trainhub.checkpoint.load("/data/jobs/j-1/checkpoints/0000000019")'
    );
    expect(source.split('\n')[1]).toBe('import trainhub.checkpoint');
  });

  it('keeps odd paths and names inside their string and comment', () => {
    const path = '/data/it\'s "odd"\\dir\nx';
    const source = loadCheckpointSource(checkpoint(path), 'name\nimport os');
    const lines = source.split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[0].startsWith('# ')).toBe(true);
    const literal = /load\((.*)\)$/.exec(lines[3])![1];
    expect(parsePythonLiteral(literal)).toEqual({ ok: true, value: path });
  });
});
