// Browser tests of the Leaks tab: Debian chromium (playwright-core) against a
// real `tensorboard` process over the demo captures and a profile built here.

import assert from 'node:assert/strict';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {openLeaks, runName, startSuite, watch} from './harness.mjs';

const XSS = '<img src=x onerror=alert(1)>';
// A small training profile whose leaking op is named with HTML.
const BUILD_XSS_PROFILE = `
import sys
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
builder, _ = synthesize_training(num_events=3000, steps=12, allocators=("GPU_0_bfc",), cache_entries=2, leak_op=${JSON.stringify(XSS)}, leak_shape="[64,1024]")
write_session(sys.argv[1], "xss", "2026_01_01_00_00_00", {"host0": builder})
# A profile cut short: the plugin must answer with an error that names it. Named to sort
# last (the tab's search for a run that ran out of memory, else leaks, meets it last).
import os
folder = os.path.join(sys.argv[1], "zz_corrupt", "plugins", "profile", "2026_01_01_00_00_00")
os.makedirs(folder)
with open(os.path.join(folder, "host0.xplane.pb"), "wb") as f:
    f.write(builder.to_bytes()[:5000])
# Two hosts that leak different ops (sorted last too).
hosts = {}
for host, op in (("host0", "LeakOnHost0"), ("host1", "LeakOnHost1")):
    hosts[host], _ = synthesize_training(num_events=2000, steps=10, allocators=("GPU_0_bfc",), cache_entries=2, leak_op=op, hostname=host)
write_session(sys.argv[1], "zz_multihost", "2026_01_01_00_00_00", hosts)
`;

let tb;
let browser;
let logdir;
const pages = [];

let suite;
before(async () => {
  suite = await startSuite(['tf_leak', 'tf_fixed', 'jax_liveout', 'jax_clean'], BUILD_XSS_PROFILE);
  ({tb, browser, logdir} = suite);
});
after(() => suite?.stop());

async function open(run) {
  const page = await browser.context.newPage();
  const seen = watch(page);
  pages.push(seen);
  const frame = await openLeaks(page, tb.base, run);
  return {page, frame, seen};
}

const text = (frame, selector) => frame.$eval(selector, (e) => e.textContent ?? '');

test('the leak run shows the verdict "leak" naming the op and its bytes per step', async () => {
  const {page, frame} = await open(runName(logdir, 'tf_leak'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  const banner = await text(frame, '.lf-verdict');
  assert.match(banner, /^Leak/);
  assert.match(banner, /\+\d+(\.\d+)? KiB per step from Mul \[128,1024\]/);
  // The top op family is the leaking op's output, growing step after step from the first.
  const top = await frame.$$eval('[data-panel=families] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  // Where is empty: TensorFlow's capture has no Python frames (the hint above the table says how to get them).
  assert.deepEqual(top.slice(0, 7), ['growing', 'Mul [128,1024] output', 'float', '', '1', 'from step 0', '25']);
  // Tensor bytes (25 float [128,1024] tensors, 512 KiB each), with the allocator's chunks beside them; one rate.
  assert.deepEqual(top.slice(7, 9), ['12.5 MiB (12.6 MiB)', '+512 KiB']);
  // Charts drew from the server's data.
  await frame.waitForSelector('[data-chart=timeline] canvas');
  assert.match(await text(frame, '[data-panel=timeline] .lf-chart-note'), /memory events, drawn as/);
  await frame.waitForSelector('[data-chart=lifetimes][data-drawn]');
  // For a look after a CI run (docs/screenshot-leaks.png is made by dev/shot.mjs).
  await page.screenshot({path: join(process.env.SCREENSHOT_DIR ?? tmpdir(), 'leakfinder-leak-run.png'), fullPage: true});
});

test('opened without a run, the tab shows a run that leaks', async () => {
  const {frame} = await open('');
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  const label = await frame.$eval('[data-select=run]', (s) => s.selectedOptions[0].textContent);
  assert.match(label, /\(leak\)$/);
});

test('the fixed run shows "no leak"', async () => {
  const {frame} = await open(runName(logdir, 'tf_fixed'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'no_leak');
  assert.match(await text(frame, '.lf-verdict-label'), /^No leak$/);
});

test('clicking the top never-freed family highlights its buffers on the lifetime chart and the timeline', async () => {
  const {frame} = await open(runName(logdir, 'tf_leak'));
  const row = await frame.waitForSelector('[data-panel=families] tbody tr:first-child');
  await frame.waitForSelector('[data-chart=timeline] canvas');
  const key = await row.getAttribute('data-key');
  const count = Number((await row.$$eval('td', (tds) => tds[6].textContent)).replace(/,/g, ''));
  await row.click();
  assert.equal(await row.getAttribute('aria-selected'), 'true');
  const chart = await frame.waitForSelector(`[data-chart=lifetimes][data-highlight-family="${key}"]`);
  assert.equal(Number(await chart.getAttribute('data-highlighted')), count);
  await frame.waitForSelector(`[data-chart=timeline][data-marks="${count}"]`);
  // ...and drawn: the timeline's canvas now holds the highlight colour (#f9ab00).
  const highlighted = (chart = 'timeline') =>
    frame.$eval(`[data-chart=${chart}] canvas`, (c) => {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < px.length; i += 4) if (px[i] > 235 && px[i + 1] > 160 && px[i + 1] < 185 && px[i + 2] < 30) n++;
      return n;
    });
  assert.ok((await highlighted()) > 100, 'the group is drawn on the timeline');
  assert.ok((await highlighted('lifetimes')) > 100, 'its buffers are drawn in the highlight colour');
  assert.match(await text(frame, '[data-panel=lifetimes] .lf-chart-note'), new RegExp(`Highlighted: ${count} never-freed buffers of the family Mul \\[128,1024\\] output\\.$`));
  // The buffers table is filtered to that group too.
  await frame.waitForFunction(
    (n) => document.querySelector('[data-panel=lifetimes] .lf-pager [role=status]')?.textContent?.endsWith(`of ${n}`),
    count,
  );
  // From the keyboard: Enter on the focused row deselects it.
  await row.focus();
  await row.press('Enter');
  await frame.waitForSelector('[data-chart=lifetimes][data-highlight-family=""]');
  // Sorting from the keyboard: Enter on a column header.
  const header = await frame.$('[data-panel=families] th button[data-sort=requested_bytes]');
  await header.focus();
  await header.press('Enter');
  assert.equal(await frame.$eval('[data-panel=families] th:has(button[data-sort=requested_bytes])', (th) => th.getAttribute('aria-sort')), 'descending');
  await header.press('Enter');
  assert.equal(await frame.$eval('[data-panel=families] th:has(button[data-sort=requested_bytes])', (th) => th.getAttribute('aria-sort')), 'ascending');
  // The tensor bytes, the allocator's chunks beside them where they differ.
  const sizes = await frame.$$eval('[data-panel=families] tbody tr td:nth-child(8)', (tds) => tds.map((td) => td.textContent));
  assert.equal(sizes[sizes.length - 1], '12.5 MiB (12.6 MiB)', `largest last when ascending: ${sizes}`);
});

test('the static panel shows the live-out activation of the JAX run', async () => {
  const {frame} = await open(runName(logdir, 'jax_liveout'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'inconclusive');
  assert.ok(await frame.$('[data-empty=no-memory-events]'), 'explains that the run has no memory events');
  assert.match(await text(frame, '[data-empty=no-memory-events]'), /TF_CPU_ALLOCATOR_USE_BFC=true/);
  const modules = await frame.$$eval('[data-select=module] option', (os) => os.map((o) => o.value).filter(Boolean));
  assert.ok(modules.length > 0, 'the JAX run lists its compiled modules');
  await frame.waitForSelector('[data-panel=static] [data-table=whole-program] tbody tr');
  const first = await frame.$$eval('[data-panel=static] [data-table=whole-program] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  assert.match(first[1], /relu/, 'the largest whole-program buffer is the relu activation');
  assert.equal(first[3], 'f32[256,3072]');
  assert.equal(first[5], 'live-out');
  assert.match(await text(frame, '[data-panel=static] [data-list=actionable]'), /live-out.*f32\[256,3072\].*returned by/);
  await frame.waitForSelector('[data-chart=static-blocks][data-drawn]');
  await frame.waitForSelector('[data-chart=static-heap][data-ticks] canvas');
  // Program order is whole positions: zoomed in to about two of them, the axis ticks integers only, each once.
  const isWholeAndOnce = (ticks) => ticks.every((t) => /^\d+$/.test(t)) && new Set(ticks).size === ticks.length;
  const ticks = async () => (await frame.$eval('[data-chart=static-heap]', (e) => e.dataset.ticks)).split(' ');
  assert.ok(isWholeAndOnce(await ticks()), (await ticks()).join(' '));
  const over = await frame.$('[data-chart=static-heap] .u-over');
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  const page = frame.page();
  await page.mouse.move(box.x + box.width * 0.4, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.47, box.y + box.height / 2, {steps: 4});
  await page.mouse.up();
  await frame.waitForFunction(() => (document.querySelector('[data-chart=static-heap]')?.dataset.ticks ?? '').split(' ').length <= 4);
  assert.ok(isWholeAndOnce(await ticks()), `zoomed: ${(await ticks()).join(' ')}`);
  // The Memory Viewer link names the same run and module.
  const viewer = new URL(await frame.$eval('.lf-links a:nth-child(2)', (a) => a.href));
  assert.equal(viewer.searchParams.get('tag'), 'memory_viewer');
  assert.equal(viewer.searchParams.get('module_name'), modules[0]);
});

test('an op name made of HTML is shown as text and runs no script', async () => {
  const {frame, seen} = await open(runName(logdir, 'xss'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  const reason = await text(frame, '.lf-verdict-reason');
  assert.ok(reason.includes(XSS), reason);
  const families = await frame.$$eval('[data-panel=families] tbody tr td:nth-child(2)', (tds) => tds.map((td) => td.textContent));
  assert.ok(families.includes(`${XSS} [64,1024] output`), `the families show the op name as text: ${JSON.stringify(families)}`);
  await frame.waitForSelector('[data-chart=lifetimes][data-drawn]');
  assert.equal(await frame.$$eval('img', (imgs) => imgs.length), 0, 'no <img> element was created');
  assert.deepEqual(seen.dialogs, []);
  assert.deepEqual(seen.errors, []);
});

test('follows the dark theme of the page', async () => {
  const page = await browser.context.newPage();
  pages.push(watch(page));
  await page.emulateMedia({colorScheme: 'dark'});
  const frame = await openLeaks(page, tb.base, runName(logdir, 'tf_leak'));
  await frame.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  const bg = await frame.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, 'rgb(32, 33, 36)');
  // TensorBoard's own dark-mode toggle wins over the browser's preference.
  await page.click('app-header-dark-mode-toggle button');
  await page.click('[role=menuitem]:has-text("Light")');
  await frame.waitForFunction(() => document.documentElement.dataset.theme === 'light');
});

test("TensorBoard's reload button reloads the tab's data", async () => {
  const {page, frame, seen} = await open(runName(logdir, 'tf_leak'));
  // Select a group first: a reload whose data did not change keeps the view as it is.
  const row = await frame.waitForSelector('[data-panel=families] tbody tr:first-child');
  await row.click();
  await frame.waitForSelector('[data-chart=lifetimes][data-highlight-family="0"]');
  const before = seen.pluginRequests.filter((u) => u.includes('/report?')).length;
  const reloaded = page.waitForResponse((r) => r.url().includes('/data/plugin/leakfinder/report?'), {timeout: 30_000});
  await page.click('app-header-reload button');
  await reloaded;
  const afterCount = seen.pluginRequests.filter((u) => u.includes('/report?')).length;
  assert.ok(afterCount > before, `a new report request after reload (${before} -> ${afterCount})`);
  assert.equal(await row.getAttribute('aria-selected'), 'true');
  assert.equal(await frame.$eval('main.lf-root', (e) => e.dataset.state), 'ready');
});

test('hovering a buffer shows its op, shape, dtype, size, times and step', async () => {
  const {page, frame} = await open(runName(logdir, 'tf_leak'));
  await frame.waitForSelector('[data-chart=lifetimes][data-drawn]');
  const over = await frame.$('[data-chart=lifetimes] .u-over');
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  const tooltip = await frame.$('[data-chart=lifetimes] .lf-tooltip');
  let shown = false;
  // Sweep the plot until the pointer is over a buffer.
  for (let fy = 0.95; fy > 0.05 && !shown; fy -= 0.05) {
    for (let fx = 0.9; fx > 0.1 && !shown; fx -= 0.1) {
      await page.mouse.move(box.x + box.width * fx, box.y + box.height * fy);
      shown = await tooltip.evaluate((e) => !e.hidden);
    }
  }
  assert.ok(shown, 'a tooltip appears over some buffer');
  const labels = await tooltip.$$eval('dt', (dts) => dts.map((d) => d.textContent));
  for (const label of ['shape', 'dtype', 'size', 'allocated', 'freed']) assert.ok(labels.includes(label), `tooltip has ${label}: ${labels}`);
  assert.match(await tooltip.$eval('dd:nth-of-type(6)', (d) => d.textContent), /step \d+|before the window/);
});

test('dragging across the timeline zooms both charts; Reset zoom restores the window', async () => {
  const {page, frame} = await open(runName(logdir, 'tf_leak'));
  await frame.waitForSelector('[data-chart=timeline] canvas');
  const over = await frame.$('[data-chart=timeline] .u-over');
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  const zoomed = page.waitForResponse((r) => r.url().includes('/timeline?') && r.url().includes('start_ps='));
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, {steps: 5});
  await page.mouse.up();
  await zoomed;
  await frame.waitForFunction(() => /between .* and /.test(document.querySelector('[data-panel=lifetimes] .lf-chart-note')?.textContent ?? ''));
  const reset = await frame.$('[data-panel=timeline] button');
  assert.equal(await reset.isDisabled(), false);
  await reset.click();
  await frame.waitForFunction(() => /^Showing all/.test(document.querySelector('[data-panel=lifetimes] .lf-chart-note')?.textContent ?? ''));
  assert.equal(await reset.isDisabled(), true);
});

test('the chosen run is kept in the URL, and the link reopens it', async () => {
  const page = await browser.context.newPage();
  pages.push(watch(page));
  const frame = await openLeaks(page, tb.base, runName(logdir, 'tf_leak'));
  const fixed = runName(logdir, 'tf_fixed');
  await frame.selectOption('[data-select=run]', fixed);
  await frame.waitForSelector('.lf-verdict[data-verdict=no_leak]');
  const url = page.url();
  assert.ok(url.includes(`p.leakfinder.run=${encodeURIComponent(fixed)}`), url);
  const again = await browser.context.newPage();
  pages.push(watch(again));
  await again.goto(url);
  const frame2 = await (await again.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]')).contentFrame();
  await frame2.waitForSelector('main.lf-root[data-state="ready"]');
  assert.equal(await frame2.$eval('[data-select=run]', (s) => s.value), fixed);
  assert.equal(await frame2.$eval('.lf-verdict', (e) => e.dataset.verdict), 'no_leak');
});

test('links open the same run in XProf (Memory Profile)', async () => {
  const {page, frame} = await open(runName(logdir, 'tf_leak'));
  // Let the tab finish loading before leaving it.
  await frame.waitForSelector('[data-chart=lifetimes][data-drawn]');
  await frame.waitForSelector('[data-chart=timeline] canvas');
  const href = await frame.$eval('.lf-links a', (a) => a.href);
  const url = new URL(href);
  assert.equal(url.hash, '#profile');
  assert.equal(url.searchParams.get('tag'), 'memory_profile');
  assert.equal(url.searchParams.get('run'), runName(logdir, 'tf_leak'));
  assert.ok(url.pathname.startsWith('/tb'), 'keeps the path prefix');
  await frame.click('.lf-links a');
  await page.waitForURL(/tag=memory_profile/);
  await page.waitForSelector('iframe[src*="name=profile"], iframe[src*="plugin_entry.html?name=profile"]', {timeout: 30_000}).catch(() => null);
});

test('the host selector switches between the hosts of a run', async () => {
  const {frame} = await open(runName(logdir, 'zz_multihost'));
  // '' is the pod overview, which a run of several hosts opens on.
  assert.deepEqual(await frame.$$eval('[data-select=host] option', (os) => os.map((o) => o.value)), ['', 'host0', 'host1']);
  await frame.selectOption('[data-select=host]', 'host0');
  await frame.waitForFunction(() => /LeakOnHost0/.test(document.querySelector('.lf-verdict-reason')?.textContent ?? ''));
  await frame.selectOption('[data-select=host]', 'host1');
  await frame.waitForFunction(() => /LeakOnHost1/.test(document.querySelector('.lf-verdict-reason')?.textContent ?? ''));
  await frame.waitForSelector('main.lf-root[data-state="ready"]');
  await frame.waitForSelector('[data-chart=lifetimes][data-drawn]');
});

test('a profile that cannot be analysed shows the error, naming the file', async () => {
  const page = await browser.context.newPage();
  // Not watched for failures: this run's report answers 4xx on purpose.
  await page.goto(`${tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(runName(logdir, 'zz_corrupt'))}`);
  const frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]')).contentFrame();
  await frame.waitForSelector('main.lf-root[data-state="error"]', {timeout: 60_000});
  assert.match(await text(frame, '.lf-notice-error'), /host0\.xplane\.pb/);
});

test('no request under /data/plugin/leakfinder/ failed', () => {
  // Opened on no run, the tab reads every run it can in its budget, looking for one that ran out of memory before
  // one that leaks: the report of the corrupt run, refused (422), is the only failure that search may meet.
  const failures = pages.flatMap((p) => p.failures).filter((f) => !/^422 .*report\?run=zz_corrupt%2F/.test(f));
  assert.deepEqual(failures, [], `failed plugin requests:\n${failures.join('\n')}`);
  const aborted = pages.flatMap((p) => p.aborted);
  if (aborted.length) console.log(`# requests cancelled by the page itself (not failures):\n# ${aborted.join('\n# ')}`);
  assert.ok(pages.some((p) => p.pluginRequests.length > 0));
});
