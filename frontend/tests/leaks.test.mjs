// Browser tests of the Leaks tab: Debian chromium (playwright-core) against a
// real `tensorboard` process over the demo captures and a profile built here.

import assert from 'node:assert/strict';
import {rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {launchBrowser, makeLogdir, openLeaks, runName, startTensorBoard, watch} from './harness.mjs';

const XSS = '<img src=x onerror=alert(1)>';
// A small training profile whose leaking op is named with HTML.
const BUILD_XSS_PROFILE = `
import sys
from tb_leakfinder.synthetic import synthesize_training, write_session
builder, _ = synthesize_training(num_events=3000, steps=12, allocators=("GPU_0_bfc",), cache_entries=2, leak_op=${JSON.stringify(XSS)}, leak_shape="[64,1024]")
write_session(sys.argv[1], "xss", "2026_01_01_00_00_00", {"host0": builder})
`;

let tb;
let browser;
let logdir;
const pages = [];

before(async () => {
  logdir = makeLogdir(['tf_leak', 'tf_fixed', 'jax_liveout', 'jax_clean'], BUILD_XSS_PROFILE);
  // Under a path prefix, so that the bundle's relative URLs are proven.
  tb = await startTensorBoard(logdir, ['--path_prefix', '/tb']);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await tb?.stop();
  if (logdir) rmSync(logdir, {recursive: true, force: true});
});

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
  // The top suspect is the leaking op, growing step after step.
  const top = await frame.$$eval('[data-panel=suspects] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  assert.equal(top[0], 'growing');
  assert.equal(top[1], 'Mul');
  assert.equal(top[2], '[128,1024]');
  // Charts drew from the server's data.
  await frame.waitForSelector('[data-chart=timeline] canvas');
  assert.match(await text(frame, '[data-panel=timeline] .lf-chart-note'), /memory events, drawn as/);
  await frame.waitForSelector('[data-chart=lifetimes][data-drawn]');
  // For a look after a CI run (docs/screenshot-leaks.png is made by dev/shot.mjs).
  await page.screenshot({path: join(process.env.SCREENSHOT_DIR ?? tmpdir(), 'leakfinder-leak-run.png'), fullPage: true});
});

test('the fixed run shows "no leak"', async () => {
  const {frame} = await open(runName(logdir, 'tf_fixed'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'no_leak');
  assert.match(await text(frame, '.lf-verdict-label'), /^No leak$/);
});

test('clicking the top suspect highlights its buffers on the lifetime chart and the timeline', async () => {
  const {frame} = await open(runName(logdir, 'tf_leak'));
  const row = await frame.waitForSelector('[data-panel=suspects] tbody tr:first-child');
  const key = await row.getAttribute('data-key');
  const count = Number((await row.$$eval('td', (tds) => tds[5].textContent)).replace(/,/g, ''));
  await row.click();
  assert.equal(await row.getAttribute('aria-selected'), 'true');
  const chart = await frame.waitForSelector(`[data-chart=lifetimes][data-highlight-group="${key}"]`);
  assert.equal(Number(await chart.getAttribute('data-highlighted')), count);
  await frame.waitForSelector(`[data-chart=timeline][data-marks="${count}"]`);
  assert.match(await text(frame, '[data-panel=lifetimes] .lf-chart-note'), new RegExp(`Highlighted: ${count} buffers of suspect #${key} \\(Mul \\[128,1024\\] output\\)`));
  // The buffers table is filtered to that group too.
  await frame.waitForFunction(
    (n) => document.querySelector('[data-panel=lifetimes] .lf-pager [role=status]')?.textContent?.endsWith(`of ${n}`),
    count,
  );
  // From the keyboard: Enter on the focused row deselects it.
  await row.focus();
  await row.press('Enter');
  await frame.waitForSelector('[data-chart=lifetimes][data-highlight-group=""]');
});

test('the static panel shows the live-out activation of the JAX run', async (t) => {
  const {frame} = await open(runName(logdir, 'jax_liveout'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'inconclusive');
  assert.ok(await frame.$('[data-empty=no-memory-events]'), 'explains that the run has no memory events');
  assert.match(await text(frame, '[data-empty=no-memory-events]'), /TF_CPU_ALLOCATOR_USE_BFC=true/);
  const modules = await frame.$$eval('[data-select=module] option', (os) => os.map((o) => o.value).filter(Boolean));
  if (!modules.length) {
    t.skip('the report of jax_liveout lists no modules yet');
    return;
  }
  await frame.waitForSelector('[data-panel=static] [data-table=whole-program] tbody tr, [data-panel=static] .lf-notice-error');
  const error = await frame.$('[data-panel=static] .lf-notice-error');
  if (error && /HTTP 404|not found/i.test(await error.textContent())) {
    t.skip(`the plugin does not serve the module route yet: ${await error.textContent()}`);
    return;
  }
  const first = await frame.$$eval('[data-panel=static] [data-table=whole-program] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  assert.match(first[1], /relu/, 'the largest whole-program buffer is the relu activation');
  assert.equal(first[3], 'f32[256,3072]');
  assert.equal(first[5], 'live-out');
  assert.match(await text(frame, '[data-panel=static] [data-list=actionable]'), /live-out.*f32\[256,3072\].*returned by/);
});

test('an op name made of HTML is shown as text and runs no script', async () => {
  const {frame, seen} = await open(runName(logdir, 'xss'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  const reason = await text(frame, '.lf-verdict-reason');
  assert.ok(reason.includes(XSS), reason);
  const ops = await frame.$$eval('[data-panel=suspects] tbody tr td:nth-child(2)', (tds) => tds.map((td) => td.textContent));
  assert.ok(ops.includes(XSS), `suspects show the op name as text: ${JSON.stringify(ops)}`);
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
});

test("TensorBoard's reload button reloads the tab's data", async () => {
  const {page, frame, seen} = await open(runName(logdir, 'tf_leak'));
  // Select a suspect first: a reload whose data did not change keeps the view as it is.
  const row = await frame.waitForSelector('[data-panel=suspects] tbody tr:first-child');
  await row.click();
  await frame.waitForSelector('[data-chart=lifetimes][data-highlight-group="0"]');
  const before = seen.pluginRequests.filter((u) => u.includes('/report?')).length;
  const reloaded = page.waitForResponse((r) => r.url().includes('/data/plugin/leakfinder/report?'), {timeout: 30_000});
  await page.click('app-header-reload button');
  await reloaded;
  const afterCount = seen.pluginRequests.filter((u) => u.includes('/report?')).length;
  assert.ok(afterCount > before, `a new report request after reload (${before} -> ${afterCount})`);
  assert.equal(await row.getAttribute('aria-selected'), 'true');
  assert.equal(await frame.$eval('main.lf-root', (e) => e.dataset.state), 'ready');
});

test('no request under /data/plugin/leakfinder/ failed', () => {
  const failures = pages.flatMap((p) => p.failures);
  assert.deepEqual(failures, []);
  assert.ok(pages.some((p) => p.pluginRequests.length > 0));
});
