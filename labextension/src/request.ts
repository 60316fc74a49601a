/**
 * The one way this extension talks to the server: every URL is joined from the server
 * settings' baseUrl (under JupyterHub that is /user/<name>/), every request goes through
 * ServerConnection so tokens, XSRF cookies and hub auth are handled as JupyterLab does.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { IFieldError } from './models';

export const API_PATH = 'trainhub/api';

export type QueryValue = string | number | boolean | null | undefined;
export type Query = Record<string, QueryValue | QueryValue[]>;

/** Encode each path segment so a job id or file name cannot change the route. */
export function apiPath(...segments: (string | number)[]): string {
  return URLExt.join(API_PATH, ...segments.map(s => encodeURIComponent(String(s))));
}

export function queryString(query: Query = {}): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) {
      if (v === undefined || v === null) {
        continue;
      }
      parts.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(v))}`);
    }
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** The http(s) URL of an API route below the server's base URL. */
export function apiUrl(baseUrl: string, segments: (string | number)[], query?: Query): string {
  return URLExt.join(baseUrl, apiPath(...segments)) + queryString(query);
}

/** The ws(s) URL of a websocket route; the token is appended as JupyterLab does for kernels. */
export function wsApiUrl(
  settings: Pick<ServerConnection.ISettings, 'wsUrl' | 'token' | 'appendToken'>,
  segments: (string | number)[],
  query: Query = {}
): string {
  const q: Query = { ...query };
  if (settings.token && settings.appendToken) {
    q.token = settings.token;
  }
  return URLExt.join(settings.wsUrl, apiPath(...segments)) + queryString(q);
}

/** A refused request, with the server's sentence and per-field messages when it gave them. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fieldErrors: IFieldError[] = []
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Parse an error body ({message, errors?}) into an ApiError. */
export function toApiError(status: number, body: unknown, fallback: string): ApiError {
  if (body && typeof body === 'object') {
    const b = body as { message?: unknown; errors?: unknown; reason?: unknown };
    const message =
      typeof b.message === 'string' && b.message
        ? b.message
        : typeof b.reason === 'string' && b.reason
          ? b.reason
          : fallback;
    const errors = Array.isArray(b.errors)
      ? b.errors
          .filter(
            (e): e is IFieldError =>
              !!e && typeof e.field === 'string' && typeof e.message === 'string'
          )
          .map(e => ({ field: e.field, message: e.message }))
      : [];
    return new ApiError(status, message, errors);
  }
  return new ApiError(status, fallback);
}

export interface IRequestOptions {
  method?: 'GET' | 'POST' | 'DELETE' | 'PUT' | 'PATCH';
  query?: Query;
  body?: unknown;
  /** A route beside the REST API instead of below it (`trainhub/tensorboard`). */
  beside?: string;
}

/** Call the trainhub REST API; resolves to the parsed JSON body (undefined for 204). */
export async function requestAPI<T>(
  segments: (string | number)[],
  options: IRequestOptions = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = options.beside
    ? URLExt.join(settings.baseUrl, options.beside) + queryString(options.query)
    : apiUrl(settings.baseUrl, segments, options.query);
  const init: RequestInit = { method: options.method ?? 'GET' };
  if (options.body !== undefined) {
    init.body = JSON.stringify(options.body);
    init.headers = { 'Content-Type': 'application/json' };
  }
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  let data: unknown = undefined;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    throw toApiError(
      response.status,
      data,
      `${init.method} ${segments.join('/')} failed: ${response.status} ${response.statusText}`
    );
  }
  return data as T;
}
