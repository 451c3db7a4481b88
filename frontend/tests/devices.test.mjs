// Browser tests of accelerator profiles in the Leaks tab: one allocator per
// XProf memory id, each with its label; the allocator the tab opens on; every
// leaking allocator in the banner; the stack as its own band on the timeline;
// the peak against the capacity, its breakdown, the step source and the
// forecast. Debian chromium (playwright-core) against a real `tensorboard`.

import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';
import {openLeaks, runName, startSuite, watch} from './harness.mjs';

// Profiles built with tb_leakfinder.testing.xspace_builder, written under the suite's logdir:
// - tpu_one_leak: 4 TPUs keyed by index_on_host (overlapping addresses, a
//   1 GiB stack each, 16 GiB of memory), device 2 keeps 1 MiB per step;
// - tpu_two_leaks: the same, devices 1 and 3 keep 1 MiB and 4 MiB per step;
// - gpu_pinned: GPU_0_bfc, GPU_1_bfc (a higher peak) and gpu_host_bfc, host
//   pinned memory with the highest peak of all; no stack, no leak;
// - gpu_fragmented: one GPU whose free memory at the peak (36 MiB) is 90%
//   fragmented, less than its largest buffer (8 MiB) in one block.
const BUILD_DEVICES = `
import sys
import numpy as np
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, synthesize_devices, write_session
from tb_leakfinder.model.memory import ALLOC, FREE

logdir = sys.argv[1]
builder, _ = synthesize_devices(devices=4, steps=10, leak_device=2, stack_bytes=1 << 30, limit_bytes=16 << 30)
write_session(logdir, "tpu_one_leak", "2026_01_01_00_00_00", {"host0": builder})

def tpus(leaks, devices=4, steps=10, step_ps=10_000_000_000):
    b = ProfileBuilder("host0")
    for d in range(devices):
        b.allocator(str(d), limit_bytes=16 << 30, bytes_reserved=1 << 30)
    size, temp, kept = 1 << 20, 0x20_0000_0000, 0x30_0000_0000
    for s in range(steps):
        start = step_ps // 100 + s * step_ps
        b.span("PjitFunction(train_step)", start + 10, start + step_ps // 50)
        for d in range(devices):
            device = f"/device:TPU:{d}"
            b.xla_module(device, "jit_train_step(7)", start + step_ps // 20, start + step_ps - step_ps // 20, run_id=1000 + s)
            b.device_step(device, s, start + step_ps // 25, start + step_ps - step_ps // 25)
            times = [start + step_ps // 10 + k * step_ps // 20 for k in range(4)]
            events = [(t, ALLOC, temp + k * size, size, "fusion.1") for k, t in enumerate(times)]
            events += [(t + step_ps // 40, FREE, temp + k * size, size, "") for k, t in enumerate(times)]
            if d in leaks:
                events.append((start + step_ps // 2, ALLOC, kept + s * leaks[d], leaks[d], "copy.3"))
            events.sort()
            b.add_memory_events(
                [e[0] for e in events], [e[1] for e in events], np.array([e[2] for e in events], np.uint64), [e[3] for e in events],
                allocator=str(d), id_stat="index_on_host", op=[e[4] for e in events],
                shape=["f32[512,512]" if e[4] else "" for e in events], region="output", line="tpu_runtime",
            )
    return b

write_session(logdir, "tpu_two_leaks", "2026_01_01_00_00_00", {"host0": tpus({1: 1 << 20, 3: 4 << 20})})

gpus, planted = synthesize_devices(devices=2, steps=10, platform="GPU", id_stat="allocator_name", stack_bytes=0, limit_bytes=8 << 30)
end = planted["first_step_ps"] + planted["steps"] * planted["step_ps"]
gpus.add_memory_events([end + 10, end + 20], [ALLOC, FREE], np.array([0x40_0000_0000] * 2, np.uint64), [64 << 20] * 2, allocator="GPU_1_bfc", op=["big", ""])
gpus.allocator("gpu_host_bfc", limit_bytes=64 << 30, bytes_in_use=8 << 30)
gpus.add_memory_events([end + 30, end + 40], [ALLOC, FREE], np.array([0x50_0000_0000] * 2, np.uint64), [1 << 20] * 2, allocator="gpu_host_bfc", op=["pinned", ""])
write_session(logdir, "gpu_pinned", "2026_01_01_00_00_00", {"host0": gpus})

frag = ProfileBuilder("host0")
frag.allocator("GPU_0_bfc", limit_bytes=96 << 20)
n = 12
sizes = [(2 << 20) if k % 2 else (8 << 20) for k in range(n)] * 2
addrs = np.array([0x1000_0000 + k * (8 << 20) for k in range(n)] * 2, np.uint64)
frag.add_memory_events(np.arange(2 * n) * 1_000_000, [ALLOC] * n + [FREE] * n, addrs, sizes, allocator="GPU_0_bfc", op=["Conv2D"] * n + [""] * n, overrides={"fragmentation": 0.9})
write_session(logdir, "gpu_fragmented", "2026_01_01_00_00_00", {"host0": frag})
`;

let suite;
const pages = [];

before(async () => {
  suite = await startSuite(['tf_leak'], BUILD_DEVICES);
});
after(() => suite?.stop());

async function open(tbRun) {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  pages.push(seen);
  const frame = await openLeaks(page, suite.tb.base, runName(suite.logdir, tbRun));
  return {page, frame, seen};
}

const text = (frame, selector) => frame.$eval(selector, (e) => e.textContent ?? '');
/** The allocator selector's [memory id, text] pairs, by memory id (the server lists the most telling first). */
const options = async (frame) => (await frame.$$eval('[data-select=allocator] option', (os) => os.map((o) => [o.value, o.textContent]))).sort();

/** The report the tab was given, straight from the route. */
async function report(tbRun) {
  const url = `${suite.tb.base}data/plugin/leakfinder/report?run=${encodeURIComponent(runName(suite.logdir, tbRun))}`;
  const response = await fetch(url);
  assert.equal(response.status, 200, url);
  return response.json();
}

/** Pixels of the timeline's canvas in the stack band's teal (light theme), and in total. */
function stackPixels(frame) {
  return frame.$eval('[data-chart=timeline] canvas', (c) => {
    const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < px.length; i += 4) {
      const [r, g, b, a] = [px[i], px[i + 1], px[i + 2], px[i + 3]];
      // --lf-stack #00897b and its fill over the page: green and blue well above red.
      if (a > 0 && g - r > 35 && b - r > 30 && r < 200) n++;
    }
    return n;
  });
}

test('a 4-TPU profile opens on the leaking device, each allocator with its label and memory id', async () => {
  const {frame} = await open('tpu_one_leak');
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), '2');
  assert.deepEqual(await options(frame), [
    ['0', 'TPU:0 · memory id 0 (no leak)'],
    ['1', 'TPU:1 · memory id 1 (no leak)'],
    ['2', 'TPU:2 · memory id 2 (leak)'],
    ['3', 'TPU:3 · memory id 3 (no leak)'],
  ]);
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  assert.doesNotMatch(await text(frame, '.lf-verdict-reason'), /^Leak/, 'the banner does not repeat its word');
  assert.match(await text(frame, '.lf-cards'), /TPU:2memory id 2 in XProf's Memory Profile/);
  // Every allocator of the host in the banner, with its verdict, rate and peak; why TPU:2 is shown.
  const rows = await frame.$$eval('[data-list=allocators] tbody tr', (trs) => trs.map((tr) => [tr.dataset.verdict, tr.cells[0].textContent, tr.cells[2].textContent]));
  assert.deepEqual(rows, [
    ['no_leak', 'TPU:0 · memory id 0', ''],
    ['no_leak', 'TPU:1 · memory id 1', ''],
    ['leak', 'TPU:2 · memory id 2', '+1 MiB/step'],
    ['no_leak', 'TPU:3 · memory id 3', ''],
  ]);
  assert.equal(await text(frame, '[data-list=allocators] summary'), '4 allocators on this host, one leaking; TPU:2 is shown: the one that leaks');
  // The URL keeps the memory id.
  const url = await frame.evaluate(() => window.parent.location.href);
  assert.match(url, /p\.leakfinder\.allocator=2(&|$)/);
});

test('the summary reads the peak against the capacity, and the breakdown adds up to it with its stack row', async () => {
  const {frame} = await open('tpu_one_leak');
  const alloc = (await report('tpu_one_leak')).runs[0].hosts[0].allocators.find((a) => a.memory_id === '2');
  assert.ok(alloc.memory_capacity_bytes > 0, 'the profile gives a capacity');
  const share = alloc.peak_bytes_in_use / alloc.memory_capacity_bytes;
  const percent = (100 * share).toFixed(share < 0.1 ? 1 : 0);
  const peak = await text(frame, '[data-peak]');
  assert.match(peak, new RegExp(`^[\\d.]+ GiB of [\\d.]+ GiB \\(${percent.replace('.', '\\.')}%\\)$`), peak);
  assert.match(await frame.$eval('[data-peak]', (e) => e.closest('.lf-card').textContent), /^Peak[\d.]+ GiB of 16 GiB/);
  const breakdown = await frame.waitForSelector('[data-panel=breakdown] [data-breakdown-total]');
  assert.equal(Number(await breakdown.getAttribute('data-breakdown-total')), alloc.peak_bytes_in_use);
  assert.match(await breakdown.textContent(), /stack reserved 1 GiB/);
  await frame.waitForSelector('[data-panel=breakdown] tbody tr.lf-breakdown-stack');
  const stackRow = await frame.$$eval('[data-panel=breakdown] tbody tr.lf-breakdown-stack td', (tds) => tds.map((td) => td.textContent));
  assert.equal(stackRow[0], 'stack reserved');
  assert.equal(stackRow[6], '1 GiB');
});

test('the timeline draws the stack as its own band; a profile without a stack draws none', async () => {
  const {frame} = await open('tpu_one_leak');
  await frame.waitForSelector('[data-chart=timeline][data-stack] canvas');
  assert.equal(await frame.$eval('[data-chart=timeline]', (e) => e.dataset.stack), String(1 << 30));
  const legend = () => frame.$$eval('[data-panel=timeline] .u-legend .u-label', (ls) => ls.map((l) => l.textContent));
  assert.ok((await legend()).includes('stack reserved'), (await legend()).join(', '));
  const teal = await stackPixels(frame);
  assert.ok(teal > 5000, `the stack band is drawn (${teal} pixels)`);
  // Negative control: no stack, no band.
  const gpu = await open('gpu_pinned');
  await gpu.frame.waitForSelector('[data-chart=timeline][data-stack] canvas');
  assert.equal(await gpu.frame.$eval('[data-chart=timeline]', (e) => e.dataset.stack), '0');
  assert.ok(!(await gpu.frame.$$eval('[data-panel=timeline] .u-legend .u-label', (ls) => ls.map((l) => l.textContent))).includes('stack reserved'));
  const none = await stackPixels(gpu.frame);
  assert.ok(none < teal / 20, `no stack band without a stack (${none} pixels)`);
});

test('the tab says where the steps came from, and when the leaking device runs out of memory', async () => {
  const {frame} = await open('tpu_one_leak');
  const host = (await report('tpu_one_leak')).runs[0].hosts[0];
  const alloc = host.allocators.find((a) => a.memory_id === '2');
  const source = host.step_source.description;
  // The profile has no step markers: the steps come from the programs' runs or the host's calls.
  assert.match(source, /^10 steps from (executions of jit_train_step\(7\)|calls of PjitFunction\(train_step\))/);
  // Beside the step count, and near the verdict (in its reason, or a line of its own).
  assert.equal(await text(frame, '.lf-card[data-step-source]'), `Steps10${source.replace(/^10 steps /, '')}`);
  const banner = await text(frame, '.lf-verdict');
  assert.ok(banner.includes(source), banner);
  assert.ok(alloc.forecast, 'the leaking device has a forecast');
  const forecast = await text(frame, '.lf-verdict [data-forecast]');
  assert.equal(forecast, alloc.forecast.description);
  assert.match(forecast, /runs out in about [\d,]+ steps/);
  // A device that does not grow has none.
  await frame.selectOption('[data-select=allocator]', '0');
  await frame.waitForSelector('.lf-verdict[data-verdict=no_leak]');
  assert.equal(await frame.$('.lf-verdict [data-forecast]'), null);
  // ...and its banner still lists the device that leaks; chosen by hand, it says no "why".
  assert.equal(await frame.$eval('[data-list=allocators] tr[data-verdict=leak] button', (b) => b.dataset.allocator), '2');
  assert.equal(await text(frame, '[data-list=allocators] summary'), '4 allocators on this host, one leaking');
});

test('several leaking devices: the tab opens on the fastest, and the banner lists them all', async () => {
  const {page, frame} = await open('tpu_two_leaks');
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), '3');
  const chosen = (await report('tpu_two_leaks')).runs[0].hosts[0].default_allocator;
  assert.deepEqual([chosen.memory_id, chosen.rule], ['3', 'leaks_fastest']);
  const listed = (await frame.$$eval('[data-list=allocators] tr[data-verdict=leak] button', (bs) => bs.map((b) => [b.dataset.allocator, b.textContent, b.getAttribute('aria-current')]))).sort();
  assert.deepEqual(listed, [
    ['1', 'TPU:1 · memory id 1', null],
    ['3', 'TPU:3 · memory id 3', 'true'],
  ]);
  assert.match(await text(frame, '[data-list=allocators] summary'), /^4 allocators on this host, 2 leaking; TPU:3 is shown: the device memory that leaks fastest$/);
  // A button shows that allocator.
  await frame.click('[data-list=allocators] button[data-allocator="1"]');
  await frame.waitForSelector('[data-list=allocators] button[data-allocator="1"][aria-current=true]');
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), '1');
  assert.match(await text(frame, '.lf-cards'), /TPU:1memory id 1 in XProf's Memory Profile/);
  await page.waitForURL(/p\.leakfinder\.allocator=1(&|$)/);
});

test('without a leak the tab opens on the device memory with the highest peak, not host pinned memory', async () => {
  const {frame} = await open('gpu_pinned');
  const host = (await report('gpu_pinned')).runs[0].hosts[0];
  const allocators = host.allocators;
  // The report decides which one (by its format's host_memory flag, not by its name), and says why; the tab follows.
  assert.deepEqual(allocators.map((a) => [a.memory_id, a.host_memory]), [['GPU_0_bfc', false], ['GPU_1_bfc', false], ['gpu_host_bfc', true]]);
  assert.deepEqual(host.default_allocator, {memory_id: 'GPU_1_bfc', allocator: 'GPU:1', rule: 'highest_peak', reason: 'the device memory with the highest peak'});
  assert.equal(await text(frame, '[data-list=allocators] summary'), `3 allocators on this host, none leaking; GPU:1 is shown: ${host.default_allocator.reason}`);
  const pinned = allocators.find((a) => a.memory_id === 'gpu_host_bfc');
  const gpu1 = allocators.find((a) => a.memory_id === 'GPU_1_bfc');
  assert.ok(pinned.peak_bytes_in_use > gpu1.peak_bytes_in_use, 'host pinned memory has the highest peak');
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), 'GPU_1_bfc');
  const labels = Object.fromEntries(await options(frame));
  assert.equal(labels.GPU_0_bfc, 'GPU:0 · memory id GPU_0_bfc (no leak)');
  assert.equal(labels.gpu_host_bfc, 'gpu_host_bfc (no leak)');
});

test('high fragmentation at the peak is said with its figure; a device without it says nothing', async () => {
  const {frame} = await open('gpu_fragmented');
  const alloc = (await report('gpu_fragmented')).runs[0].hosts[0].allocators[0];
  assert.match(alloc.fragmentation_note, /90%/);
  assert.equal(await text(frame, '[data-note=fragmentation]'), alloc.fragmentation_note);
  const tpu = await open('tpu_one_leak');
  assert.equal(await tpu.frame.$('[data-note=fragmentation]'), null);
});

test('no request under /data/plugin/leakfinder/ failed, and no page error', () => {
  const failures = pages.flatMap((p) => p.failures);
  assert.deepEqual(failures, [], `failed plugin requests:\n${failures.join('\n')}`);
  assert.deepEqual(pages.flatMap((p) => p.errors), []);
});
