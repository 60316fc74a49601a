import {
  aliasError,
  aliasesOf,
  auditNewestFirst,
  auditText,
  compareJobs,
  IAuditEntry,
  IModelVersion,
  loadSnippet,
  metricText,
  modelNameError,
  registeredText,
  registerRequest,
  sourceText,
  toggleCompare,
  versionLineage,
  versionSnippets
} from '../registry';

const version = (patch: Partial<IModelVersion> = {}): IModelVersion => ({
  model: 'classifier',
  version: 3,
  user: 'ada',
  created_at: 1796000000,
  description: '',
  source: { job: 'train-1a2b', attempt: 0, kind: 'checkpoint', step: 300 },
  files: { folder: 'classifier/3', files: 2, bytes: 2048, single: null, linked: 2 },
  metrics: { loss: 0.125 },
  lineage: {
    job: { id: 'train-1a2b', name: 'train', user: 'ada', attempt: 0, state: 'succeeded' },
    parameters: { lr: 0.1, opt: 'adam' },
    datasets: [
      {
        name: 'imagenet',
        fingerprint: { files: 10, bytes: 4096, content_hash: 'sha256:abc' }
      }
    ],
    source: { kind: 'notebook', path: 'train.ipynb', cells: [0, 2] },
    image: 'pytorch:2.4',
    ran_image: { backend: 'kubernetes', image_id: 'pytorch@sha256:feed' }
  },
  archived: false,
  aliases: ['staging'],
  load: "trainhub.models.load('classifier/3')",
  ...patch
});

const audit = (patch: Partial<IAuditEntry>): IAuditEntry => ({
  time: 1796000000,
  user: 'ada',
  event: 'alias',
  version: 2,
  alias: 'production',
  previous: 1,
  reason: '',
  ...patch
});

describe('register as model', () => {
  it('names a checkpoint by its step and an output by its path', () => {
    expect(registerRequest('train-1a2b', { step: 300 }, ' classifier ', ' best ')).toEqual({
      name: 'classifier',
      from: 'train-1a2b:300',
      description: 'best'
    });
    expect(registerRequest('train-1a2b', { path: 'eval/model.pt' }, 'c', '').from).toBe(
      'train-1a2b:eval/model.pt'
    );
  });

  it('refuses an output named like a step rather than registering the checkpoint', () => {
    expect(() => registerRequest('train-1a2b', { path: '300' }, 'c', '')).toThrow(
      /named like a checkpoint step/
    );
  });

  it('says which version it made', () => {
    expect(registeredText(version())).toBe('classifier version 3 registered');
  });

  it('checks names and aliases as the server does', () => {
    expect(modelNameError('classifier-v2_b')).toBe('');
    expect(modelNameError('-bad')).toMatch(/letters, digits/);
    expect(modelNameError('a.b')).not.toBe('');
    expect(aliasError('staging')).toBe('');
    expect(aliasError('Production')).toMatch(/lower-case/);
    expect(aliasError('latest')).toMatch(/cannot be moved/);
  });
});

describe('load snippets', () => {
  it('loads by alias or by number', () => {
    expect(loadSnippet('classifier', { alias: 'production' })).toBe(
      "trainhub.models.load('classifier@production')"
    );
    expect(loadSnippet('classifier', { version: 3 })).toBe("trainhub.models.load('classifier/3')");
  });

  it('offers each alias of a version first, then its number (as the server writes it)', () => {
    const v = version({ aliases: ['production', 'staging'] });
    expect(versionSnippets(v)).toEqual([
      "trainhub.models.load('classifier@production')",
      "trainhub.models.load('classifier@staging')",
      v.load
    ]);
  });
});

describe('a version in the panel', () => {
  it('says where it came from', () => {
    expect(sourceText(version().source)).toBe('job train-1a2b, checkpoint step 300');
    expect(sourceText({ job: 'j', attempt: 0, kind: 'output', path: 'model.pt' })).toBe(
      'job j, output model.pt'
    );
    expect(sourceText({ job: 'j', attempt: 1, kind: 'outputs' })).toBe('job j, outputs');
  });

  it('lists its lineage: job, notebook and cells, parameters, image digest, datasets', () => {
    const rows = versionLineage(version());
    expect(rows.job).toBe('train (train-1a2b), attempt 0, succeeded');
    expect(rows.notebook).toBe('train.ipynb · cells 1, 3');
    expect(rows.parameters).toBe('lr=0.1, opt="adam"');
    expect(rows.image).toBe('pytorch:2.4');
    expect(rows['image ran']).toBe('pytorch@sha256:feed');
    expect(rows['dataset imagenet']).toBe('10 files, 4096 bytes · sha256:abc');
    // a version without git facts does not claim the code was outside git
    expect(rows.git).toBeUndefined();
  });

  it('leaves out what the job did not record', () => {
    const rows = versionLineage(version({ lineage: { job: { name: 'train' } } }));
    expect(Object.keys(rows).sort()).toEqual(['from', 'job']);
    expect(rows.job).toBe('train (train-1a2b), attempt 0');
  });

  it('writes metrics as the Checkpoints tab does, and nothing where a version has none', () => {
    expect(metricText(0.123456)).toBe('0.1235');
    expect(metricText(undefined)).toBe('');
  });

  it('lists the aliases of one version, or all of them, sorted', () => {
    const aliases = { staging: 3, production: 2, canary: 3 };
    expect(aliasesOf(aliases, 3)).toEqual(['canary', 'staging']);
    expect(aliasesOf(aliases)).toEqual(['canary', 'production', 'staging']);
  });
});

describe('the audit log', () => {
  it('says each event in a line', () => {
    expect(auditText(audit({}))).toBe('@production: version 1 → version 2');
    expect(auditText(audit({ previous: null }))).toBe('@production: none → version 2');
    expect(auditText(audit({ version: 0 }))).toBe('@production: version 1 → removed');
    expect(auditText(audit({ event: 'version', version: 4 }))).toBe('registered version 4');
    expect(auditText(audit({ event: 'archive', version: 1 }))).toBe('archived version 1');
    expect(auditText(audit({ event: 'unarchive', version: 1 }))).toBe('unarchived version 1');
  });

  it('reads newest first without changing the server answer', () => {
    const log = [audit({ version: 1 }), audit({ version: 2 })];
    expect(auditNewestFirst(log).map(e => e.version)).toEqual([2, 1]);
    expect(log[0].version).toBe(1);
  });
});

describe('comparing two versions', () => {
  it('compares their source jobs, older version first', () => {
    const a = version({ version: 5, source: { job: 'b-job', attempt: 0, kind: 'outputs' } });
    const b = version({ version: 2, source: { job: 'a-job', attempt: 0, kind: 'outputs' } });
    expect(compareJobs(a, b)).toEqual({ ids: ['a-job', 'b-job'] });
  });

  it('refuses two versions of one job, saying so', () => {
    const a = version({ version: 1 });
    const b = version({ version: 2 });
    expect(compareJobs(a, b)).toEqual({
      error: expect.stringContaining('both came from job train-1a2b')
    });
  });

  it('keeps at most two picks, dropping the oldest', () => {
    expect(toggleCompare([], 1)).toEqual([1]);
    expect(toggleCompare([1, 2], 3)).toEqual([2, 3]);
    expect(toggleCompare([1, 2], 1)).toEqual([2]);
  });
});
