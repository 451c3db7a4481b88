// Browser tests of the comparison view ("Compare with…"): Debian chromium
// (playwright-core) against a real `tensorboard` process over copies of the
// demo captures.

import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';
import {openLeaks, runName, startSuite, watch} from './harness.mjs';

const XSS = '<img src=x onerror=alert(1)>';
// Two hosts of one run that leak different ops, one of them named with HTML.
const BUILD_TWO_HOSTS = `
import sys
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
hosts = {}
for host, op in (("host0", "LeakOnHost0"), ("host1", ${JSON.stringify(XSS)})):
    hosts[host], _ = synthesize_training(num_events=2000, steps=10, allocators=("GPU_0_bfc",), cache_entries=2, leak_op=op, hostname=host)
write_session(sys.argv[1], "zz_multihost", "2026_01_01_00_00_00", hosts)
`;

let tb;
let browser;
let logdir;
let fixed;
let leak;
const pages = [];

let suite;
before(async () => {
  suite = await startSuite(['tf_leak', 'tf_fixed', 'jax_liveout', 'jax_clean'], BUILD_TWO_HOSTS);
  ({tb, browser, logdir} = suite);
  fixed = runName(logdir, 'tf_fixed');
  leak = runName(logdir, 'tf_leak');
});
after(() => suite?.stop());

async function newPage() {
  const page = await browser.context.newPage();
  pages.push(watch(page));
  return page;
}

/** The plugin frame of a page already on the tab, once it is ready. */
async function leaksFrame(page) {
  const frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000})).contentFrame();
  await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 90_000});
  return frame;
}

const text = (frame, selector) => frame.$eval(selector, (e) => e.textContent ?? '');
const firstRow = (frame) => frame.$$eval('[data-table=compare-families] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
const hashState = (url) => new URLSearchParams(new URL(url).hash.slice(1));

/** Waits for the comparison of runs a and b to be shown, both timelines drawn. */
async function waitForComparison(frame, a, b) {
  await frame.waitForSelector(`.lf-compare[data-run-a="${a}"][data-run-b="${b}"]`, {timeout: 90_000});
  await frame.waitForSelector('main.lf-root[data-state="ready"]');
  await frame.waitForSelector('[data-table=compare-families] tbody tr');
  await frame.waitForSelector('[data-chart=compare-timeline][data-drawn=ab] canvas', {timeout: 60_000});
}

async function expectFixedThenLeak(frame) {
  assert.equal(await frame.$eval('[data-select=run]', (s) => s.value), fixed);
  assert.equal(await frame.$eval('[data-select=compare]', (s) => s.value), leak);
  const [status, family, dtype, kinds, bytesA, bytesB, perStepA, perStepB, onsetB, flag] = await firstRow(frame);
  assert.deepEqual([status, family, dtype], ['new', 'Mul [128,1024] output', 'float']);
  // tf_leak keeps one tensor every step from its first (step 0).
  assert.equal(onsetB, 'from step 0');
  assert.equal(kinds, '— → growing');
  assert.equal(bytesA, '—');
  // 25 float [128,1024] tensors in tensor bytes, as the families table of tf_leak alone says it.
  assert.equal(bytesB, '12.5 MiB');
  assert.equal(perStepA, '—');
  assert.match(perStepB, /^\+5\d\d KiB$/);
  assert.equal(flag, 'new leak');
  // The regression banner lists what B brings.
  assert.equal(await frame.$eval('.lf-regression', (e) => e.dataset.regression), 'true');
  assert.match(await text(frame, '.lf-regression'), /new growing family Mul \[128,1024\] output \(\+5\d\d KiB per step\)/);
  // Both verdicts, each with its reason.
  assert.equal(await frame.$eval('.lf-verdict[data-side=a]', (e) => e.dataset.verdict), 'no_leak');
  assert.equal(await frame.$eval('.lf-verdict[data-side=b]', (e) => e.dataset.verdict), 'leak');
  assert.match(await text(frame, '.lf-verdict[data-side=b] .lf-verdict-reason'), /\+512 KiB per step from Mul \[128,1024\]/);
  // Deltas with their sign, in binary units.
  assert.equal(await text(frame, '[data-delta="Peak heap in use"] .lf-card-value'), '+12.1 MiB');
  // Tensor bytes, as every never-freed figure of the page (the chunks' delta was +12.6 MiB).
  assert.equal(await text(frame, '[data-delta="Never freed"] .lf-card-value'), '+12.5 MiB');
  // The heap's trend is no second rate beside the verdicts': the peak's tooltip, no card of its own.
  assert.equal(await frame.$('[data-delta="Heap at step ends"]'), null);
  assert.match(await frame.$eval('[data-delta="Peak heap in use"] [data-info]', (e) => e.title), /^The heap’s trend at step ends: A 0 B \/ step, B \+516 KiB \/ step; .*Not the leak rate/);
  assert.doesNotMatch(await frame.$eval('[aria-label="Changes from A to B"]', (e) => e.innerText), /\/ step/);
  assert.equal(await text(frame, '[data-delta="Allocations"] .lf-card-value'), '+25');
  assert.match(await text(frame, '[data-delta="Peak heap in use"] .lf-card-detail'), /A 4\.2 MiB → B 16\.4 MiB/);
}

test('A and B are told apart without colour: every line of the chart has its own dash, and the legend draws it', async () => {
  const page = await newPage();
  const frame = await openLeaks(page, tb.base, fixed);
  await frame.selectOption('[data-select=compare]', leak);
  await waitForComparison(frame, fixed, leak);
  const legend = await frame.$$eval('[data-chart=compare-timeline] .u-legend .u-series', (rows) =>
    rows.slice(1).map((r) => {
      const marker = r.querySelector('.u-marker');
      return {label: r.querySelector('.u-label').textContent, dash: marker.dataset.dash, background: getComputedStyle(marker).backgroundImage};
    }),
  );
  assert.deepEqual(
    legend.map((l) => l.label),
    ['A heap in use', 'A never freed', 'B heap in use', 'B never freed'],
  );
  // Four lines, four patterns: A's heap and B's heap (and their never-freed lines) differ in dash, not only in hue.
  assert.equal(new Set(legend.map((l) => l.dash)).size, 4, JSON.stringify(legend));
  const dash = Object.fromEntries(legend.map((l) => [l.label, l.dash]));
  assert.notEqual(dash['A heap in use'], dash['B heap in use']);
  assert.notEqual(dash['A never freed'], dash['B never freed']);
  // A dashed line's marker is drawn dashed (a repeating gradient), the solid one plain.
  for (const l of legend) assert.equal(l.background.startsWith('repeating-linear-gradient'), l.dash !== 'solid', JSON.stringify(l));
});

test('tf_fixed (A) compared with tf_leak (B): a new leak, the regression banner; the link reopens it; swapped, the leak is fixed', async () => {
  const page = await newPage();
  const frame = await openLeaks(page, tb.base, fixed);
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'no_leak');
  assert.equal(await frame.$('.lf-compare'), null);
  assert.equal(await frame.$eval('[data-select=compare]', (s) => s.value), '', 'no comparison by default');
  await frame.selectOption('[data-select=compare]', leak);
  await waitForComparison(frame, fixed, leak);
  await expectFixedThenLeak(frame);
  assert.equal(await frame.$eval('[data-select=compare-host]', (s) => s.value), 'vm');

  // The comparison is in TensorBoard's URL: a new page opened on it shows the same.
  const url = page.url();
  assert.equal(hashState(url).get('p.leakfinder.run'), fixed);
  assert.equal(hashState(url).get('p.leakfinder.compare'), leak);
  const again = await newPage();
  await again.goto(url);
  const frame2 = await leaksFrame(again);
  await waitForComparison(frame2, fixed, leak);
  await expectFixedThenLeak(frame2);

  // Swapped: A leaks, B does not: the group is fixed, and there is no regression.
  await frame.click('[data-action=swap]');
  await waitForComparison(frame, leak, fixed);
  assert.equal(await frame.$eval('[data-select=run]', (s) => s.value), leak);
  assert.equal(await frame.$eval('[data-select=compare]', (s) => s.value), fixed);
  const [status, family, , , , , , , onsetB, flag] = await firstRow(frame);
  assert.deepEqual([status, family, onsetB, flag], ['fixed', 'Mul [128,1024] output', '—', '']);
  assert.equal(await frame.$eval('[data-table=compare-families] tbody tr:first-child td:nth-child(9) span', (e) => e.title), 'in A from step 0');
  assert.equal(await frame.$('.lf-regression'), null, 'no regression banner');
  assert.match(await text(frame, '.lf-compare-ok'), /A's leak is gone in B/);
  assert.equal(await text(frame, '[data-delta="Peak heap in use"] .lf-card-value'), '-12.1 MiB');
  assert.equal(await frame.$eval('[data-delta="Peak heap in use"]', (e) => e.classList.contains('lf-card-good')), true);
  // Beside B's "No leak" no card is red.
  assert.equal((await frame.$$('[aria-label="Changes from A to B"] .lf-card-bad')).length, 0);
  assert.equal(hashState(page.url()).get('p.leakfinder.run'), leak);
  assert.equal(hashState(page.url()).get('p.leakfinder.compare'), fixed);

  // Clearing "Compare with…" returns to the single-run view, and drops it from the URL.
  await frame.selectOption('[data-select=compare]', '');
  await frame.waitForSelector('.lf-view[data-run] [data-panel=families]');
  assert.equal(await frame.$('.lf-compare'), null);
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  assert.equal(await frame.$eval('[data-select=compare-host]', (s) => s.closest('label').hidden), true);
  assert.equal(hashState(page.url()).get('p.leakfinder.compare'), null);
});

test('the same comparison typed by hand in reverse (tf_leak as A) shows "fixed"', async () => {
  const page = await newPage();
  const frame = await openLeaks(page, tb.base, leak);
  await frame.selectOption('[data-select=compare]', fixed);
  await waitForComparison(frame, leak, fixed);
  assert.equal((await firstRow(frame))[0], 'fixed');
  assert.equal(await frame.$('.lf-regression'), null);
});

test('two hosts of one run: host B is chosen next to "Compare with…"; an op named with HTML stays text', async () => {
  const page = await newPage();
  const seen = pages[pages.length - 1];
  const run = runName(logdir, 'zz_multihost');
  const frame = await openLeaks(page, tb.base, run);
  await frame.selectOption('[data-select=compare]', run);
  await frame.waitForSelector(`.lf-compare[data-run-a="${run}"][data-run-b="${run}"]`);
  assert.deepEqual(await frame.$$eval('[data-select=compare-host] option', (os) => os.map((o) => o.value)), ['host0', 'host1']);
  // The host of A is preselected: a host against itself changes nothing.
  assert.equal(await frame.$eval('[data-select=compare-host]', (s) => s.value), 'host0');
  assert.equal(await frame.$('.lf-regression'), null);
  await frame.selectOption('[data-select=compare-host]', 'host1');
  await frame.waitForSelector('.lf-regression');
  await frame.waitForSelector('main.lf-root[data-state="ready"]');
  const statuses = await frame.$$eval('[data-table=compare-families] tbody tr', (trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]));
  assert.deepEqual(statuses.slice(0, 1), [['new', `${XSS} [256,1024] output`]]);
  assert.ok(statuses.some(([status, family]) => status === 'fixed' && family === 'LeakOnHost0 [256,1024] output'), JSON.stringify(statuses));
  assert.ok((await text(frame, '.lf-regression')).includes(XSS));
  assert.equal(hashState(page.url()).get('p.leakfinder.compare_host'), 'host1');
  assert.equal(await frame.$$eval('img', (imgs) => imgs.length), 0, 'no <img> element was created');
  assert.deepEqual(seen.dialogs, []);
});

test("TensorBoard's reload button fetches the comparison again and keeps it", async () => {
  const page = await newPage();
  await page.goto(`${tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(fixed)}&p.leakfinder.compare=${encodeURIComponent(leak)}`);
  const frame = await leaksFrame(page);
  await waitForComparison(frame, fixed, leak);
  const reloaded = page.waitForResponse((r) => r.url().includes('/data/plugin/leakfinder/compare?'), {timeout: 30_000});
  await page.click('app-header-reload button');
  await reloaded;
  await frame.waitForSelector('main.lf-root[data-state="ready"]');
  assert.equal((await firstRow(frame))[0], 'new');
  assert.ok(await frame.$('[data-chart=compare-timeline][data-drawn=ab] canvas'), 'the chart was kept');
});

test('runs with compiled programs show the changes of their modules', async () => {
  const page = await newPage();
  const frame = await openLeaks(page, tb.base, runName(logdir, 'jax_clean'));
  await frame.selectOption('[data-select=compare]', runName(logdir, 'jax_liveout'));
  const rows = await frame.waitForSelector('[data-table=compare-modules] tbody tr');
  assert.ok(rows);
  const table = await text(frame, '[data-table=compare-modules]');
  assert.match(table, /jit_train_step_liveout \(only in B\)/);
  assert.match(table, /live-out: broadcast_maximum_fusion f32\[256,3072\] \(3 MiB\)/);
  // Neither run has memory events: no cards, no timeline, and it says so.
  assert.equal(await frame.$('[data-panel=compare-timeline]'), null);
  assert.match(await text(frame, '.lf-compare'), /Neither run has memory events/);
});

test('comparing with a run that no longer exists shows the server\'s message', async () => {
  const page = await browser.context.newPage();
  // Not watched for failures: this comparison answers 404 on purpose.
  const gone = 'tf_gone/2026_01_01_00_00_00';
  await page.goto(`${tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(fixed)}&p.leakfinder.compare=${encodeURIComponent(gone)}`);
  const frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]')).contentFrame();
  await frame.waitForSelector('main.lf-root[data-state="error"]', {timeout: 90_000});
  assert.match(await text(frame, '.lf-notice-error'), /no run named 'tf_gone\/2026_01_01_00_00_00'/);
  // The selector keeps it, marked, and can clear it.
  assert.match(await frame.$eval('[data-select=compare]', (s) => s.selectedOptions[0].textContent), /\(not found\)$/);
  await frame.selectOption('[data-select=compare]', '');
  await frame.waitForSelector('main.lf-root[data-state="ready"] .lf-verdict[data-verdict=no_leak]');
});

test('no request under /data/plugin/leakfinder/ failed', () => {
  const failures = pages.flatMap((p) => p.failures);
  assert.deepEqual(failures, [], `failed plugin requests:\n${failures.join('\n')}`);
  assert.deepEqual(pages.flatMap((p) => p.errors), [], 'no page errors');
  assert.ok(pages.some((p) => p.pluginRequests.some((u) => u.includes('/compare?'))));
});
