// Browser tests of a logdir that mixes formats: the demo's XProf capture
// (tf_leak), the real PyTorch ResNet-50 trace of ../shared/profiles/torch
// (pytorch/kineto's sample, BSD-3 licence, see ../shared/profiles/README.md)
// and a PyTorch training loop built with
// tests/unit/read/formats/torch_trace/trace_files.py that keeps each step's
// aten::mm output, beside a JAX device memory profile of older JAX (no device
// label) saved as .pb.gz, with a compiled executable among its samples, and the
// PyTorch memory snapshot of a job that died out of memory
// (tb_leakfinder/testing/torch_snapshot_builder.py's dying_job),
// and a PyTorch memory snapshot without time_us (its clock is its entries'
// order). XProf's links and static view are for the XProf run alone.

import assert from 'node:assert/strict';
import {existsSync} from 'node:fs';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {openLeaks, runName, SHARED_PROFILES, startSuite, watch} from './harness.mjs';

const RESNET = 'torch/kineto_resnet50_w4';
const noResnet = !existsSync(join(SHARED_PROFILES, RESNET)) && `${join(SHARED_PROFILES, RESNET)} is not here (the shared profiles lie beside the repository)`;
// AMD-AGI/TraceLens's Qwen1.5-0.5B trace (MIT licence, see ../shared/profiles/README.md).
const QWEN = 'torch/tracelens_qwen_h100';
const noQwen = !existsSync(join(SHARED_PROFILES, QWEN)) && `${join(SHARED_PROFILES, QWEN)} is not here`;
const BUILD_LOOP = `
import pathlib, sys
from tests.unit.read.formats.torch_trace.trace_files import training, write
from tb_leakfinder.testing.torch_snapshot_builder import dying_job
folder = pathlib.Path(sys.argv[1]) / 'torch_leak'
folder.mkdir()
write(folder / 'worker0_7.1700000000000.pt.trace.json', training())
(pathlib.Path(sys.argv[1]) / 'torch_oom').mkdir()
dying_job().write(pathlib.Path(sys.argv[1]) / 'torch_oom' / 'oom_snapshot.pickle')
from tb_leakfinder.testing.pprof_builder import PprofBuilder
snapshot = PprofBuilder()
stack = [('/home/me/train.py', 'make_batch', 12, 14), ('/home/me/train.py', '<module>', 1, 30)]
snapshot.sample(2 << 20, stack, device='')
snapshot.sample(3 << 20, stack, device='', kind='executable')
(pathlib.Path(sys.argv[1]) / 'jax_memory').mkdir()
snapshot.write(pathlib.Path(sys.argv[1]) / 'jax_memory' / 'step_7.pb.gz')
from tb_leakfinder.testing.torch_snapshot_builder import SnapshotBuilder
snapshot = SnapshotBuilder()
for i in range(40):
    snapshot.alloc(0x100000 + i * 0x10000, 1 << 20, [("/src/train.py", 12, "step")])
    if i % 4:
        snapshot.free(0x100000 + i * 0x10000, 1 << 20)
(pathlib.Path(sys.argv[1]) / 'untimed').mkdir()
snapshot.write(pathlib.Path(sys.argv[1]) / 'untimed' / 'memory_snapshot.pickle')
`;

let suite;
const pages = [];
before(async () => {
  suite = await startSuite(['tf_leak'], BUILD_LOOP, [RESNET, QWEN]);
});
after(() => suite?.stop());

async function open(run) {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  pages.push(seen);
  const frame = await openLeaks(page, suite.tb.base, run);
  return {page, frame, seen};
}

const text = (frame, selector) => frame.$eval(selector, (e) => e.textContent ?? '');
const links = (frame) => frame.$$eval('.lf-links a', (as) => as.map((a) => a.textContent));

test('the XProf run links to XProf; its module selector, with no compiled program to offer, is hidden', async () => {
  const {frame} = await open(runName(suite.logdir, 'tf_leak'));
  assert.deepEqual(await links(frame), ['Open in XProf Memory Profile']);
  // tf_leak's TensorFlow capture holds no XLA program: an empty selector is not shown (display.test.mjs opens one that has).
  assert.equal(await frame.$$eval('[data-select=module] option', (os) => os.filter((o) => o.value).length), 0);
  assert.equal(await frame.$eval('[data-label=module]', (e) => e.hidden), true);
  assert.match(await text(frame, '[data-panel=families]'), /Mul \[128,1024\]/);
});

test('a PyTorch run shows its leak and families, and nothing of XProf', async () => {
  const {frame, seen} = await open('torch_leak');
  assert.deepEqual(await links(frame), []);
  assert.equal(await frame.$eval('[data-label=module]', (e) => e.hidden), true);
  assert.equal(await frame.$('[data-panel=static]'), null);
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  assert.match(await text(frame, '.lf-verdict'), /aten::mm float\[64,64\], float\[64,64\]/);
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), 'cuda:0');
  const families = await frame.$$eval('[data-panel=families] [data-family], [data-panel=families] tbody tr[data-key]', (rows) => rows.map((r) => r.textContent ?? ''));
  assert.ok(families.some((f) => f.includes('aten::mm')), families.join(' | '));
  const groups = await text(frame, '[data-panel=families]');
  assert.match(groups, /with_stack=True/);
  assert.doesNotMatch(groups, /python_tracer|Profile tab/);
  const summary = await text(frame, '[aria-label=Summary]');
  assert.doesNotMatch(summary, /XProf/);
  await frame.waitForSelector('[data-chart=timeline] canvas');
  assert.deepEqual(seen.failures, []);
});

test('the real ResNet-50 trace: no leak, its peak broken down by aten op', {skip: noResnet}, async () => {
  const {frame, seen} = await open('kineto_resnet50_w4');
  assert.deepEqual(await links(frame), []);
  assert.equal(await frame.$('[data-panel=static]'), null);
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'no_leak');
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), 'cuda:0');
  await frame.waitForSelector('[data-panel=breakdown] tbody tr[data-key]');
  assert.match(await text(frame, '[data-panel=breakdown]'), /aten::cudnn_convolution/);
  assert.deepEqual(seen.failures, []);
});

test('a snapshot taken at an out-of-memory error leads with what held the memory', async () => {
  const {frame, seen} = await open('torch_oom/oom_snapshot');
  const banner = await frame.waitForSelector('.lf-verdict [data-out-of-memory]');
  assert.match(await banner.evaluate((e) => e.textContent ?? ''), /^At the out-of-memory error 5\.5 GiB of 5\.5 GiB was held by: train\.py:40 in train_step 4 GiB \(4 buffers\); BmmBackward0 \(backward of bmm\) 1 GiB/);
  // It leads: before the verdict's own label and reason.
  const order = await frame.$eval('.lf-verdict', (v) => [...v.children].map((c) => c.className));
  assert.deepEqual(order.slice(0, 2), ['lf-verdict-title', 'lf-verdict-label']);
  assert.deepEqual(seen.failures, []);
});

test('the real Qwen trace: a buffer’s Where leads with the model layer, the harness line after', {skip: noQwen}, async () => {
  const {frame, seen} = await open('tracelens_qwen_h100');
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), 'cuda:0');
  await frame.waitForSelector('[data-panel=breakdown] tbody tr[data-key]');
  const rows = await frame.$$eval('[data-panel=breakdown] tbody tr[data-key]', (trs) => trs.map((tr) => tr.textContent ?? ''));
  const mlp = rows.find((r) => r.includes('aten::mul') && r.includes('BFloat16[16,559,2816]'));
  assert.ok(mlp, rows.join(' | '));
  assert.match(mlp, /Qwen2MLP\.forward \(modeling_qwen2\.py:56\) ← text_base_model\.py:28 in run_on_input/);
  assert.deepEqual(seen.failures, []);
});

test('a device memory profile: its buffers live at this moment, its compiled programs apart', async () => {
  const {frame, seen} = await open('jax_memory/step_7');
  assert.deepEqual(await links(frame), []);
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), 'device unknown');
  const summary = await text(frame, '[aria-label=Summary]');
  assert.match(summary, /Live at this moment2 MiB/);
  assert.match(summary, /Peak2 MiBthe buffers live when it was saved/);
  assert.doesNotMatch(summary, /Never freed|Allocations \/ frees|Heap in use/);
  const groups = await text(frame, '[data-panel=families]');
  assert.match(groups, /live when the snapshot was saved/);
  assert.doesNotMatch(groups, /never.freed/i);
  assert.equal(await text(frame, '[data-note=compiled-programs]'), 'Compiled programs (their code and constants, not buffers): 3 MiB in 1 program on device unknown.');
  assert.deepEqual(seen.failures, []);
});

test('a snapshot without times is drawn in allocation order: no time unit, no lifetime, no steps', async () => {
  const {frame} = await open('untimed/memory_snapshot');
  await frame.waitForSelector('[data-chart=timeline][data-clock=allocations] canvas');
  const note = await text(frame, '[data-panel=timeline] .lf-chart-note');
  assert.match(note, /Peak 11 MiB at allocation #40, no steps\.$/);
  const peak = await text(frame, '[data-peak]');
  const card = await frame.$eval('[data-peak]', (e) => e.closest('.lf-card')?.textContent ?? '');
  assert.equal(peak, '11 MiB');
  assert.match(card, /at allocation #40, no steps/);
  // The builder's 40 allocations in 10 windows.
  assert.match(await text(frame, '.lf-verdict'), /10 equal windows of 4 allocations each, no step information/);
  await frame.waitForSelector('[data-chart=lifetimes] canvas');
  const heads = await frame.$$eval('[data-panel=lifetimes] thead th', (ths) => ths.map((th) => th.textContent ?? ''));
  assert.ok(!heads.some((h) => /^Lifetime/.test(h)), heads.join(', '));
  assert.deepEqual(heads.filter((t) => /^(Step|Window)/.test(t)), ['Window']);
  const rows = await frame.$$eval('[data-panel=lifetimes] tbody tr', (trs) => trs.map((r) => Array.from(r.cells, (c) => c.textContent ?? '')));
  assert.ok(rows.length > 0 && rows.every((cells) => cells.some((c) => /^allocation #\d+$/.test(c))), JSON.stringify(rows.slice(0, 2)));
  // No time unit anywhere in the page's figures: the file records none.
  for (const panel of ['timeline', 'lifetimes', 'breakdown']) {
    assert.doesNotMatch(await text(frame, `[data-panel=${panel}]`), /\d ?(ps|ns|µs|ms|s)\b/, panel);
  }
  assert.doesNotMatch(await text(frame, '[aria-label=Summary]'), /\d ?(ps|ns|µs|ms)\b/);
  // Its axes count allocations.
  await frame.waitForSelector('[data-chart=lifetimes][data-window]');
  const [timeline, lifetimes] = await frame.$$eval('[data-chart=timeline], [data-chart=lifetimes]', (cs) => cs.map((c) => c.dataset.window));
  assert.equal(lifetimes, timeline);
});

test('going back to the XProf run brings its link back', async () => {
  const {frame} = await open('torch_leak');
  assert.deepEqual(await links(frame), []);
  await frame.selectOption('[data-select=run]', runName(suite.logdir, 'tf_leak'));
  await frame.waitForFunction(() => document.querySelectorAll('.lf-links a').length === 1);
  assert.deepEqual(await links(frame), ['Open in XProf Memory Profile']);
});

test('no page error and no dialog on any page', () => {
  for (const seen of pages) {
    assert.deepEqual(seen.errors, []);
    assert.deepEqual(seen.dialogs, []);
  }
});
