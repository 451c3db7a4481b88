// Browser tests of the panels' lifecycle: switching runs and allocators many
// times leaves no uPlot chart, resize observer or request of a view left
// behind (window.tbLeakfinder.live, src/panel.ts's counts, against what the
// page shows). Debian chromium (playwright-core) against a real `tensorboard`.

import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';
import {openLeaks, runName, startSuite, watch} from './harness.mjs';

// - two_alloc: one host with two allocators, GPU_0_bfc leaking;
// - job: 3 captures of one TensorBoard run, so that a capture opens with its run history (a chart of its own).
const BUILD_RUNS = `
import sys
from tb_leakfinder.testing.history_runs import slow_leak_run
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
builder, _ = synthesize_training(num_events=3000, steps=12, allocators=("GPU_0_bfc", "GPU_1_bfc"), leak_allocator="GPU_0_bfc", cache_entries=2)
write_session(sys.argv[1], "two_alloc", "2026_01_01_00_00_00", {"host0": builder})
slow_leak_run(sys.argv[1], "job", captures=3)
`;

let suite;
before(async () => {
  suite = await startSuite(['tf_leak', 'jax_liveout'], BUILD_RUNS);
});
after(() => suite?.stop());

const live = (frame) => frame.evaluate(() => ({...window.tbLeakfinder.live, uplots: document.querySelectorAll('.uplot').length}));

/** Picks `value` in selector `name` and waits until the view it opens has drawn its charts and fetched all it asked. */
async function pick(frame, name, value) {
  await frame.selectOption(`[data-select=${name}]`, value);
  await settle(frame);
}

async function settle(frame) {
  await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 90_000});
  await frame.waitForFunction(() => {
    const charts = [...document.querySelectorAll('[data-chart]')];
    const lifetimes = document.querySelector('[data-chart=lifetimes]');
    return window.tbLeakfinder.live.requests === 0 && (!lifetimes || lifetimes.dataset.drawn !== undefined) && charts.every((c) => c.dataset.chart === 'lifetimes' || c.querySelector('.uplot') || c.closest('[hidden]'));
  }, undefined, {timeout: 90_000});
}

test('switching runs and allocators twenty times keeps one chart per chart shown, and no request in flight', async () => {
  const {logdir, tb, browser} = suite;
  const page = await browser.context.newPage();
  const seen = watch(page);
  const leak = runName(logdir, 'tf_leak');
  const frame = await openLeaks(page, tb.base, leak);
  await settle(frame);
  const first = await live(frame);
  // The leak run's timeline and buffer lifetimes: a chart each, kept as wide as its box by an observer each.
  assert.deepEqual(first, {plots: 2, observers: 2, requests: 0, uplots: 2});
  const runs = await frame.$$eval('[data-select=run] option', (os) => os.map((o) => o.value));
  const job = runs.filter((r) => r.startsWith('job/'));
  assert.equal(job.length, 3, runs.join(', '));
  const others = [runName(logdir, 'jax_liveout'), runName(logdir, 'two_alloc'), job[0], job[2]];
  for (let round = 0; round < 4; round++) {
    for (const run of others) {
      await pick(frame, 'run', run);
      const now = await live(frame);
      // Every chart counted is one the page shows: none of a view gone is left behind.
      assert.equal(now.plots, now.uplots, `${run}: ${JSON.stringify(now)}`);
      assert.equal(now.observers, now.plots, `${run}: ${JSON.stringify(now)}`);
      if (run.startsWith('job/')) assert.ok(await frame.$('[data-panel=history] .uplot'), 'the capture opens with its run history drawn');
    }
  }
  await pick(frame, 'run', runName(logdir, 'two_alloc'));
  const allocators = await frame.$$eval('[data-select=allocator] option', (os) => os.map((o) => o.value));
  assert.equal(allocators.length, 2, allocators.join(', '));
  const shown = await live(frame);
  for (let i = 0; i < 10; i++) await pick(frame, 'allocator', allocators[i % 2]);
  assert.deepEqual(await live(frame), shown);
  await pick(frame, 'run', leak);
  assert.deepEqual(await live(frame), first);
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(seen.failures, []);
});
