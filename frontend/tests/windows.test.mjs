// Browser tests of the charts' window: the memory timeline and the buffer
// lifetimes span the same range, the allocator's events and the steps around
// them, not the whole profile (an 8-GPU JAX profile built with
// tb_leakfinder/testing/pjrt_profile.py, its host busy for 20 s after its
// 3 steps; and AMD-AGI/TraceLens's real 8-GPU ROCm profile, MIT licence, see
// ../shared/profiles/README.md). Memory is drawn as steps; hovering the
// timeline names the event there. Debian chromium (playwright-core) against a
// real `tensorboard`.

import assert from 'node:assert/strict';
import {existsSync} from 'node:fs';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {SHARED_PROFILES, startSuite, watch} from './harness.mjs';

const CONV8 = 'jax_gpu/amd_jax08_conv8';
const noConv8 = !existsSync(join(SHARED_PROFILES, CONV8)) && `${join(SHARED_PROFILES, CONV8)} is not here`;
const BUILD = `
import pathlib, sys
from tb_leakfinder.testing.pjrt_profile import jax_multi_gpu
from tb_leakfinder.testing.xspace_builder import write_session
b, _ = jax_multi_gpu(devices=8, steps=3)
b.span("$train.py:99 teardown", 3_000_000_000, 20_000_000_000_000, line="python")
write_session(pathlib.Path(sys.argv[1]), 'gpus', '2026_12_06_00_00_00', {'gpu-host': b})
`;
// jax_multi_gpu: step i is the call PjitFunction(conv), from i * 1e9 + 1000 + 100 ps to i * 1e9 + 1000 + 8e8.
const STEPS = 3;
const WINDOW = [1000 + 100, (STEPS - 1) * 1e9 + 1000 + 800_000_000];

let suite;
before(async () => {
  suite = await startSuite([], BUILD, [CONV8]);
});
after(() => suite?.stop());

async function open(run, allocator) {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  await page.goto(`${suite.tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(run)}&p.leakfinder.allocator=${encodeURIComponent(allocator)}`);
  const frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000})).contentFrame();
  await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 90_000});
  await frame.waitForSelector('[data-chart=timeline][data-x-range]', {timeout: 60_000});
  await frame.waitForSelector('[data-chart=lifetimes][data-window][data-x-range]', {timeout: 60_000});
  return {page, frame, seen};
}

const ranges = (frame) => frame.$$eval('[data-chart=timeline], [data-chart=lifetimes]', (cs) => cs.map((c) => c.dataset.xRange.split(',').map(Number)));

test('on 8 GPUs the lifetimes span the timeline’s window, not the 20 s the host ran', async () => {
  const {page, frame, seen} = await open('gpus/2026_12_06_00_00_00', 'GPU_1_bfc');
  const [timeline, lifetimes] = await ranges(frame);
  assert.deepEqual(timeline, WINDOW);
  assert.deepEqual(lifetimes, WINDOW);
  // Each step's outputs are kept: never-freed bars end at the window's end.
  assert.equal(Number(await frame.$eval('[data-chart=lifetimes]', (e) => e.dataset.neverFreedEnd)), WINDOW[1]);
  // Every step's label is drawn, the first one too.
  const labels = JSON.parse(await frame.$eval('[data-chart=timeline]', (e) => e.dataset.stepLabels));
  assert.equal(labels.length, STEPS);
  assert.deepEqual([seen.failures, seen.errors, seen.dialogs], [[], [], []]);
  await page.close();
});

test('hovering the timeline shows the time, step, heap and the event there', async () => {
  const {page, frame} = await open('gpus/2026_12_06_00_00_00', 'GPU_1_bfc');
  const over = await frame.$('[data-chart=timeline] .u-over');
  const box = await over.boundingBox();
  // A tenth of the way across: inside step 0 (its first 0.8 ms), after its outputs are made.
  await page.mouse.move(box.x + box.width * 0.1, box.y + box.height / 2);
  const tip = await frame.waitForSelector('[data-chart=timeline] .lf-tooltip:not([hidden])');
  const text = await tip.textContent();
  assert.match(text, /^At \d[\d.]* (ns|µs|ms)/);
  assert.match(text, /stepstep 0/);
  assert.match(text, /heap in use\d/);
  assert.match(text, /event at [\d.]+ (ns|µs|ms)[+-][\d.]+ [KMG]iB (allocated|freed)/);
  assert.match(text, /op(output \d|temporaries) of jit_conv\(8\)lineconv\.py:\d+$/);
  await page.close();
});

test('the real ROCm 8-GPU profile: both charts span the same window, inside the profile', {skip: noConv8}, async () => {
  const {page, frame, seen} = await open('amd_jax08_conv8/jax_conv_minimal_08', 'GPU_1_bfc');
  const [timeline, lifetimes] = await ranges(frame);
  assert.deepEqual(lifetimes, timeline);
  const window = await frame.$eval('[data-chart=timeline]', (e) => e.dataset.window.split(',').map(Number));
  assert.deepEqual(timeline, window);
  // The README: GPU_1..7_bfc hold 15 allocations and 15 frees, after the profile's start.
  assert.ok(window[0] > 0 && window[1] > window[0], String(window));
  assert.deepEqual([seen.failures, seen.errors, seen.dialogs], [[], [], []]);
  await page.close();
});
