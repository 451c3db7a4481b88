// The data source of a standalone HTML report (`tb-leakfinder report --html`):
// the routes' answers inlined in the page, read instead of fetched. The page
// holds each answer under the key tb_leakfinder/views/standalone_page.py's
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
  /** How many never-freed families the allocator has; absent from a page written before it was inlined. */
  families?: number;
}

/** Arguments an inlined answer does not depend on (standalone_page.py's IGNORED_ARGS). */
const IGNORED_ARGS: Record<string, string[]> = {
  timeline: ['points', 'start_ps', 'end_ps'],
  module: ['points'],
  buffers: ['offset', 'limit', 'sort', 'order', 'family', 'status', 'start_ps', 'end_ps', 'program', 'allocation'],
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

/** The allocation time of a buffer allocated before the window, as the server's model has it (lifetimes.NO_TIME). */
const BEFORE_WINDOW_PS = -1;

/** A sort key: numbers, or a pair whose first element ranks first (a never-freed buffer's lifetime). */
type SortKey = number | string | [number, number];

const SORT_KEYS: Record<string, (b: Buffer) => SortKey> = {
  bytes: (b) => b.chunk_bytes,
  alloc_time_ps: (b) => b.alloc_time_ps ?? BEFORE_WINDOW_PS,
  free_time_ps: (b) => b.free_time_ps ?? Infinity,
  // The server takes a live buffer's end as the largest time: the longer it has lived, the longer its lifetime.
  lifetime_ps: (b) => (b.free_time_ps === null ? [1, -(b.alloc_time_ps ?? 0)] : [0, b.free_time_ps - (b.alloc_time_ps ?? 0)]),
  op: (b) => b.op,
};
const SORTS = Object.keys(SORT_KEYS);
const STATUSES = ['freed', 'never_freed', 'before_window'];
const MAX_PAGE = 5000;

/** Strings by code point, as Python compares them (JavaScript's < compares UTF-16 units: "𝑓" < "～"). */
function codePointOrder(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      // Surrogates (astral characters) move above U+E000..U+FFFF, which move down into their place.
      const rank = (u: number) => (u >= 0xe000 ? u - 0x800 : u >= 0xd800 ? u + 0x2000 : u);
      return rank(x) - rank(y);
    }
  }
  return a.length - b.length;
}

function compareKeys(x: SortKey, y: SortKey): number {
  if (typeof x === 'string' && typeof y === 'string') return codePointOrder(x, y);
  if (Array.isArray(x) && Array.isArray(y)) return x[0] - y[0] || x[1] - y[1];
  return x < y ? -1 : x > y ? 1 : 0;
}

function refused(error: string, status = 400): Answer {
  return {status, body: {error}};
}

/** A string as Python's repr() writes it, for messages the server writes with `{name!r}`. */
function pythonRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escaped = text.replace(/\\/g, '\\\\');
  return quote + (quote === "'" ? escaped.replace(/'/g, "\\'") : escaped) + quote;
}

/** The route's 404 for a family the allocator does not have (buffer_paging.check_family), else null. */
function familyRefused(all: InlineBuffers, family: number | null): Answer | null {
  const families = all.families;
  if (family === null || families === undefined || (family >= 0 && family < families)) return null;
  return refused(`allocator ${pythonRepr(all.allocator)} has no never-freed family ${family}; it has ${families}`, 404);
}

/** One page of the inlined buffers, as analyses/buffer_paging.py cuts it (tests/cases/buffer_paging.json holds both to it). */
export function queryBuffers(all: InlineBuffers, params: Params): Answer {
  const sort = present(params.sort) ? String(params.sort) : 'bytes';
  const order = present(params.order) ? String(params.order) : 'desc';
  const offset = num(params, 'offset') ?? 0;
  const limit = num(params, 'limit') ?? 100;
  if (!SORTS.includes(sort)) return refused(`sort must be one of ${SORTS.join(', ')}, not '${sort}'`);
  if (order !== 'asc' && order !== 'desc') return refused(`order must be asc or desc, not '${order}'`);
  if (offset < 0 || !(limit >= 1 && limit <= MAX_PAGE)) return refused(`offset must be >= 0 and limit between 1 and ${MAX_PAGE}`);
  const family = num(params, 'family');
  const noFamily = familyRefused(all, family);
  if (noFamily) return noFamily;
  const status = present(params.status) ? String(params.status) : null;
  if (status !== null && !STATUSES.includes(status)) return refused(`status must be one of ${STATUSES.join(', ')}, not '${status}'`);
  const start = num(params, 'start_ps');
  const end = num(params, 'end_ps');
  const program = present(params.program) ? String(params.program) : null;
  const allocation = num(params, 'allocation');
  if (program === null && allocation !== null) return refused("allocation is a program's buffer allocation: give the program too");
  const sites = all.sites ?? [];
  const made = (b: Buffer) => {
    const site = sites[b.site];
    return program === null || (!!site && site.program === program && (allocation === null || site.allocation === allocation));
  };
  const key = SORT_KEYS[sort];
  const rows = all.buffers.filter(
    (b) =>
      (family === null || b.family === family) &&
      (status === null || b.status === status) &&
      (start === null || (b.free_time_ps ?? Infinity) >= start) &&
      (end === null || (b.alloc_time_ps ?? BEFORE_WINDOW_PS) <= end) &&
      made(b),
  );
  // Ascending with ties in buffer order, reversed for descending, as the server's stable sort does.
  const ranked = rows
    .map((b) => ({b, k: key(b)}))
    .sort((x, y) => compareKeys(x.k, y.k) || x.b.id - y.b.id)
    .map((r) => r.b);
  if (order === 'desc') ranked.reverse();
  const body = {run: all.run, host: all.host, allocator: all.allocator, total: ranked.length, offset, limit};
  // A page's rows index its `sites`: the inlined list for all of them serves every page.
  return {status: 200, body: {...body, buffers: ranked.slice(offset, offset + limit), sites: all.sites ?? []}};
}

/** The timeline's columns, one value per point (a group's curve, `family_bytes`, too). */
const TIMELINE_SERIES = ['time_ps', 'heap_bytes', 'stack_bytes', 'fragmentation', 'never_freed_bytes', 'family_bytes'];

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
    if (body === undefined && route === 'timeline' && present(params.family)) {
      // A family out of range is the server's 404, not a timeline the page lacks: the allocator's inlined buffers
      // know how many families it has.
      const where = answerKey('buffers', {run: params.run, host: params.host, allocator: params.allocator});
      const buffers = this.data.answers[this.data.aliases[where] ?? where] as InlineBuffers | undefined;
      const noFamily = buffers ? familyRefused(buffers, num(params, 'family')) : null;
      if (noFamily) return noFamily;
    }
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
