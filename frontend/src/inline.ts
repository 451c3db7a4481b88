// The data source of a standalone HTML report (`tb-leakfinder report --html`):
// the routes' answers inlined in the page, read instead of fetched. The page
// holds each answer under the key tb_leakfinder/views/snapshot.py's
// answer_key gives; this module computes the same key for a request. The
// timeline and a program are inlined whole: a zoomed timeline is the inlined
// points of its window. The buffers route is filtered, sorted and paged here
// over all the inlined buffers, as the server does. Their sites come inlined
// once for all of them (`sites`, which each buffer's `site` indexes).

import type {Answer, Buffer, DataSource, Params, Site} from './api';

export const DATA_ID = 'tb-leakfinder-data';

export interface InlineData {
  version: number;
  notes: string[];
  answers: Record<string, unknown>;
  /** What a route refused when the page was written (an unreadable host): its status and message. */
  errors: Record<string, {status: number; error: string}>;
  aliases: Record<string, string>;
}

interface InlineBuffers {
  run: string;
  host: string;
  allocator: string;
  total: number;
  buffers: Buffer[];
  /** Every inlined buffer's site; absent from a page written before sites were inlined. */
  sites?: Site[];
}

/** Arguments an inlined answer does not depend on (snapshot.py's IGNORED_ARGS). */
const IGNORED_ARGS: Record<string, string[]> = {
  timeline: ['points', 'start_ps', 'end_ps'],
  module: ['points'],
  buffers: ['offset', 'limit', 'sort', 'order', 'group', 'status', 'start_ps', 'end_ps', 'program', 'allocation'],
};

function present(value: Params[string]): value is string | number {
  return value !== null && value !== undefined && value !== '';
}

/** `route`, then `name=value` for each argument the answer depends on, sorted, NUL-separated. */
export function answerKey(route: string, params: Params): string {
  const ignored = IGNORED_ARGS[route] ?? [];
  const pairs = Object.entries(params)
    .filter(([k, v]) => present(v) && !ignored.includes(k))
    .map(([k, v]) => [k, String(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return [route, ...pairs.map(([k, v]) => `${k}=${v}`)].join('\u0000');
}

function num(params: Params, key: string): number | null {
  const value = params[key];
  return present(value) ? Number(value) : null;
}

const SORT_KEYS: Record<string, (b: Buffer) => number | string> = {
  bytes: (b) => b.allocation_bytes,
  alloc_time_ps: (b) => b.alloc_time_ps ?? -Infinity,
  free_time_ps: (b) => b.free_time_ps ?? Infinity,
  lifetime_ps: (b) => (b.free_time_ps ?? Infinity) - (b.alloc_time_ps ?? 0),
  op: (b) => b.op,
};

/** One page of the inlined buffers, as analyses/buffer_query.py cuts it. */
export function queryBuffers(all: InlineBuffers, params: Params): Answer {
  const group = num(params, 'group');
  const status = params.status;
  const start = num(params, 'start_ps');
  const end = num(params, 'end_ps');
  const program = present(params.program) ? String(params.program) : null;
  const allocation = num(params, 'allocation');
  if (program === null && allocation !== null) return {status: 400, body: {error: "allocation is a program's buffer allocation: give the program too"}};
  const sites = all.sites ?? [];
  const made = (b: Buffer) => {
    const site = sites[b.site];
    return program === null || (!!site && site.program === program && (allocation === null || site.allocation === allocation));
  };
  const sort = String(params.sort ?? 'bytes');
  const order = String(params.order ?? 'desc');
  const key = SORT_KEYS[sort];
  if (!key || (order !== 'asc' && order !== 'desc')) return {status: 400, body: {error: `cannot sort by ${sort} ${order}`}};
  const rows = all.buffers.filter(
    (b) =>
      (group === null || b.group === group) &&
      (!present(status) || b.status === status) &&
      (start === null || (b.free_time_ps ?? Infinity) >= start) &&
      (end === null || (b.alloc_time_ps ?? -Infinity) <= end) &&
      made(b),
  );
  // Ascending with ties in buffer order, reversed for descending, as the server's stable sort does.
  const ranked = rows
    .map((b) => ({b, k: key(b)}))
    .sort((x, y) => (x.k < y.k ? -1 : x.k > y.k ? 1 : x.b.id - y.b.id))
    .map((r) => r.b);
  if (order === 'desc') ranked.reverse();
  const offset = num(params, 'offset') ?? 0;
  const limit = num(params, 'limit') ?? 100;
  const body = {run: all.run, host: all.host, allocator: all.allocator, total: ranked.length, offset, limit};
  // A page's rows index its `sites`: the inlined list for all of them serves every page.
  return {status: 200, body: {...body, buffers: ranked.slice(offset, offset + limit), sites: all.sites ?? []}};
}

/** The timeline's columns, one value per point (a group's curve, `group_bytes`, too). */
const TIMELINE_SERIES = ['time_ps', 'heap_bytes', 'stack_bytes', 'fragmentation', 'never_freed_bytes', 'group_bytes'];

/** The inlined points of a timeline within [start_ps, end_ps], with one more on each side so the lines reach the edges. */
export function timelineWindow(timeline: Record<string, unknown>, params: Params): Record<string, unknown> {
  const start = num(params, 'start_ps') ?? -Infinity;
  const end = num(params, 'end_ps') ?? Infinity;
  const times = timeline.time_ps as number[];
  let lo = times.findIndex((t) => t >= start);
  if (lo < 0) lo = times.length;
  let hi = lo;
  while (hi < times.length && times[hi] <= end) hi++;
  lo = Math.max(0, lo - 1);
  hi = Math.min(times.length, hi + 1);
  const out = {...timeline};
  for (const key of TIMELINE_SERIES) {
    const series = timeline[key];
    if (Array.isArray(series)) out[key] = series.slice(lo, hi);
  }
  return out;
}

class InlineSource implements DataSource {
  constructor(private readonly data: InlineData) {}

  async get(route: string, params: Params): Promise<Answer> {
    let key = answerKey(route, params);
    key = this.data.aliases[key] ?? key;
    const refused = this.data.errors[key];
    if (refused) return {status: refused.status, body: {error: refused.error}};
    const body = this.data.answers[key];
    if (body === undefined) {
      const what = Object.values(params).filter(present).join(', ');
      return {status: 404, body: {error: `This standalone report does not hold ${route} (${what}).`}};
    }
    if (route === 'buffers') return queryBuffers(body as InlineBuffers, params);
    if (route === 'timeline') return {status: 200, body: structuredClone(timelineWindow(body as Record<string, unknown>, params))};
    // Callers may keep and change what they get: each gets its own copy, as from the server.
    return {status: 200, body: structuredClone(body)};
  }
}

/** The inlined data source when this page is a standalone report, else null. */
export function inlineSource(): DataSource | null {
  if (typeof document === 'undefined') return null;
  const element = document.getElementById(DATA_ID);
  if (!element?.textContent) return null;
  return sourceOf(JSON.parse(element.textContent) as InlineData);
}

export function sourceOf(data: InlineData): DataSource {
  return new InlineSource(data);
}
