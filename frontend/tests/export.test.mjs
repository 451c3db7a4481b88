// csv.ts and inline.ts without a browser: the CSV cells and the inlined data
// source, checked against the Python side they must agree with
// (tb_leakfinder/views/csv.py, views/standalone_page.py and engine/queries.py, which the buffers route answers with).

import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {before, test} from 'node:test';
import {SRC, importSources} from './sources.mjs';

const REPO = join(SRC, '..', '..');
const PYTHON = process.env.PYTHON || 'python3';
let m;

function python(code, input) {
  const env = {...process.env, PYTHONPATH: [REPO, process.env.PYTHONPATH].filter(Boolean).join(':')};
  const result = spawnSync(PYTHON, ['-c', code], {cwd: REPO, env, input, encoding: 'utf8', maxBuffer: 1 << 28});
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(result.stdout);
}

before(async () => {
  const entry = `
    export {neutralise, toCsv, fetchAll, csvFileName, CSV_PAGE, siteColumns, withSite} from './csv';
    export {answerKey, queryBuffers, sourceOf, timelineWindow} from './inline';
    export {memorySource, byField} from './table';
  `;
  m = await importSources(entry);
});

const CELLS = ['=1+1', '+1', '-1', '@SUM(A1)', '\t=1', '\r=1', 'Mul', '[128,1024]', '', 'a,b', 'x"y', -5, 0.25, 3, 133781.5, 2 ** 70, 1e-7, null, true, false, {a: [1, '-x']}, ['=x'], [{b: '@x'}]];

test('cells are neutralised as the CLI neutralises them', () => {
  const expected = python(
    'import json,sys; from tb_leakfinder.views.csv import neutralise; print(json.dumps([neutralise(v) for v in json.load(sys.stdin)]))',
    JSON.stringify(CELLS),
  );
  assert.deepEqual(
    CELLS.map((v) => m.neutralise(v)),
    expected,
  );
  assert.equal(m.neutralise('=HYPERLINK("x")'), `'=HYPERLINK("x")`);
  assert.equal(m.neutralise(undefined), '');
});

test('a table is RFC 4180 text with a header of every key', () => {
  const text = m.toCsv([
    {op: 'a,b', bytes: 1},
    {op: 'say "hi"', kind: 'growing', note: 'two\nlines'},
    {op: '-x', bytes: -2},
  ]);
  assert.equal(text, 'op,bytes,kind,note\r\n"a,b",1,,\r\n"say ""hi""",,growing,"two\nlines"\r\n\'-x,-2,,\r\n');
  assert.equal(m.toCsv([]), '\r\n');
  assert.equal(m.csvFileName('Buffers at the peak'), 'buffers-at-the-peak.csv');
  assert.equal(m.csvFileName('Never-freed groups (suspects)'), 'never-freed-groups-suspects.csv');
});

test('the context columns come first, as the CLI writes them', () => {
  // A run name a spreadsheet would run, a host needing quotes, an allocator's name as its memory id.
  const cases = [
    {
      context: ['run', 'host', 'allocator'],
      where: {run: '=cmd|"/c calc"!A1', host: 'host,1 "a"', allocator: '2'},
      rows: [
        {group: 0, op: '-Mul', shape: '[128,1024]', bytes: 524288, bytes_per_step: 52428.8, steps: [1, 2]},
        // Repeats context keys: the context's values win, and the keys are not repeated.
        {op: 'Add', run: 'other', host: 'other', kind: 'growing', first_step: null},
        {group: 2, op: 'two\nlines', score: 1e-7, new_leak: true},
      ],
    },
    {
      context: ['run_a', 'run_b', 'host_a', 'host_b', 'allocator_a', 'allocator_b'],
      where: {run_a: 'tf_fixed', run_b: 'tf_leak', host_a: 'h', host_b: 'h', allocator_a: null, allocator_b: 'GPU_0_bfc'},
      rows: [{status: 'new', op: 'Mul', kind_a: null, kind_b: 'growing', chunk_bytes_a: 0, chunk_bytes_b: 2 ** 40}],
    },
    {context: ['run', 'host', 'module'], where: {run: 'r', host: 'h', module: '@jit_f(1)'}, rows: []},
    // A one-column line with an empty cell is quoted: it is not a blank line.
    {context: ['run'], where: {run: ''}, rows: [{run: 'x'}, {}]},
  ];
  const expected = python(
    `
import json, sys
from tb_leakfinder.views.csv import Table
texts = []
for case in json.load(sys.stdin):
    table = Table(tuple(case["context"]))
    table.add(tuple(case["where"][k] for k in case["context"]), case["rows"])
    texts.append(table.text())
print(json.dumps(texts))
`,
    JSON.stringify(cases),
  );
  assert.deepEqual(
    cases.map((c) => m.toCsv(c.rows, c.where)),
    expected,
  );
  assert.ok(expected[0].startsWith('run,host,allocator,group,op,shape,bytes,bytes_per_step,steps,kind,'), expected[0]);
  assert.ok(expected[0].includes(`\r\n"'=cmd|""/c calc""!A1","host,1 ""a""",2,0,'-Mul,`), expected[0]);
  assert.ok(!expected[0].includes('other'), 'the context values replace the row');
  assert.equal(expected[2], 'run,host,module\r\n');
  assert.equal(expected[3], 'run\r\n""\r\n""\r\n');
});

test("a row's site is its own columns, in its place, as the CLI's CSV has it", () => {
  const site = {
    context: 'program',
    program: 'jit_dot(49)',
    buffer: 'output 0',
    allocation: 0,
    hlo_op: 'dot_general',
    op_name: 'jit(dot)/dot_general',
    hlo_shape: 'bf16[8192,8192]',
    source: '/workspace/traces/generate_gemm_trace.py:37',
    match: 'ambiguous',
    candidates: ['output 0 of jit_dot(49)', '=output 0 of jit_dot(79)'],
    stack: ['generate_gemm_trace.py:31 in run_gemms', 'generate_gemm_trace.py:60 in <module>'],
  };
  const empty = {...site, context: '', program: '', buffer: '', allocation: -1, hlo_op: '', op_name: '', hlo_shape: '', source: '', match: '', candidates: [], stack: []};
  const rows = [
    {category: 'buffers', op: 'output 0 of jit_dot(49)', count: 2, bytes: 268435456, where: 'generate_gemm_trace.py:37', site},
    {category: 'stack', op: '', count: null, bytes: 1024, where: '', site: empty},
  ];
  const where = {run: 'r', host: 'h', allocator: 'GPU:0'};
  const expected = python(
    `
import json, sys
from tb_leakfinder.views.csv import Table, site_rows
table = Table(("run", "host", "allocator"))
table.add(("r", "h", "GPU:0"), site_rows(json.load(sys.stdin)))
print(json.dumps(table.text()))
`,
    JSON.stringify(rows),
  );
  const text = m.toCsv(
    rows.map((r) => m.withSite(r, m.siteColumns(r.site))),
    where,
  );
  assert.equal(text, expected);
  assert.ok(text.startsWith('run,host,allocator,category,op,count,bytes,where,context,program,buffer,allocation,'), text);
  assert.ok(text.includes(',generate_gemm_trace.py:31 in run_gemms ← generate_gemm_trace.py:60 in <module>'), text);
});

test('the whole table is fetched, every page, in its sort and filter', async () => {
  const rows = Array.from({length: 2 * m.CSV_PAGE + 17}, (_, i) => ({id: i, op: i % 3 ? 'Mul' : 'Add', bytes: (i * 7919) % 1000}));
  const calls = [];
  const memory = m.memorySource(rows, m.byField, (r) => r.op);
  const source = (query, signal) => {
    calls.push(query);
    return memory(query, signal);
  };
  const query = {offset: 50, limit: 25, sort: 'bytes', order: 'desc', filter: 'mul'};
  const all = await m.fetchAll(source, query, new AbortController().signal);
  const expected = rows.filter((r) => r.op === 'Mul');
  assert.equal(all.length, expected.length);
  assert.deepEqual(new Set(all.map((r) => r.id)), new Set(expected.map((r) => r.id)));
  for (let i = 1; i < all.length; i++) assert.ok(all[i - 1].bytes >= all[i].bytes);
  assert.equal(calls.length, 2);
  assert.ok(calls.every((c) => c.limit === m.CSV_PAGE && c.filter === 'mul' && c.sort === 'bytes'));
});

test('answer keys are the ones the Python standalone page stores', () => {
  const cases = [
    ['runs', {}],
    ['report', {run: 'tf_leak/2026_11_29_10_05_03', host: 'vm'}],
    ['report', {run: 'r', host: undefined}],
    ['timeline', {run: 'r', host: 'h', allocator: 'GPU_0_bfc', points: 800, start_ps: 5, end_ps: null, family: 3}],
    ['module', {run: 'r', host: 'h', module: 'jit_f(8)', memory_space: null, points: 1000}],
    ['module', {run: 'r', host: 'h', module: 'jit_f(8)', memory_space: 1, points: 1000}],
    ['buffers', {run: 'r é', host: 'h', allocator: '2', offset: 100, limit: 100, sort: 'op', order: 'asc', status: ''}],
    ['compare', {run_a: 'a', run_b: 'b', host_a: 'x', host_b: ''}],
  ];
  const expected = python(
    'import json,sys; from tb_leakfinder.views.standalone_page import answer_key; print(json.dumps([answer_key(r, a) for r, a in json.load(sys.stdin)]))',
    JSON.stringify(cases.map(([r, a]) => [r, Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined))])),
  );
  assert.deepEqual(
    cases.map(([r, a]) => m.answerKey(r, a)),
    expected,
  );
});

test('inlined buffers are filtered, sorted and paged as the buffers route does', () => {
  // The route's own answers for a set of queries on the demo leak, and every buffer as the page inlines them.
  const code = `
import json, sys
from tb_leakfinder.read.discovery import runs_for_path
from tb_leakfinder.engine import queries as answers
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.views.standalone_page import StandalonePage
(run,) = runs_for_path("demo_logs/tf_leak")
engine = Engine(lambda: [run])
snap = StandalonePage([run], engine)
snap.gather()
report = answers.report(engine, run)
host = report["runs"][0]["hosts"][0]
where = {"run": run.name, "host": host["host"], "allocator": host["allocators"][0]["allocator"]}
steps = host["steps"]
mid = steps[len(steps) // 2]
queries = [
    {},
    {"sort": "op", "order": "asc", "limit": 40},
    {"sort": "alloc_time_ps", "order": "asc", "offset": 30, "limit": 50},
    {"sort": "free_time_ps", "order": "desc", "limit": 60},
    {"sort": "lifetime_ps", "order": "desc", "limit": 25, "status": "freed"},
    {"family": 0, "limit": 100},
    {"status": "never_freed", "sort": "alloc_time_ps", "order": "asc"},
    {"start_ps": mid["start_ps"], "end_ps": mid["end_ps"], "limit": 500},
]
cases = []
for q in queries:
    page = answers.buffers(answers.allocator(answers.host(engine, run, where["host"]), where["allocator"]), **q)
    cases.append({"query": q, "total": page["total"], "ids": [b["id"] for b in page["buffers"]]})
inlined = json.loads(snap.page.answers[next(k for k in snap.page.answers if k.startswith("buffers"))])
print(json.dumps({"where": where, "inlined": inlined, "cases": cases, "limits": report["limits"]}))
`;
  const {where, inlined, cases, limits} = python(code, '');
  assert.ok(inlined.buffers.length > 100);
  for (const {query, total, ids} of cases) {
    const answer = m.queryBuffers(inlined, {...where, ...query}, limits);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.total, total, JSON.stringify(query));
    assert.deepEqual(
      answer.body.buffers.map((b) => b.id),
      ids,
      JSON.stringify(query),
    );
  }
  assert.equal(m.queryBuffers(inlined, {sort: 'nonsense'}, limits).status, 400);
  // Every page carries the inlined sites, which each buffer's `site` indexes (none in a page written without them).
  const sites = [{program: ''}, {program: 'jit_f(1)'}];
  assert.deepEqual(m.queryBuffers({...inlined, sites}, {...where, limit: 5}, limits).body.sites, sites);
  assert.deepEqual(m.queryBuffers({...inlined, sites: undefined}, {...where, limit: 5}, limits).body.sites, []);
});

test('the inlined source answers what the page holds, the errors it kept, and says what it lacks', async () => {
  const key = m.answerKey('report', {run: 'r', host: 'bad'});
  const source = m.sourceOf({
    version: 1,
    notes: [],
    answers: {[m.answerKey('report', {run: 'r'})]: {runs: [{run: 'r'}]}, [m.answerKey('timeline', {run: 'r', host: 'h', allocator: '0'})]: {time_ps: [1, 2], peak: 1}},
    errors: {[key]: {status: 422, error: 'bad.xplane.pb: not an XSpace'}},
    aliases: {[m.answerKey('timeline', {run: 'r', host: 'h', allocator: 'GPU:0'})]: m.answerKey('timeline', {run: 'r', host: 'h', allocator: '0'})},
  });
  assert.deepEqual(await source.get('report', {run: 'r', host: undefined}), {status: 200, body: {runs: [{run: 'r'}]}});
  assert.deepEqual(await source.get('report', {run: 'r', host: 'bad'}), {status: 422, body: {error: 'bad.xplane.pb: not an XSpace'}});
  // Zoom and resolution do not matter; the memory id's label finds the same answer.
  assert.deepEqual(await source.get('timeline', {run: 'r', host: 'h', allocator: 'GPU:0', points: 900}), {status: 200, body: {time_ps: [1, 2], peak: 1}});
  const missing = await source.get('module', {run: 'r', host: 'h', module: 'jit_f(1)'});
  assert.equal(missing.status, 404);
  assert.match(missing.body.error, /does not hold module \(r, h, jit_f\(1\)\)/);
});

test("a family out of range is the server's 404 on the page too, by the allocator's name or its memory id", async () => {
  // The server's own refusals (the timeline and buffers routes' query) and the page's data, on the demo leak.
  const code = `
import json
from tb_leakfinder.read.discovery import runs_for_path
from tb_leakfinder.engine import queries as answers
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.views.standalone_page import StandalonePage
(run,) = runs_for_path("demo_logs/tf_leak")
engine = Engine(lambda: [run])
snap = StandalonePage([run], engine)
snap.gather()
host = answers.report(engine, run)["runs"][0]["hosts"][0]
allocator = host["allocators"][0]
at = answers.allocator(answers.host(engine, run, host["host"]), allocator["allocator"])
families = len(allocator["families"])
refusals = []
for family in (families, families + 7, -1):
    for route, query in (("timeline", lambda: answers.timeline(at, 100, family=family)), ("buffers", lambda: answers.buffers(at, family=family))):
        try:
            query()
        except LeakfinderError as exc:
            refusals.append({"route": route, "family": family, "status": exc.status, "error": exc.message})
where = {"run": run.name, "host": host["host"], "allocator": allocator["allocator"], "memory_id": allocator["memory_id"]}
print(json.dumps({"data": json.loads(snap.script_data("")), "where": where, "families": families, "refusals": refusals}))
`;
  const {data, where, families, refusals} = python(code, '');
  assert.equal(refusals.length, 6, 'the server refuses every family out of range');
  const source = m.sourceOf(data);
  for (const allocator of [where.allocator, where.memory_id]) {
    const at = {run: where.run, host: where.host, allocator};
    for (const {route, family, status, error} of refusals) {
      const args = route === 'timeline' ? {...at, family, points: 900} : {...at, family};
      assert.deepEqual(await source.get(route, args), {status, body: {error}}, `${route} family ${family} of ${allocator}`);
    }
    // A family the allocator has is answered.
    assert.equal((await source.get('timeline', {...at, family: families - 1, points: 900})).status, 200);
  }
});

test('a zoomed timeline is the inlined points of its window and one on each side', () => {
  const timeline = {allocator: '0', time_ps: [0, 10, 20, 30, 40, 50], heap_bytes: [1, 2, 3, 4, 5, 6], family_bytes: [0, 0, 1, 1, 2, 2], steps: [{step: 0}, {step: 1}, {step: 2}, {step: 3}, {step: 4}, {step: 5}]};
  const zoomed = m.timelineWindow(timeline, {start_ps: 15, end_ps: 35, points: 100});
  assert.deepEqual(zoomed.time_ps, [10, 20, 30, 40]);
  assert.deepEqual(zoomed.heap_bytes, [2, 3, 4, 5]);
  assert.deepEqual(zoomed.family_bytes, [0, 1, 1, 2]);
  assert.equal(zoomed.steps.length, 6, 'the steps stay whole');
  assert.deepEqual(m.timelineWindow(timeline, {}).time_ps, timeline.time_ps);
  assert.deepEqual(m.timelineWindow(timeline, {start_ps: 100, end_ps: 200}).time_ps, [50]);
  assert.deepEqual(timeline.time_ps, [0, 10, 20, 30, 40, 50], 'the inlined answer is not changed');
});
