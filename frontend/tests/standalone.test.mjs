// Browser tests of the standalone HTML report (`tb-leakfinder report/diff --html`)
// and of the tables' CSV download against the CLI's `--csv` files: Debian chromium (playwright-core) opens the
// written file from file://, with no server; any request that is not the file
// itself or the bundle's blob: URL fails the test.

import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import {mkdtempSync, readFileSync, rmSync, statSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {delimiter, join} from 'node:path';
import {pathToFileURL} from 'node:url';
import {after, before, test} from 'node:test';
import {launchBrowser, makeLogdir, PYTHON, REPO, runName} from './harness.mjs';

const XSS = '<img src=x onerror=alert(1)>';
const FORMULA = '=HYPERLINK("http://example.invalid")';
const BUILD_EVIL = `
import sys
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
builder, _ = synthesize_training(num_events=2000, steps=10, allocators=("GPU_0_bfc",), cache_entries=2, leak_op=${JSON.stringify(FORMULA + XSS)}, hostname="evil")
write_session(sys.argv[1], "evil", "2026_01_01_00_00_00", {"evil": builder})
`;

let browser;
let dir;
let logdir;

/** Runs the CLI writing `format` (--html FILE or --csv DIR) to `name` under the temporary directory; returns its path. */
function cli(args, name, format = '--html') {
  const out = join(dir, name);
  const env = {...process.env, PYTHONPATH: [REPO, process.env.PYTHONPATH].filter(Boolean).join(delimiter)};
  const result = spawnSync(PYTHON, ['-m', 'tb_leakfinder.views.cli', ...args, format, out], {cwd: REPO, env, encoding: 'utf8'});
  assert.ok(result.status === 0 || result.status === 1, `tb-leakfinder ${args.join(' ')} failed:\n${result.stderr}`);
  return out;
}

/** The header and the lines of one of the CLI's CSV files whose first cells are `where` (no cell here spans lines). */
function cliRows(file, where) {
  const [header, ...lines] = readFileSync(file, 'utf8').split('\r\n').slice(0, -1);
  return {header, lines: lines.filter((l) => l.startsWith(`${where.join(',')},`))};
}

/** Downloads the table inside `selector` as CSV; returns its text and file name. */
async function download(page, selector) {
  const [file] = await Promise.all([page.waitForEvent('download'), page.click(`${selector} button.lf-csv`)]);
  return {csv: readFileSync(await file.path(), 'utf8'), name: file.suggestedFilename()};
}

/** Opens `file` from file://; returns the page and what it asked for beyond itself. */
async function open(file) {
  const page = await browser.context.newPage();
  const seen = {requests: [], errors: [], dialogs: []};
  const self = pathToFileURL(file).href;
  page.on('request', (r) => {
    if (r.url() !== self && !r.url().startsWith('blob:')) seen.requests.push(r.url());
  });
  page.on('pageerror', (e) => seen.errors.push(e.message));
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(self);
  await page.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 60_000});
  return {page, seen};
}

function clean(seen) {
  assert.deepEqual(seen.requests, [], 'no request beyond the file');
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(seen.dialogs, []);
}

const text = (page, selector) => page.$eval(selector, (e) => e.textContent ?? '');

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'leakfinder-standalone-'));
  logdir = makeLogdir([], BUILD_EVIL);
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  if (dir) rmSync(dir, {recursive: true, force: true});
  if (logdir) rmSync(logdir, {recursive: true, force: true});
});

test('a report opened from disk shows verdict, timeline, suspects and peak breakdown, with no server', async () => {
  const {page, seen} = await open(cli(['report', join(REPO, 'demo_logs', 'tf_leak')], 'tf_leak.html'));
  await page.waitForSelector('.lf-verdict[data-verdict=leak]');
  assert.match(await text(page, '.lf-verdict'), /Leak.*Mul \[128,1024\] output/);
  await page.waitForSelector('[data-chart=timeline] canvas');
  const top = await page.$$eval('[data-panel=families] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(top.slice(0, 2), ['growing', 'Mul [128,1024] output']);
  await page.waitForSelector('[data-panel=breakdown] tbody tr');
  assert.ok((await text(page, '[data-panel=breakdown] tbody')).includes('Mul'));
  // Zooming shows the inlined points of the window: fewer than the whole timeline's.
  const points = async () => Number(/drawn as ([\d,]+) points/.exec(await text(page, '[data-panel=timeline] .lf-chart-note'))[1].replace(/,/g, ''));
  const whole = await points();
  const box = await (await page.$('[data-chart=timeline] .u-over')).boundingBox();
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height / 2, {steps: 8});
  await page.mouse.up();
  await page.waitForFunction(() => /between .* and /.test(document.querySelector('[data-panel=lifetimes] .lf-chart-note')?.textContent ?? ''));
  await page.waitForFunction((n) => {
    const note = document.querySelector('[data-panel=timeline] .lf-chart-note')?.textContent ?? '';
    const m = /drawn as ([\d,]+) points/.exec(note);
    return m && Number(m[1].replace(/,/g, '')) < n;
  }, whole);
  assert.ok((await points()) > 10);
  // Selecting a suspect draws its own curve: the group's timeline was inlined too.
  await page.click('[data-panel=families] tbody tr:first-child');
  await page.waitForSelector('[data-chart=lifetimes][data-highlight-family="0"]');
  // The buffers table pages and sorts over the inlined buffers.
  await page.waitForFunction(() => /of \d/.test(document.querySelector('[data-panel=lifetimes] .lf-pager [role=status]')?.textContent ?? ''));
  clean(seen);
  await page.close();
});

test('a JAX report opened from disk shows the static view', async () => {
  const {page, seen} = await open(cli(['report', join(REPO, 'demo_logs', 'jax_liveout')], 'jax.html'));
  await page.waitForSelector('[data-panel=static] [data-table=whole-program] tbody tr');
  assert.match(await text(page, '[data-panel=static] [data-list=actionable]'), /live-out.*f32\[256,3072\].*returned by/);
  await page.waitForSelector('[data-chart=static-heap] canvas');
  // The whole-program buffers as CSV, under the run, host and module as the CLI's static_buffers.csv has them.
  // The tab lists every buffer of the program (GET module); the CLI the report's summary, where buffers under
  // the small-buffer size are one row with `count` and `label`: its other rows are the tab's with count 1.
  const where = await page.evaluate(() => [document.querySelector('.lf-view').dataset.run, document.querySelector('[data-select=host]').value, document.querySelector('[data-module]').dataset.module]);
  const {csv} = await download(page, '[data-panel=static] [data-table=whole-program]');
  const expected = cliRows(join(cli(['report', join(REPO, 'demo_logs', 'jax_liveout')], 'jax-csv', '--csv'), 'static_buffers.csv'), where);
  const [header, ...lines] = csv.split('\r\n').slice(0, -1);
  assert.equal(`${header},count,label`, expected.header);
  assert.ok(lines.every((line) => line.startsWith(`${where.join(',')},`)), csv);
  const single = expected.lines.filter((line) => line.endsWith(',1,'));
  assert.equal(expected.lines.length - single.length, 1, 'one row of small buffers');
  assert.ok(single.length >= 5 && lines.length > single.length, JSON.stringify({lines, single}));
  for (const line of single) assert.ok(lines.includes(line.slice(0, -',1,'.length)), line);
  clean(seen);
  await page.close();
});

test("a JAX GPU report opened from disk: a program buffer's show lists its allocations from the inlined buffers", async () => {
  const build = `
import sys
from tb_leakfinder.testing.pjrt_profile import jax_training
from tb_leakfinder.testing.xspace_builder import write_session
builder, _ = jax_training(12)
write_session(sys.argv[1], "gpu_train", "2026_01_01_00_00_00", {builder.hostname: builder})
`;
  const jax = makeLogdir([], build);
  try {
    const {page, seen} = await open(cli(['report', join(jax, 'gpu_train')], 'gpu_train.html'));
    await page.waitForSelector('[data-panel=static] [data-module="jit_train_step(7)"] [data-table=whole-program] tbody tr');
    // Output 1 of the train step (dot.3, allocation 3), kept every step: its 12 allocations, filtered in the page.
    await page.click('[data-panel=static] [data-table=whole-program] button[data-show-allocation="3"]');
    await page.waitForSelector('[data-panel=lifetimes] [data-picked="jit_train_step(7)#3"][data-total="12"]');
    await page.waitForSelector('[data-chart=lifetimes][data-picked="12"]');
    const wheres = await page.$$eval('[data-panel=lifetimes] tbody tr[data-key] a[data-site-link]', (as) => as.map((a) => [a.dataset.program, a.dataset.allocation]));
    assert.equal(wheres.length, 10);
    for (const w of wheres) assert.deepEqual(w, ['jit_train_step(7)', '3']);
    clean(seen);
    await page.close();
  } finally {
    rmSync(jax, {recursive: true, force: true});
  }
});

test('a diff opened from disk shows the comparison of both runs', async () => {
  const demo = join(REPO, 'demo_logs');
  const file = cli(['diff', join(demo, 'tf_fixed'), join(demo, 'tf_leak')], 'diff.html');
  const {page, seen} = await open(file);
  await page.waitForSelector('.lf-compare .lf-regression');
  await page.waitForSelector('[data-table=compare-families] tbody tr');
  const first = await page.$$eval('[data-table=compare-families] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(first.slice(0, 2), ['new', 'Mul [128,1024] output']);
  // The compare groups as CSV: the CLI's compare_families.csv, whole (the demo runs have one host and one allocator).
  const {csv} = await download(page, '[data-panel=compare-families]');
  const expected = readFileSync(join(cli(['diff', join(demo, 'tf_fixed'), join(demo, 'tf_leak')], 'diff-csv', '--csv'), 'compare_families.csv'), 'utf8');
  assert.ok(expected.startsWith('run_a,run_b,host_a,host_b,allocator_a,allocator_b,op,') && expected.split('\r\n').length > 3, expected);
  assert.equal(csv, expected);
  await page.waitForSelector('[data-chart=compare-timeline][data-drawn=ab] canvas', {timeout: 60_000});
  // Swapped, the inlined comparison the other way round: the leak is fixed.
  await page.click('button[data-action=swap]');
  await page.waitForFunction(() => document.querySelector('[data-table=compare-families] tbody tr:first-child td')?.textContent === 'fixed');
  assert.equal(await page.$('.lf-compare .lf-regression'), null);
  clean(seen);
  await page.close();
});

test('an op named with HTML stays text, and its CSV cell cannot run as a formula', async () => {
  const {page, seen} = await open(cli(['report', logdir], 'evil.html'));
  await page.waitForSelector('[data-panel=families] tbody tr');
  const families = await page.$$eval('[data-panel=families] tbody tr td:nth-child(2)', (tds) => tds.map((td) => td.textContent));
  assert.ok(families.includes(`${FORMULA}${XSS} [256,1024] output`), JSON.stringify(families));
  assert.equal(await page.$$eval('img', (imgs) => imgs.length), 0, 'no <img> element was created');

  // The whole table, every page, as CSV: the same bytes as the CLI's CSV rows of this run, host and allocator.
  const where = [runName(logdir, 'evil'), 'evil', 'GPU_0_bfc'];
  const tables = cli(['report', logdir], 'evil-csv', '--csv');
  const groups = await download(page, '[data-panel=families]');
  assert.ok(groups.name.endsWith('.csv'), groups.name);
  assert.ok(groups.csv.includes(`"'${FORMULA.replace(/"/g, '""')}${XSS}"`), groups.csv);
  assert.ok(!/(^|,)"?[=+@]/m.test(groups.csv), 'no cell starts a formula');
  const cliGroups = cliRows(join(tables, 'families.csv'), where);
  assert.ok(cliGroups.header.startsWith('run,host,allocator,family,op,') && cliGroups.header.includes(',bytes_per_step,'), cliGroups.header);
  // The family's keys are columns of both, as the report's JSON has them.
  for (const key of ['label', 'num_shapes', 'latest_shape', 'onset_step', 'growth_steps', 'regrown']) assert.ok(cliGroups.header.split(',').includes(key), key);
  assert.ok(cliGroups.lines.length >= 2, 'the leak and the cache entries');
  assert.equal(groups.csv, [cliGroups.header, ...cliGroups.lines, ''].join('\r\n'));

  const breakdown = await download(page, '[data-panel=breakdown]');
  const cliBreakdown = cliRows(join(tables, 'peak_breakdown.csv'), where);
  assert.ok(cliBreakdown.lines.length >= 2, 'buffers and stack or before the window');
  assert.equal(breakdown.csv, [cliBreakdown.header, ...cliBreakdown.lines, ''].join('\r\n'));

  // Every buffer of the allocator (no group selected, the whole window), largest first in both.
  const buffers = await download(page, '[data-panel=lifetimes]');
  const total = await page.$eval('[data-panel=lifetimes] .lf-pager [role=status]', (e) => Number((e.textContent ?? '').split(' of ')[1].replace(/\D/g, '')));
  assert.ok(total > 25, 'the buffers table has more than one page');
  const cliBuffers = cliRows(join(tables, 'buffers.csv'), where);
  assert.equal(cliBuffers.lines.length, total, 'every buffer, not a page');
  assert.equal(buffers.csv, [cliBuffers.header, ...cliBuffers.lines, ''].join('\r\n'));
  clean(seen);
  await page.close();
});

// A pod whose page would be twice its budget or more (each allocator inlines at most 50,000 buffers, so
// the profiles grow with the budget): written near the budget, it must open. The budget is
// LEAKFINDER_HTML_BUDGET_MB (default 12 MB; at 100, the CLI's default, it takes a few minutes to build).
const BUDGET_MB = Number(process.env.LEAKFINDER_HTML_BUDGET_MB || 12);
const BUILD_POD = `
import sys
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
builders = {}
for h in range(8):
    builders[f"host{h}"], _ = synthesize_training(
        num_events=${Math.round(BUDGET_MB * 3000)}, steps=10, allocators=("GPU_0_bfc", "GPU_1_bfc"), leak_bytes_per_step=(1 << 20) * (h % 2), hostname=f"host{h}", seed=h
    )
write_session(sys.argv[1], "pod", "2026_01_01_00_00_00", builders)
`;

test(`a page at its budget (${BUDGET_MB} MB) opens, with the overview, the worst hosts and what it left out`, async (t) => {
  const pod = makeLogdir([], BUILD_POD);
  try {
    const file = cli(['report', pod, '--no-cache', '--html-max-mb', String(BUDGET_MB)], 'budget.html');
    const size = statSync(file).size;
    assert.ok(size <= BUDGET_MB * 1e6 && size > 0.9 * BUDGET_MB * 1e6, `${size} bytes`);
    const html = readFileSync(file, 'utf8');
    const data = JSON.parse(/<script type="application\/json" id="tb-leakfinder-data">(.*?)<\/script>/s.exec(html)[1]);
    const left = Object.keys(data.errors).map((key) => /host=([^\0]*)/.exec(key)[1]);
    assert.ok(left.length > 0 && left.length < 8, JSON.stringify(left));
    const started = Date.now();
    const {page, seen} = await open(file);
    await page.waitForSelector('[data-panel=overview] [data-summary=hosts]');
    const ready = Date.now() - started;
    assert.equal(await text(page, '[data-summary=hosts]'), '4 of 8 hosts leak');
    assert.equal((await page.$$('[data-panel=overview] tbody tr')).length, 16); // a row per host and allocator
    assert.match(await text(page, 'header[data-standalone]'), new RegExp(`${left.length} ${left.length === 1 ? 'host' : 'hosts'} left out to keep the page under ${BUDGET_MB} MB \\(--html-max-mb\\)`));
    await page.click('[data-panel=overview] tbody tr:first-child'); // the worst host: on the page
    await page.waitForSelector('main.lf-root[data-state="ready"] .lf-verdict[data-verdict=leak]');
    await page.waitForSelector('[data-chart=timeline] canvas');
    await page.selectOption('[data-select=host]', left[0]);
    await page.waitForSelector('main.lf-root[data-state="error"]');
    assert.match(await text(page, '.lf-notice-error'), new RegExp(`host '${left[0]}' .* is left out of this standalone report .* raise --html-max-mb`));
    clean(seen);
    t.diagnostic(`${size} bytes (budget ${BUDGET_MB} MB), ${8 - left.length} of 8 hosts inlined, overview shown ${ready} ms after opening`);
    await page.close();
  } finally {
    rmSync(pod, {recursive: true, force: true});
  }
});
