// Typed client for the plugin's routes (docs/http_api.md).
// Every URL is relative: the plugin iframe's <base href> is
// `<prefix>/data/plugin/leakfinder/`, so this works under --path_prefix.

import {inlineSource, WHERE_ARGS} from './inline';
import {BUFFERS_ARGS} from './wire';
import type {BufferStatus, BuffersAnswer, BuffersArgs, ComparisonAnswer, HistoryAnswer, ModuleAnswer, ModuleSummary, OverviewAnswer, ReportAnswer, RunsAnswer, TimelineAnswer} from './wire';

// The wire types (the routes' answers) are generated from the server's schema: src/wire.ts.
export type * from './wire';

type QueryArg = Exclude<(typeof BUFFERS_ARGS)[number], (typeof WHERE_ARGS)[number]>;

/** Which page of buffers: the buffers route's declared arguments (wire.ts's BuffersArgs) but the selection's; null or
 * absent (and for `status`, '') is not sent. */
export type BufferQuery = Omit<{[K in QueryArg]?: BuffersArgs[K] | null}, 'status'> & {status?: BufferStatus | '' | null};

/** One program buffer of the static view: a program's buffer allocation. */
export interface ProgramBuffer {
  program: string;
  allocation: number;
}

/** Where the plugin's routes live; identity of the view being shown. */
export interface Selection {
  run: string;
  host: string;
  allocator: string;
  /** The module's key in the selector: its name, with the memory space when not 0. */
  module: string;
}

export function moduleKey(m: Pick<ModuleSummary, 'name' | 'memory_space'>): string {
  return m.memory_space ? `${m.name} (memory space ${m.memory_space})` : m.name;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export type Params = Record<string, string | number | null | undefined>;

export function routeUrl(route: string, params: Params = {}): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') query.set(key, String(value));
  }
  const qs = query.toString();
  return `./${route}${qs ? `?${qs}` : ''}`;
}

/** A 503 means "still being analysed": the analysis goes on, so ask again (for up to ~10 minutes). */
const RETRY_MS = 3000;
const MAX_RETRIES = 200;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new DOMException('Aborted', 'AbortError'));
    });
  });
}

/** What a route answered: its HTTP status and JSON body (null when it had none). */
export interface Answer {
  status: number;
  body: unknown;
}

/** Where answers come from: the plugin's routes, or a standalone report's inlined data (inline.ts). */
export interface DataSource {
  get(route: string, params: Params, signal?: AbortSignal): Promise<Answer>;
}

const httpSource: DataSource = {
  async get(route, params, signal) {
    let response = await fetch(routeUrl(route, params), {signal, headers: {Accept: 'application/json'}});
    for (let attempt = 0; response.status === 503 && attempt < MAX_RETRIES; attempt++) {
      await sleep(RETRY_MS, signal);
      response = await fetch(routeUrl(route, params), {signal, headers: {Accept: 'application/json'}});
    }
    let body: unknown = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    return {status: response.status, body};
  },
};

const source: DataSource = inlineSource() ?? httpSource;

async function getJson<T>(route: string, params: Params = {}, signal?: AbortSignal): Promise<T> {
  const {status, body} = await source.get(route, params, signal);
  if (status < 200 || status > 299) {
    const message =
      body && typeof body === 'object' && 'error' in body && typeof (body as {error: unknown}).error === 'string'
        ? (body as {error: string}).error
        : `${route} answered HTTP ${status}`;
    throw new ApiError(message, status);
  }
  return body as T;
}

export const api = {
  runs(signal?: AbortSignal): Promise<RunsAnswer> {
    return getJson('runs', {}, signal);
  },
  report(run: string, host?: string, signal?: AbortSignal): Promise<ReportAnswer> {
    return getJson('report', {run, host}, signal);
  },
  /** `run` is a TensorBoard run (the part of a session's name before its last "/"). */
  history(tbRun: string, signal?: AbortSignal): Promise<HistoryAnswer> {
    return getJson('history', {tb_run: tbRun}, signal);
  },
  /** With `family`, the answer has `family_bytes`: that family's live bytes at each sample. */
  timeline(
    sel: Pick<Selection, 'run' | 'host' | 'allocator'>,
    points: number,
    range: {start_ps: number; end_ps: number} | null,
    family: number | null = null,
    signal?: AbortSignal,
  ): Promise<TimelineAnswer> {
    return getJson(
      'timeline',
      {
        run: sel.run,
        host: sel.host,
        allocator: sel.allocator,
        points,
        start_ps: range ? Math.floor(range.start_ps) : null,
        end_ps: range ? Math.ceil(range.end_ps) : null,
        family,
      },
      signal,
    );
  },
  buffers(sel: Pick<Selection, 'run' | 'host' | 'allocator'>, query: BufferQuery, signal?: AbortSignal): Promise<BuffersAnswer> {
    const given: Params = {
      run: sel.run,
      host: sel.host,
      allocator: sel.allocator,
      ...query,
      start_ps: query.start_ps == null ? null : Math.floor(query.start_ps),
      end_ps: query.end_ps == null ? null : Math.ceil(query.end_ps),
    };
    // The route's declared arguments, and only those (the server refuses any other).
    return getJson('buffers', Object.fromEntries(BUFFERS_ARGS.map((name) => [name, given[name]])), signal);
  },
  /** Every host of a multi-host run, one row per host and allocator, from the server's cache. */
  overview(run: string, signal?: AbortSignal): Promise<OverviewAnswer> {
    return getJson('overview', {run}, signal);
  },
  /** Run B (the change) against run A (the base); a host is sent only when given. */
  compare(a: {run: string; host: string}, b: {run: string; host: string}, signal?: AbortSignal): Promise<ComparisonAnswer> {
    return getJson('compare', {run_a: a.run, run_b: b.run, host_a: a.host, host_b: b.host}, signal);
  },
  /** `memory_space` is sent only when it is not 0 (the default). */
  module(run: string, host: string, module: Pick<ModuleSummary, 'name' | 'memory_space'>, points: number, signal?: AbortSignal): Promise<ModuleAnswer> {
    const memory_space = module.memory_space ? module.memory_space : null;
    return getJson('module', {run, host, module: module.name, memory_space, points}, signal);
  },
};
