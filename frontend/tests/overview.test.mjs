// Browser tests of the pod overview: a run of several hosts opens on "N of M
// hosts leak" and one row per host and allocator, worst first; a click opens
// that host and allocator; the host selector goes back to the overview; a
// run of one host opens on its report. Debian chromium (playwright-core)
// against a real `tensorboard` with its own cache folder.

import assert from 'node:assert/strict';
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {launchBrowser, makeLogdir, openLeaks, runName, startTensorBoard, watch} from './harness.mjs';

// A pod of 6 hosts, two allocators each: host2 keeps 4 MiB per step, host4
// 1 MiB per step, the others only a bounded cache; host5 was cut mid-write.
const BUILD_POD = `
import sys
from pathlib import Path
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session

leaks = {2: 4 << 20, 4: 1 << 20}
builders = {}
for h in range(6):
    builders[f"host{h}"], _ = synthesize_training(
        num_events=3_000, steps=10, allocators=("GPU_0_bfc", "cpu_bfc"), leak_bytes_per_step=leaks.get(h, 0), hostname=f"host{h}", seed=h
    )
paths = write_session(sys.argv[1], "pod", "2026_01_01_00_00_00", builders)
Path(paths[5]).write_bytes(Path(paths[5]).read_bytes()[:-13])
`;

let logdir;
let cacheDir;
let tb;
let browser;
const seens = [];

before(async () => {
  logdir = makeLogdir(['tf_leak'], BUILD_POD);
  cacheDir = mkdtempSync(join(tmpdir(), 'leakfinder-cache-'));
  tb = await startTensorBoard(logdir, ['--path_prefix', '/tb', '--leakfinder_cache_dir', cacheDir]);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await tb?.stop();
  for (const dir of [logdir, cacheDir]) if (dir) rmSync(dir, {recursive: true, force: true});
  for (const seen of seens) {
    assert.deepEqual(seen.failures, []);
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(seen.dialogs, []);
  }
});

async function open(tbRun) {
  const page = await browser.context.newPage();
  const seen = watch(page);
  seens.push(seen);
  const frame = await openLeaks(page, tb.base, runName(logdir, tbRun));
  return {page, frame, seen};
}

const rows = (frame) =>
  frame.$$eval('[data-panel=overview] tbody tr', (trs) => trs.map((tr) => Array.from(tr.cells, (td) => (td.textContent ?? '').trim())));

test('a run of several hosts opens on the pod overview, worst first', async () => {
  const {page, frame} = await open('pod');
  await frame.waitForSelector('[data-panel=overview] [data-summary=hosts]');
  const answer = await (await fetch(`${tb.base}data/plugin/leakfinder/overview?run=${encodeURIComponent(runName(logdir, 'pod'))}`)).json();
  assert.equal(answer.num_hosts, 6);
  assert.ok(answer.num_leaking_hosts >= 2);
  const n = answer.num_leaking_hosts;
  assert.equal(await frame.$eval('[data-summary=hosts]', (e) => e.textContent), `${n} of 6 hosts ${n === 1 ? 'leaks' : 'leak'}`);
  const shown = await rows(frame);
  // Every row the server sent, in its order: rank, host, allocator.
  assert.deepEqual(
    shown.map((r) => [r[0], r[1], r[2]]),
    answer.rows.map((r, i) => [String(i + 1), r.host, r.allocator ?? '—']),
  );
  assert.deepEqual(shown.slice(0, 2).map((r) => [r[1], r[3]]), [['host2', 'Leak'], ['host4', 'Leak']]);
  assert.match(shown[0][4], /MiB\/step/);
  const broken = shown.find((r) => r[1] === 'host5');
  assert.equal(broken[3], 'Inconclusive (not read)');
  assert.equal(await frame.$eval('[data-select=host]', (s) => s.selectedOptions[0].textContent), 'All hosts (overview)');
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.disabled), true);
  await page.close();
});

test('a click on a row opens that host and allocator; the host selector goes back', async () => {
  const {page, frame} = await open('pod');
  await frame.waitForSelector('[data-panel=overview] tbody tr');
  await frame.click('[data-panel=overview] tbody tr:nth-child(2)'); // host4, its leaking allocator
  await frame.waitForSelector('main.lf-root[data-state="ready"] .lf-verdict');
  assert.equal(await frame.$('[data-panel=overview]'), null);
  assert.equal(await frame.$eval('[data-select=host]', (s) => s.value), 'host4');
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), 'GPU_0_bfc');
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  assert.match(page.url(), /p\.leakfinder\.host=host4/);

  await frame.selectOption('[data-select=host]', '');
  await frame.waitForSelector('[data-panel=overview] [data-summary=hosts]');
  assert.equal((await rows(frame)).length, 11); // 5 readable hosts x 2 allocators + the unreadable one
  await page.close();
});

test("TensorBoard's reload button asks for the overview again and keeps the table as it is", async () => {
  const {page, frame} = await open('pod');
  await frame.waitForSelector('[data-panel=overview] tbody tr');
  await frame.click('[data-panel=overview] th button[data-sort=host]'); // sorted by host now
  const sorted = await rows(frame);
  const hosts = sorted.map((r) => r[1]);
  const ascending = [...hosts].sort();
  assert.ok([ascending, [...ascending].reverse()].some((order) => order.join() === hosts.join()), hosts.join());
  const reloaded = page.waitForResponse((r) => r.url().includes('/data/plugin/leakfinder/overview?'), {timeout: 30_000});
  await page.click('app-header-reload button');
  await reloaded;
  await new Promise((r) => setTimeout(r, 500));
  assert.deepEqual(await rows(frame), sorted); // the same answer: nothing redrawn, the sort kept
  await page.close();
});

test('a run of one host opens on its report, with no overview', async () => {
  const {page, frame} = await open('tf_leak');
  await frame.waitForSelector('.lf-verdict');
  assert.equal(await frame.$('[data-panel=overview]'), null);
  const options = await frame.$$eval('[data-select=host] option', (os) => os.map((o) => o.textContent));
  assert.ok(!options.includes('All hosts (overview)'));
  await page.close();
});
