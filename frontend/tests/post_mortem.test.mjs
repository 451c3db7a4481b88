// Browser tests of the out-of-memory post-mortem and of files without times:
// a PyTorch 2.0 snapshot dumped at an out-of-memory error and its after-run
// twin (tb_leakfinder/testing/torch_snapshot_builder.py's helper_job: every
// weight made through one allocation helper, pytorch_backend.py:190, called
// from three init_weight lines), beside a leaking PyTorch trace listed before
// them, and a JAX device memory profile. The out-of-memory file opens first;
// what it held is split by the line below the helper; compare says B ran out
// of memory; a file of one moment shows no time. Debian chromium
// (playwright-core) against a real `tensorboard`.

import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';
import {openLeaks, startSuite, watch} from './harness.mjs';

const BUILD = `
import pathlib, sys
from tb_leakfinder.testing.torch_snapshot_builder import helper_job
from tb_leakfinder.testing.pprof_builder import PprofBuilder
from tests.unit.read.formats.torch_trace.trace_files import training, write
root = pathlib.Path(sys.argv[1])
(root / 'a_leak').mkdir()
write(root / 'a_leak' / 'worker0_7.1700000000000.pt.trace.json', training())
(root / 'flexgen').mkdir()
helper_job('2.0').write(root / 'flexgen' / 'oom_snapshot.pickle')
helper_job('2.0', out_of_memory=False).write(root / 'flexgen' / 'after_run.pickle')
jax = PprofBuilder()
jax.sample(2 << 20, [('/home/me/train.py', 'make_batch', 12, 14)], device='gpu:0')
(root / 'jax_memory').mkdir()
jax.write(root / 'jax_memory' / 'step_7.pb.gz')
`;
const OOM = 'flexgen/oom_snapshot';
const AFTER = 'flexgen/after_run';
const MIB = 2 ** 20;
// helper_job's 6 layers: per layer 4, 2 and 2 weights of 64 MiB from flex_opt.py:171, :319 and :507.
const HOLDERS = [
  ['flex_opt.py:171 in init_weight', 24],
  ['flex_opt.py:319 in init_weight', 12],
  ['flex_opt.py:507 in init_weight', 12],
  ['flex_opt.py:702 in forward', 1],
];
const TIME_UNIT = /\d ?(ps|ns|µs|ms)\b/;

let suite;
const pages = [];
before(async () => {
  suite = await startSuite([], BUILD);
});
after(() => suite?.stop());

async function open(hash) {
  const page = await suite.browser.context.newPage();
  pages.push(watch(page));
  await page.goto(`${suite.tb.base}#leakfinder${hash}`);
  const frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000})).contentFrame();
  await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 90_000});
  return {page, frame};
}
const text = (frame, selector) => frame.$eval(selector, (e) => e.textContent ?? '');

test('the out-of-memory file opens first, before a run that leaks, and is marked in the run list', async () => {
  const page = await suite.browser.context.newPage();
  pages.push(watch(page));
  const frame = await openLeaks(page, suite.tb.base, '');
  assert.equal(await frame.$eval('[data-select=run]', (s) => s.value), OOM);
  const options = new Map(await frame.$$eval('[data-select=run] option', (os) => os.map((o) => [o.value, o.textContent])));
  assert.equal(options.get(OOM), `${OOM} (ran out of memory)`);
  assert.match(options.get('a_leak'), /\(leak\)$/);
  await page.close();
});

test('what it held is split by the line below the helper, each with its whole stack, the request and what was free', async () => {
  const {page, frame} = await open(`&p.leakfinder.run=${encodeURIComponent(OOM)}`);
  const rows = await frame.$$eval('[data-panel=out-of-memory] [data-holder]', (ds) => ds.map((d) => [d.dataset.holder, d.querySelector('.lf-oom-bytes')?.textContent ?? '']));
  assert.deepEqual(
    rows.map(([where]) => where),
    HOLDERS.map(([where]) => where),
  );
  HOLDERS.forEach(([, count], i) => assert.match(rows[i][1], new RegExp(`· ${count} buffers?$`)));
  await frame.click('[data-holder="flex_opt.py:171 in init_weight"] summary');
  const stack = await frame.$$eval('[data-holder="flex_opt.py:171 in init_weight"] li', (lis) => lis.map((li) => li.textContent));
  assert.deepEqual(stack, ['pytorch_backend.py:190 in allocate', 'flex_opt.py:171 in init_weight', 'flex_opt.py:640 in init_all_weights']);
  const figures = await text(frame, '[data-panel=out-of-memory] .lf-oom-figures');
  // It asked for 1 GiB with 32 MiB free; 48 MiB of its segment was cached, held by no buffer.
  assert.match(figures, /Failed request1 GiB/);
  assert.match(figures, /Free on the device32 MiB/);
  assert.match(figures, /Reserved but free48 MiB/);
  assert.match(await text(frame, '.lf-verdict-oom'), /^At the out-of-memory error 3\.0 GiB of 3\.1 GiB was held by: flex_opt\.py:171 in init_weight 1\.5 GiB \(24 buffers\)/);
  await page.close();
});

test('a snapshot of one moment shows no time: no timeline, no lifetimes, no time unit, never "a device memory profile"', async () => {
  const {page, frame} = await open(`&p.leakfinder.run=${encodeURIComponent(OOM)}`);
  assert.equal(await frame.$('[data-chart=timeline]'), null);
  assert.match(await text(frame, '[data-note=one-moment]'), /what was live at one moment \(3\.0 GiB\) and no times/);
  assert.equal(await frame.$eval('[data-chart=lifetimes]', (e) => e.hidden), true);
  const heads = await frame.$$eval('[data-panel=lifetimes] thead th', (ths) => ths.map((th) => th.textContent ?? ''));
  assert.ok(!heads.some((h) => /^(Allocated|Freed|Lifetime|Step|Window)/.test(h)), heads.join(', '));
  await frame.waitForSelector('[data-panel=lifetimes] tbody tr[data-key]');
  for (const panel of ['timeline', 'lifetimes', 'breakdown', 'families', 'out-of-memory']) {
    assert.doesNotMatch(await text(frame, `[data-panel=${panel}]`), TIME_UNIT, panel);
  }
  assert.doesNotMatch(await text(frame, '[aria-label=Summary]'), TIME_UNIT);
  assert.doesNotMatch(await text(frame, '.lf-view'), /device memory profile/);
  await page.close();
});

test('the after-run twin names its live blocks by their frames, not "allocated before the window"', async () => {
  const {page, frame} = await open(`&p.leakfinder.run=${encodeURIComponent(AFTER)}`);
  await frame.waitForSelector('[data-panel=breakdown] tbody tr[data-key]');
  const breakdown = await text(frame, '[data-panel=breakdown]');
  assert.doesNotMatch(breakdown, /before the window/);
  // By the frame that tells the weights apart, below the allocation helper they all share.
  assert.match(breakdown, /flex_opt\.py:171 in init_weight/);
  assert.match(breakdown, /flex_opt\.py:319 in init_weight/);
  assert.equal(await frame.$('[data-panel=out-of-memory]'), null);
  await page.close();
});

test('compared with its after-run twin, the out-of-memory file is "B ran out of memory", never a green "No regression"', async () => {
  const {page, frame} = await open(`&p.leakfinder.run=${encodeURIComponent(AFTER)}&p.leakfinder.compare=${encodeURIComponent(OOM)}`);
  await frame.waitForSelector('.lf-compare');
  const banner = await frame.$eval('[data-out-of-memory]', (e) => [e.dataset.outOfMemory, e.textContent ?? '']);
  assert.equal(banner[0], 'b');
  assert.match(banner[1], /^B ran out of memoryB: At the out-of-memory error 3\.0 GiB/);
  assert.equal(await frame.$('[data-regression=false]'), null);
  // Neither file records times: no timelines on one time axis.
  assert.equal(await frame.$('[data-panel=compare-timeline]'), null);
  assert.match(await text(frame, '[data-note=untimed]'), /Neither run records times/);
  await page.close();
});

test('a JAX device memory profile shows no time either', async () => {
  const {page, frame} = await open(`&p.leakfinder.run=${encodeURIComponent('jax_memory/step_7')}`);
  assert.equal(await frame.$('[data-chart=timeline]'), null);
  assert.match(await text(frame, '[data-note=one-moment]'), /what was live at one moment \(2 MiB\)/);
  await frame.waitForSelector('[data-panel=lifetimes] tbody tr[data-key]');
  for (const panel of ['timeline', 'lifetimes', 'breakdown']) {
    assert.doesNotMatch(await text(frame, `[data-panel=${panel}]`), TIME_UNIT, panel);
  }
  await page.close();
});

test('no page error and no dialog on any page', () => {
  for (const seen of pages) assert.deepEqual([seen.errors, seen.dialogs], [[], []]);
});
