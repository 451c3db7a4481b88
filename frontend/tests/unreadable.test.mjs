// Browser tests of a logdir where one file cannot be read: two good PyTorch
// memory snapshots and a third cut to half its bytes, as a job killed
// mid-write leaves it (tests/support/unreadable.py), and a TensorBoard run
// of 4 captures whose first is cut short. The bad file is said in its place
// (truncated, with its size, and what to do) and in the run list, never
// offered under Compare; comparing a good run with it names it, not the good
// one; every other run opens as usual. Debian chromium (playwright-core)
// against a real `tensorboard`.

import assert from 'node:assert/strict';
import {readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {openLeaks, startSuite, watch} from './harness.mjs';

const BUILD = `
import pathlib, sys
from tb_leakfinder.testing.history_runs import slow_leak_run
from tests.support.unreadable import one_cut_short
logdir = pathlib.Path(sys.argv[1])
one_cut_short(logdir, 'torch_snapshot')
job = slow_leak_run(logdir, 'job', captures=4)
first = next((job.run_dir / 'plugins' / 'profile' / job.sessions[0]).glob('*.xplane.pb'))
first.write_bytes(first.read_bytes()[:200])
`;
const BROKEN = 'broken/memory_snapshot';
const LEAK = 'leak/memory_snapshot';

let suite;
before(async () => {
  suite = await startSuite([], BUILD);
});
after(() => suite?.stop());

const frameOf = async (page) => (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000})).contentFrame();
const runOptions = (frame) => frame.$$eval('[data-select=run] option', (os) => os.map((o) => [o.value, o.textContent]));
const jobSessions = () => readdirSync(join(suite.logdir, 'job', 'plugins', 'profile')).sort().map((s) => `job/${s}`);

test('the cut snapshot is said in its place, and the run list marks it', async () => {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  await page.goto(`${suite.tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(BROKEN)}`);
  const frame = await frameOf(page);
  const shown = await frame.waitForSelector(`[data-unreadable="${BROKEN}"]`, {timeout: 90_000});
  const text = await shown.textContent();
  assert.match(text, /Could not read the profile of run broken\/memory_snapshot/);
  assert.ok(text.includes(join(suite.logdir, 'broken', 'memory_snapshot.pickle')), text);
  assert.match(text, /not a readable PyTorch memory snapshot/);
  // Cut short: it says so, with its bytes, and what to do.
  const size = statSync(join(suite.logdir, 'broken', 'memory_snapshot.pickle')).size;
  assert.ok(text.includes(`truncated (${size.toLocaleString('en-US')} bytes: the pickle ends before its last opcode)`), text);
  assert.match(text, /wait until it is whole; else capture it again/);
  assert.match(text, /The other runs are analysed as usual/);
  // Nothing was read: no empty allocator or module selector is shown.
  assert.deepEqual(await frame.$$eval('[data-select=allocator], [data-select=module]', (ss) => ss.map((s) => s.closest('label').hidden)), [true, true]);
  assert.equal(await frame.$eval('main.lf-root', (e) => e.dataset.state), 'error');
  const options = new Map(await runOptions(frame));
  assert.equal(options.get(BROKEN), `${BROKEN} (not readable)`);
  assert.ok(options.has(LEAK) && options.has('clean/memory_snapshot'), [...options.keys()].join(', '));
  // Compare offers the readable runs only.
  const offered = await frame.$$eval('[data-select=compare] option', (os) => os.map((o) => o.value));
  assert.ok(!offered.includes(BROKEN) && offered.includes(LEAK), offered.join(', '));
  // Another run opens as usual from the same page.
  await frame.selectOption('[data-select=run]', LEAK);
  await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 90_000});
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  // The cut snapshot's report was refused; so may be the cut capture's, asked by the run list's background scan.
  assert.match(seen.failures[0], /^422 .*report\?run=broken%2Fmemory_snapshot/);
  const cut = encodeURIComponent(jobSessions()[0]);
  assert.ok(seen.failures.slice(1).every((f) => f.startsWith('422 ') && f.includes(`report?run=${cut}`)), seen.failures.join('\n'));
  assert.deepEqual([seen.errors, seen.dialogs], [[], []]);
  await page.close();
});

test('opened on no run, the tab passes over the unreadable ones to the first run that leaks', async () => {
  // In the list's order: broken/…, clean/…, job/<first> (cut short), job/<second> (leaks), …
  const [cut, leaking] = jobSessions();
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  const frame = await openLeaks(page, suite.tb.base, '');
  assert.equal(await frame.$eval('[data-select=run]', (s) => s.value), leaking);
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  const options = new Map(await runOptions(frame));
  assert.equal(options.get(BROKEN), `${BROKEN} (not readable)`);
  assert.equal(options.get(cut), `${cut} (not readable)`);
  assert.equal(options.get('clean/memory_snapshot'), 'clean/memory_snapshot (no leak)');
  assert.deepEqual([seen.errors, seen.dialogs], [[], []]);
  // A new page asks the run list afresh: the server names the file it could not read.
  const again = await suite.browser.context.newPage();
  await openLeaks(again, suite.tb.base, LEAK);
  const listed = await again.evaluate(async (base) => (await (await fetch(`${base}data/plugin/leakfinder/runs`)).json()).runs, suite.tb.base);
  const broken = listed.find((r) => r.run === BROKEN);
  assert.equal(broken.errors.length, 1);
  assert.equal(broken.errors[0].file, join(suite.logdir, 'broken', 'memory_snapshot.pickle'));
  assert.ok(listed.filter((r) => r.run !== BROKEN && !r.run.startsWith('job/')).every((r) => r.errors.length === 0));
  await page.close();
  await again.close();
});

test('the run history lists the capture it could not read', async () => {
  const [first, ...rest] = jobSessions();
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  const frame = await openLeaks(page, suite.tb.base, rest[0]);
  await frame.waitForSelector('[data-panel=history] [data-history]', {timeout: 90_000});
  const reason = await frame.$eval('[data-panel=history] [data-history]', (e) => e.textContent ?? '');
  assert.match(reason, /\(1 of 4 captures could not be read\)/);
  const items = await frame.$$eval('[data-panel=history] [data-unreadable=history] li', (lis) => lis.map((li) => [li.dataset.capture, li.textContent]));
  assert.equal(items.length, 1);
  assert.equal(items[0][0], first);
  assert.match(items[0][1], /host0\.xplane\.pb: incomplete or corrupt profile/);
  // The tab's background scan of the runs not opened may reach the two unreadable ones: their 422s are expected.
  const scanned = [BROKEN, first].map((run) => `report?run=${encodeURIComponent(run)}`);
  const unexpected = seen.failures.filter((f) => !(f.startsWith('422 ') && scanned.some((r) => f.includes(r))));
  assert.deepEqual([unexpected, seen.errors, seen.dialogs], [[], [], []]);
  await page.close();
});

test('comparing a good run with the cut one names the cut one, B', async () => {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  await page.goto(`${suite.tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(LEAK)}&p.leakfinder.compare=${encodeURIComponent(BROKEN)}`);
  const frame = await frameOf(page);
  const shown = await frame.waitForSelector(`[data-unreadable="${BROKEN}"]`, {timeout: 90_000});
  const text = await shown.textContent();
  assert.match(text, /^Could not read the profile of run broken\/memory_snapshot: /);
  assert.doesNotMatch(text, /run leak\/memory_snapshot/);
  assert.match(text, /truncated \(/);
  assert.deepEqual([seen.errors, seen.dialogs], [[], []]);
  await page.close();
});

test('a cut XSpace capture says how many bytes it has of at least how many', async () => {
  const [cut] = jobSessions();
  const page = await suite.browser.context.newPage();
  await page.goto(`${suite.tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(cut)}`);
  const frame = await frameOf(page);
  const text = await (await frame.waitForSelector(`[data-unreadable="${cut}"]`, {timeout: 90_000})).textContent();
  // slow_leak_run's first capture, cut to its first 200 bytes, inside its first plane.
  assert.match(text, /not a readable XSpace \(truncated \(200 of at least [\d,]+ bytes: its last plane runs past the end of the file\)/);
  assert.doesNotMatch(text, /length past the end of its message/);
  await page.close();
});
