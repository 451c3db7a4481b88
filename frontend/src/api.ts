// Typed client for the plugin's routes (docs/http_api.md, docs/http_api_modules.md).
// Every URL is relative: the plugin iframe's <base href> is
// `<prefix>/data/plugin/leakfinder/`, so this works under --path_prefix.

export type Verdict = 'leak' | 'no_leak' | 'inconclusive';
export type LeakKind = 'growing' | 'persistent' | 'bounded' | 'window_end';
export type BufferStatus = 'freed' | 'live_at_end' | 'before_window';

export interface RunEntry {
  run: string;
  hosts: string[];
}
export interface RunsResponse {
  runs: RunEntry[];
}

export interface Step {
  step: number;
  start_ps: number;
  end_ps: number;
}

export interface LeakGroup {
  group: number;
  op: string;
  shape: string;
  dtype: string;
  region: string;
  kind: LeakKind;
  count: number;
  bytes: number;
  steps: number;
  first_step: number | null;
  last_step: number | null;
  bytes_per_step: number;
  score: number;
}

export interface BreakdownRow {
  op: string;
  shape: string;
  dtype: string;
  region: string;
  count: number;
  bytes: number;
}

export interface AllocatorReport {
  name: string;
  num_allocations: number;
  num_deallocations: number;
  balance: number;
  peak_bytes_in_use: number;
  peak_time_ps: number | null;
  peak_step: number | null;
  peak_stack_reserved_bytes: number;
  peak_fragmentation: number;
  live_at_end_count: number;
  live_at_end_bytes: number;
  freed_before_window_count: number;
  never_freed_bytes: number;
  growth_bytes_per_step: number | null;
  verdict: Verdict;
  reason: string;
  leaks: LeakGroup[];
  peak_breakdown: BreakdownRow[];
}

/** One compiled XLA program, as summarised in the report (`modules`). */
export interface ModuleSummary {
  name: string;
  [key: string]: unknown;
}

export interface HostReport {
  host: string;
  warnings: string[];
  duration_ps: number;
  num_steps: number;
  steps: Step[];
  allocators: AllocatorReport[];
  modules: ModuleSummary[];
}

export interface RunReport {
  run: string;
  verdict: Verdict;
  hosts: HostReport[];
}

export interface Report {
  version: number;
  runs: RunReport[];
}

export interface Timeline {
  run: string;
  host: string;
  allocator: string;
  total_events: number;
  time_ps: number[];
  heap_bytes: number[];
  stack_bytes: number[];
  fragmentation: number[];
  never_freed_bytes: number[];
  peak: {time_ps: number | null; bytes: number; step: number | null};
  steps: Step[];
}

export interface Buffer {
  id: number;
  address: string;
  alloc_time_ps: number | null;
  free_time_ps: number | null;
  alloc_step: number | null;
  free_step: number | null;
  requested_bytes: number;
  allocation_bytes: number;
  op: string;
  shape: string;
  dtype: string;
  region: string;
  status: BufferStatus;
  group: number | null;
}

export interface BuffersPage {
  total: number;
  offset: number;
  limit: number;
  buffers: Buffer[];
}

export type BufferSort = 'bytes' | 'alloc_time_ps' | 'free_time_ps' | 'lifetime_ps' | 'op';

export interface BufferQuery {
  offset?: number;
  limit?: number;
  sort?: BufferSort;
  order?: 'asc' | 'desc';
  group?: number | null;
  status?: BufferStatus | '';
  start_ps?: number | null;
  end_ps?: number | null;
}

/** One logical buffer of a compiled program, in program order. */
export interface LogicalBuffer {
  id?: number;
  start: number;
  end: number;
  size: number;
  offset: number;
  instruction: string;
  opcode: string;
  shape: string;
  op_name: string;
  source: string;
  /** Set for buffers that live for the whole program (parameter, constant, live-out, ...). */
  reason?: string | null;
  [key: string]: unknown;
}

export interface ModuleDetail {
  run: string;
  host: string;
  module: string;
  /** Heap in program order: one value per heap-simulator event. */
  heap_bytes: number[];
  program_order?: number[];
  peak_bytes?: number;
  peak_index?: number;
  buffers: LogicalBuffer[];
  whole_program: LogicalBuffer[];
  peak_buffers: LogicalBuffer[];
  [key: string]: unknown;
}

/** Where the plugin's routes live; identity of the view being shown. */
export interface Selection {
  run: string;
  host: string;
  allocator: string;
  module: string;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

type Params = Record<string, string | number | null | undefined>;

export function routeUrl(route: string, params: Params = {}): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') query.set(key, String(value));
  }
  const qs = query.toString();
  return `./${route}${qs ? `?${qs}` : ''}`;
}

async function getJson<T>(route: string, params: Params = {}, signal?: AbortSignal): Promise<T> {
  const response = await fetch(routeUrl(route, params), {signal, headers: {Accept: 'application/json'}});
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const message =
      body && typeof body === 'object' && 'error' in body && typeof (body as {error: unknown}).error === 'string'
        ? (body as {error: string}).error
        : `${route} answered HTTP ${response.status}`;
    throw new ApiError(message, response.status);
  }
  return body as T;
}

export const api = {
  runs(signal?: AbortSignal): Promise<RunsResponse> {
    return getJson('runs', {}, signal);
  },
  report(run: string, host?: string, signal?: AbortSignal): Promise<Report> {
    return getJson('report', {run, host}, signal);
  },
  timeline(
    sel: Pick<Selection, 'run' | 'host' | 'allocator'>,
    points: number,
    range: {start_ps: number; end_ps: number} | null,
    signal?: AbortSignal,
  ): Promise<Timeline> {
    return getJson(
      'timeline',
      {
        run: sel.run,
        host: sel.host,
        allocator: sel.allocator,
        points,
        start_ps: range ? Math.floor(range.start_ps) : null,
        end_ps: range ? Math.ceil(range.end_ps) : null,
      },
      signal,
    );
  },
  buffers(sel: Pick<Selection, 'run' | 'host' | 'allocator'>, query: BufferQuery, signal?: AbortSignal): Promise<BuffersPage> {
    return getJson(
      'buffers',
      {
        run: sel.run,
        host: sel.host,
        allocator: sel.allocator,
        ...query,
        start_ps: query.start_ps == null ? null : Math.floor(query.start_ps),
        end_ps: query.end_ps == null ? null : Math.ceil(query.end_ps),
      },
      signal,
    );
  },
  module(sel: Pick<Selection, 'run' | 'host' | 'module'>, signal?: AbortSignal): Promise<ModuleDetail> {
    return getJson('module', {run: sel.run, host: sel.host, module: sel.module}, signal);
  },
};
