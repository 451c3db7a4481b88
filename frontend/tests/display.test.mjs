// Browser tests of what the user sees on accelerator profiles: allocators in
// natural order and the tab opening on the device with the largest peak;
// shapes without a TPU's layout and long program ids cut; the timeline's peak
// marker never over a step label; long names wrapping only after a separator;
// and the static view (a program's buffers) and the dynamic view (its
// allocations) linked both ways. Debian chromium (playwright-core) against a
// real `tensorboard`.

import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';
import {openLeaks, runName, startSuite, watch} from './harness.mjs';

const TRAIN_ID = '8213770315642958113';
const TRAIN = `jit_train_step(${TRAIN_ID})`;
// A TF op path with no space in it: it can wrap only at its separators.
const LONG_OP = 'model/transformer_encoder/layer_11/multi_head_self_attention/query_projection/einsum_dense/BiasAdd';

// Profiles built with tb_leakfinder.testing, written under the suite's logdir:
// - gpu_train: a JAX GPU training loop under PJRT's conventions whose programs have 64-bit ids; it keeps
//   output 1 of the train step (allocation 3 of its buffer assignment) every step;
// - tpu: 4 TPU chips running one inference program whose 5 GiB output has a layout shape;
// - gpus12: 12 GPUs and pinned host memory; GPU:10 peaks highest of the devices, host memory higher still;
// - spike: a TF profile whose peak is a spike just after a step's start, where its label is; its op is LONG_OP.
const BUILD = `
import sys
import numpy as np
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.testing.pjrt_profile import jax_training
from tb_leakfinder.testing.tpu_profile import tpu_inference
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, synthesize_devices, write_session

logdir, session = sys.argv[1], "2026_01_01_00_00_00"
train, _ = jax_training(12, program_ids=(${TRAIN_ID}, 8213770315642951207))
write_session(logdir, "gpu_train", session, {train.hostname: train})
tpu, _ = tpu_inference()
write_session(logdir, "tpu", session, {tpu.hostname: tpu})

gpus, planted = synthesize_devices(devices=12, steps=3, platform="GPU", id_stat="allocator_name", stack_bytes=0)
end = planted["first_step_ps"] + planted["steps"] * planted["step_ps"]
gpus.add_memory_events([end + 10, end + 20], [ALLOC, FREE], np.array([0x40_0000_0000] * 2, np.uint64), [64 << 20] * 2, allocator="GPU_10_bfc", op=["big", ""])
gpus.allocator("xla_gpu_host_bfc", limit_bytes=64 << 30)
gpus.add_memory_events([end + 30, end + 40], [ALLOC, FREE], np.array([0x50_0000_0000] * 2, np.uint64), [1 << 30] * 2, allocator="xla_gpu_host_bfc", op=["pinned", ""])
write_session(logdir, "gpus12", session, {"host0": gpus})

spike = ProfileBuilder("host0")
step_ps = 1_000_000_000
for s in range(8):
    t0 = s * step_ps
    spike.step(s, t0, t0 + step_ps - 1)
    spike.alloc(t0 + 1000, 0x1000 + s * 0x100000, 1 << 20, op="Relu", shape="[256,1024]")
    if s == 5:  # right after the step's start, under where its label is drawn: the highest point of the window
        spike.alloc(t0 + step_ps // 200, 0x9000000, 64 << 20, op="${LONG_OP}", shape="[16384,1024]")
        spike.free(t0 + step_ps // 100, 0x9000000, 64 << 20)
    spike.free(t0 + step_ps // 2, 0x1000 + s * 0x100000, 1 << 20)
write_session(logdir, "spike", session, {"host0": spike})
`;

let suite;
const pages = [];
before(async () => {
  suite = await startSuite([], BUILD);
});
after(() => suite?.stop());

async function open(tbRun, viewport) {
  const page = await suite.browser.context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  const seen = watch(page);
  pages.push(seen);
  const frame = await openLeaks(page, suite.tb.base, runName(suite.logdir, tbRun));
  return {page, frame, seen};
}

const options = (frame, select) => frame.$$eval(`[data-select=${select}] option`, (os) => os.map((o) => [o.value, o.textContent]));

test('allocators in natural order, host memory last; the tab opens on the device with the largest peak', async () => {
  const {frame} = await open('gpus12');
  const listed = (await options(frame, 'allocator')).map(([value]) => value);
  assert.deepEqual(listed, [...Array.from({length: 12}, (_, d) => `GPU_${d}_bfc`), 'xla_gpu_host_bfc']);
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), 'GPU_10_bfc');
  const tpu = await open('tpu');
  assert.deepEqual((await options(tpu.frame, 'allocator')).map(([value]) => value), ['0', '1', '2', '3']);
  // Equal peaks: the first chip.
  assert.equal(await tpu.frame.$eval('[data-select=allocator]', (s) => s.value), '0');
});

test('a TPU output: its shape without the layout, once in the peak breakdown; long program ids cut', async () => {
  const {frame} = await open('tpu');
  await frame.waitForSelector('[data-panel=breakdown] tbody tr[data-key]');
  const rows = await frame.$$eval('[data-panel=breakdown] tbody tr[data-key]', (trs) => trs.map((tr) => Array.from(tr.cells, (td) => td.textContent)));
  // Named by its program buffer: the shape's dimensions, its dtype in a column of its own.
  const output = rows.filter((r) => r[1] === '[5,1024,1024,256]' && r[2] === 'f32');
  assert.equal(output.length, 1, JSON.stringify(rows));
  assert.equal(output[0][5], '1', 'one buffer');
  assert.equal(output[0][6], '5 GiB');
  assert.ok(!JSON.stringify(rows).includes('T(8,128)'));
  // The transfer that feeds its parameter links to the program by the same short name.
  assert.ok(!JSON.stringify(rows).includes('8213770315642958113'), JSON.stringify(rows));
  // The module: its selector and the static view's heading name it by its id's last digits.
  assert.deepEqual(await options(frame, 'module'), [['jit_f(8213770315642958113)', 'jit_f(…8113)']]);
  assert.equal(await frame.$eval('[data-panel=static] h2', (h) => h.textContent), 'Static view: jit_f(…8113)');
});

test("the timeline's peak marker never covers a step label: the label of the peak's step is drawn beside it", async () => {
  const {frame} = await open('spike');
  const chart = await frame.waitForSelector('[data-chart=timeline][data-step-labels]');
  const {labels, marker} = await chart.evaluate((e) => ({labels: JSON.parse(e.dataset.stepLabels), marker: JSON.parse(e.dataset.peakMarker)}));
  assert.equal(labels.length, 8, 'every step is labelled');
  assert.equal(marker.length, 2, 'the dot and its text');
  const overlaps = (a, b) => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
  for (const box of marker) for (const label of labels) assert.ok(!overlaps(box, label), `peak ${box} over step label ${label}`);
  // The peak is in step 5, right at the left of its band where its label is: the dot is below the labels' row.
  const [dot] = marker;
  const five = labels[5];
  assert.ok(dot[0] < five[2] + 40 && dot[2] > five[0] - 40, `the dot (${dot}) is under step 5's label (${five})`);
  assert.ok(dot[1] >= Math.max(...labels.map((l) => l[3])), 'the dot sits below the row of step labels');
});

/** For each cell's text, the characters a line ends with where the browser wrapped it. */
async function lineEnds(frame, selector) {
  return frame.$$eval(selector, (cells) =>
    cells.map((cell) => {
      const ends = [];
      let previous = null;
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (let i = 0; i < node.data.length; i++) {
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const rect = range.getClientRects()[0];
          if (!rect) continue;
          if (previous && rect.top > previous.top + previous.height / 2) ends.push(previous.char);
          previous = {top: rect.top, height: rect.height, char: node.data[i]};
        }
      }
      return {text: cell.textContent, ends};
    }),
  );
}

test('a long name wraps after a separator, never inside a word', async () => {
  const {frame} = await open('spike', {width: 900, height: 1000});
  await frame.waitForSelector('[data-panel=breakdown] tbody tr[data-key]');
  const cells = await lineEnds(frame, '[data-panel=breakdown] tbody tr[data-key] td.lf-wrap:first-child');
  const long = cells.find((c) => c.text === LONG_OP);
  assert.ok(long, JSON.stringify(cells));
  assert.ok(long.ends.length >= 1, `${LONG_OP} wraps in a 900 px wide page`);
  for (const end of long.ends) assert.match(end, /[/._:,]/, `a line of ${LONG_OP} ends with ${end}`);
  // The family's label too.
  const families = await lineEnds(frame, '[data-panel=families] tbody tr[data-key] [data-family]');
  for (const f of families) for (const end of f.ends) assert.match(end, /[/._:,)\] ]/, `a line of ${f.text} ends with ${end}`);
});

test("the static view's program buffer shows its allocations in the dynamic view, and an allocation opens its program buffer", async () => {
  const {frame} = await open('gpu_train');
  await frame.selectOption('[data-select=module]', TRAIN);
  const panel = await frame.waitForSelector(`[data-panel=static] [data-module="${TRAIN}"] [data-table=whole-program] tbody tr[data-key]`);
  assert.ok(panel);
  // Output 1 of the train step, dot.3: allocation 3 (two parameters and the loss come first).
  await frame.click('[data-panel=static] [data-table=whole-program] button[data-show-allocation="3"]');
  const note = await frame.waitForSelector(`[data-panel=lifetimes] [data-picked="${TRAIN}#3"]`);
  assert.equal(await note.evaluate((e) => e.dataset.total), '12', 'one allocation a step');
  assert.match(await note.evaluate((e) => e.textContent), /Only the 12 allocations of allocation 3 of jit_train_step\(…8113\)/);
  await frame.waitForSelector('[data-chart=lifetimes][data-picked="12"]');
  // The table lists them alone, each made at model.py:57 and linked back to allocation 3 of the train step.
  await frame.waitForFunction(() => document.querySelector('[data-panel=lifetimes] .lf-pager [role=status]')?.textContent?.includes('of 12'));
  const links = await frame.$$eval('[data-panel=lifetimes] tbody tr[data-key] a[data-site-link]', (as) => as.map((a) => [a.textContent, a.dataset.program, a.dataset.allocation]));
  assert.equal(links.length, 10, 'a page of them');
  for (const link of links) assert.deepEqual(link, ['model.py:57', TRAIN, '3']);
  // Back: every buffer again.
  await frame.click('[data-panel=lifetimes] [data-picked] button');
  await frame.waitForSelector('[data-panel=lifetimes] [data-picked=""][hidden]', {state: 'attached'});
  await frame.waitForSelector('[data-chart=lifetimes][data-picked="0"]');

  // The other way: an allocation's Where link opens its program buffer in the static view, which picks
  // the same buffer's allocations in the dynamic view.
  await frame.click('[data-panel=breakdown] tbody tr:first-child a[data-site-link]');
  await frame.waitForSelector(`[data-panel=static] [data-module="${TRAIN}"][data-selected-allocation="3"] [data-selected="3"]`);
  await frame.waitForSelector(`[data-panel=lifetimes] [data-picked="${TRAIN}#3"][data-total="12"]`);
});

/** Moves the mouse down the middle of a chart until its tooltip holds `text`, then clicks there. */
async function clickWhere(page, frame, chart, text) {
  const over = await frame.waitForSelector(`${chart} .u-over`);
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  for (const fx of [0.5, 0.25, 0.75]) {
    for (let y = box.y + 2; y < box.y + box.height; y += 3) {
      await page.mouse.move(box.x + box.width * fx, y);
      const shown = await frame.$eval(`${chart} .lf-tooltip`, (t) => (t.hidden ? '' : (t.textContent ?? '')));
      if (shown.includes(text)) {
        await page.mouse.click(box.x + box.width * fx, y);
        return;
      }
    }
  }
  assert.fail(`no point of ${chart} shows ${text}`);
}

test('the charts link too: a block of the static view picks its allocations, an allocation opens its block', async () => {
  const {page, frame} = await open('gpu_train');
  await frame.selectOption('[data-select=module]', TRAIN);
  await frame.waitForSelector(`[data-panel=static] [data-module="${TRAIN}"] [data-chart=static-blocks][data-drawn]`);
  await clickWhere(page, frame, '[data-chart=static-blocks]', 'allocation3 (offset');
  await frame.waitForSelector(`[data-panel=lifetimes] [data-picked="${TRAIN}#3"][data-total="12"]`);
  await frame.waitForSelector('[data-chart=lifetimes][data-picked="12"]');
  // One of those allocations, in the lifetimes chart: its program buffer opens, selected, in the static view.
  await clickWhere(page, frame, '[data-chart=lifetimes]', 'output 1 of jit_train_step(…8113)');
  await frame.waitForSelector(`[data-panel=static] [data-module="${TRAIN}"][data-selected-allocation="3"] [data-selected="3"]`);
});

test('no failed requests, dialogs or page errors', () => {
  for (const seen of pages) {
    assert.deepEqual(seen.failures, []);
    assert.deepEqual(seen.dialogs, []);
    assert.deepEqual(seen.errors, []);
  }
});
