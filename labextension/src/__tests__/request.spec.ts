import { apiPath, apiUrl, queryString, toApiError, wsApiUrl } from '../request';

describe('URLs', () => {
  it('joins every route below the base URL, as under JupyterHub', () => {
    expect(apiUrl('/user/alice/', ['jobs'])).toBe('/user/alice/trainhub/api/jobs');
    expect(apiUrl('http://hub.example/user/alice/', ['jobs', 'j-1', 'logs', 0])).toBe(
      'http://hub.example/user/alice/trainhub/api/jobs/j-1/logs/0'
    );
    expect(apiUrl('/', ['config'])).toBe('/trainhub/api/config');
  });

  it('encodes segments so names cannot change the route', () => {
    expect(apiPath('jobs', '../etc', 'checkpoints', 3, 'files', 'a b/c.pt')).toBe(
      'trainhub/api/jobs/..%2Fetc/checkpoints/3/files/a%20b%2Fc.pt'
    );
  });

  it('writes repeated query keys and leaves out empty values', () => {
    expect(queryString({ state: ['queued', 'running'], limit: 50, before: undefined })).toBe(
      '?state=queued&state=running&limit=50'
    );
    expect(queryString({})).toBe('');
    expect(apiUrl('/', ['jobs'], { dry_run: 1 })).toBe('/trainhub/api/jobs?dry_run=1');
  });

  it('builds websocket URLs from wsUrl, with the token only when asked to', () => {
    const settings = { wsUrl: 'ws://localhost:8888/user/bob/', token: 'abc', appendToken: true };
    expect(wsApiUrl(settings, ['jobs', 'j1', 'logs', 1, 'stream'], { offset: 42 })).toBe(
      'ws://localhost:8888/user/bob/trainhub/api/jobs/j1/logs/1/stream?offset=42&token=abc'
    );
    expect(wsApiUrl({ ...settings, appendToken: false }, ['jobs', 'stream'])).toBe(
      'ws://localhost:8888/user/bob/trainhub/api/jobs/stream'
    );
  });
});

describe('toApiError', () => {
  it('keeps the message and the field errors', () => {
    const e = toApiError(
      400,
      {
        message: 'The job spec is not valid.',
        errors: [{ field: 'resources.gpus_per_worker', message: 'at most 8' }, { bogus: 1 }]
      },
      'fallback'
    );
    expect(e.status).toBe(400);
    expect(e.message).toBe('The job spec is not valid.');
    expect(e.fieldErrors).toEqual([{ field: 'resources.gpus_per_worker', message: 'at most 8' }]);
  });

  it('falls back to a sentence for bodies that are not JSON objects', () => {
    expect(toApiError(502, 'Bad gateway', 'POST jobs failed: 502').message).toBe(
      'POST jobs failed: 502'
    );
  });
});
