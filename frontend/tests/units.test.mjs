// Unit tests of the frontend's pure functions: the TypeScript sources are
// bundled by esbuild in memory and imported, no browser needed.

import assert from 'node:assert/strict';
import {before, test} from 'node:test';
import {importSources} from './sources.mjs';

let m;

before(async () => {
  const entry = `
    export * from './format';
    export {packAddresses, parseAddress} from './panels/lifetimes';
    export {readHashState, writeHashState} from './tensorboard';
    export {routeUrl, moduleKey} from './api';
    export {allocatorKey, allocatorLabel, defaultAllocator} from './allocators';
    export {reasonText} from './panels/verdict';
    export {captureCount, measureLabel, tensorboardRun} from './panels/history';
    export {ViewState} from './state';
    export {queryBuffers} from './inline';
  `;
  m = await importSources(entry);
});

test('sizes are in binary units', () => {
  assert.equal(m.formatBytes(0), '0 B');
  assert.equal(m.formatBytes(1000), '1000 B');
  assert.equal(m.formatBytes(1536), '1.5 KiB');
  assert.equal(m.formatBytes(524288), '512 KiB');
  assert.equal(m.formatBytes(529520.6), '517 KiB');
  assert.equal(m.formatBytes(16 * 2 ** 20), '16 MiB');
  assert.equal(m.formatBytes(17151488), '16.4 MiB');
  assert.equal(m.formatBytes(3 * 2 ** 30), '3 GiB');
  assert.equal(m.formatBytes(-2048), '-2 KiB');
  assert.equal(m.formatBytes(null), '—');
  assert.equal(m.formatBytesDelta(524288), '+512 KiB');
  assert.equal(m.formatBytesDelta(0), '0 B');
  assert.equal(m.formatBytesDelta(-12709120), '-12.1 MiB');
  assert.equal(m.formatCountDelta(25), '+25');
  assert.equal(m.formatCountDelta(-1234), '-1,234');
  assert.equal(m.formatCountDelta(0), '0');
});

test('times are read from picoseconds', () => {
  assert.equal(m.formatPs(460420019000), '460 ms');
  assert.equal(m.formatPs(1.5e12), '1.50 s');
  assert.equal(m.formatPs(909000000), '909 µs');
  assert.equal(m.formatPs(500), '500 ps');
  assert.equal(m.formatPs(null), '—');
});

test('time ticks keep the digits that tell them apart', () => {
  // A real JAX GPU capture's 10 ms window starts 9.72 s into the profile.
  assert.deepEqual(m.timeTicks([9.72e12, 9.722e12, 9.724e12, 9.726e12]), ['9.720 s', '9.722 s', '9.724 s', '9.726 s']);
  assert.deepEqual(m.timeTicks([0, 20e9, 40e9, 60e9]), ['0', '20 ms', '40 ms', '60 ms']);
  assert.deepEqual(m.timeTicks([0, 0.5e12, 1e12, 1.5e12]), ['0', '0.5 s', '1.0 s', '1.5 s']);
  assert.deepEqual(m.timeTicks([100, 101, 102]), ['100 ps', '101 ps', '102 ps']);
  assert.deepEqual(m.timeTicks([5e9]), ['5.00 ms']);
  // Ticks 2.5 ms apart keep their half: never "3 ms", "5 ms", "8 ms".
  assert.deepEqual(m.timeTicks([0, 2.5e9, 5e9, 7.5e9]), ['0', '2.5 ms', '5.0 ms', '7.5 ms']);
});

test('wall-clock times read in the browser’s time zone, ticks with the date where the day changes', () => {
  const at = (...parts) => new Date(...parts).getTime() / 1000;
  assert.equal(m.formatDateTime(at(2027, 0, 15, 8, 40, 0)), '2027-01-15 08:40:00');
  assert.equal(m.formatDateTime(at(2027, 0, 15, 8, 40, 0) - 0.001), '2027-01-15 08:40:00');
  assert.equal(m.formatDateTime(null), '—');
  assert.deepEqual(m.clockTicks([at(2027, 0, 15, 23, 30), at(2027, 0, 15, 23, 45), at(2027, 0, 16, 0, 0)]), ['23:30\n2027-01-15', '23:45', '00:00\n2027-01-16']);
  assert.deepEqual(m.clockTicks([at(2027, 0, 15, 8, 0, 0), at(2027, 0, 15, 8, 0, 30)]), ['08:00:00\n2027-01-15', '08:00:30']);
});

test('a session belongs to the TensorBoard run before its last slash; its captures are counted from the run list', () => {
  assert.equal(m.tensorboardRun('job/2027_01_15_00_00_03'), 'job');
  assert.equal(m.tensorboardRun('team/job/2027_01_15_00_00_03'), 'team/job');
  assert.equal(m.tensorboardRun('2027_01_15_00_00_03'), '');
  assert.equal(m.tensorboardRun('2027_01_15_00_00_03_2'), '');
  // At the logdir's top only sessions named by their time are its captures: a PyTorch folder is a run of its own.
  assert.equal(m.tensorboardRun('torch_leak'), 'torch_leak');
  const runs = ['job/a', 'job/b', 'jobs/c', 'job/x/d', 'top1', 'top2', '2027_01_15_00_00_03', '2027_01_15_00_10_03'].map((run) => ({run, hosts: ['h']}));
  assert.equal(m.captureCount(runs, 'job/a'), 2);
  assert.equal(m.captureCount(runs, 'jobs/c'), 1);
  assert.equal(m.captureCount(runs, 'top2'), 1);
  assert.equal(m.captureCount(runs, '2027_01_15_00_10_03'), 2);
  assert.equal(m.measureLabel([{kind: 'profile'}, {kind: 'profile'}]), 'heap floor (outlives every step)');
  assert.equal(m.measureLabel([{kind: 'one_moment'}]), 'live bytes (one moment)');
  assert.equal(m.measureLabel([{kind: 'profile'}, {kind: 'one_moment'}]), 'outlives every step');
  // A profiled heap's captures are not chained: each point is what that capture kept.
  assert.equal(m.measureLabel([{kind: 'profile'}], 'within_captures'), 'kept within its window');
  assert.equal(m.measureLabel([{kind: 'profile'}], 'between_captures'), 'heap floor (outlives every step)');
});

test('addresses: hex parsed, unused gaps between ranges shrunk', () => {
  assert.equal(m.parseAddress('0x7f00a0'), 0x7f00a0);
  assert.equal(m.parseAddress('1234'), 1234);
  const spans = [
    {address: 0x1000, size: 0x100},
    {address: 0x1080, size: 0x100}, // overlaps the first: one range
    {address: 0x7f0000000000, size: 0x200}, // far away
  ];
  const pack = m.packAddresses(spans);
  assert.equal(pack(0x1000), 0);
  assert.equal(pack(0x1080), 0x80);
  const far = pack(0x7f0000000000);
  // The far range follows the first (0x180 bytes) after a gap of a tenth of what is used.
  assert.ok(far > 0x180 && far < 0x180 + 0.1 * (0x180 + 0x200) + 1, `far range packed at ${far}`);
});

test('plugin state round-trips through the URL hash, keeping other keys', () => {
  const hash = m.writeHashState('#leakfinder&other=1&p.leakfinder.run=old', {run: 'tf_leak/2026 x&y', host: 'vm', module: ''});
  assert.ok(hash.startsWith('leakfinder&other=1&'), hash);
  assert.deepEqual(m.readHashState(`#${hash}`), {run: 'tf_leak/2026 x&y', host: 'vm'});
});

test('routes are relative URLs with their arguments encoded', () => {
  assert.equal(m.routeUrl('report', {run: 'a/b c', host: null}), './report?run=a%2Fb+c');
  assert.equal(m.routeUrl('runs'), './runs');
  assert.equal(m.moduleKey({name: 'jit_f(3)', memory_space: 0}), 'jit_f(3)');
  assert.equal(m.moduleKey({name: 'jit_f(3)', memory_space: 1}), 'jit_f(3) (memory space 1)');
});

// `leak` is the growing families' rate; the heap trend is made to disagree with it, so the test shows which one decides.
const allocator = (memory_id, label, verdict, peak, leak = 0) => ({
  memory_id,
  allocator: label,
  verdict,
  peak_bytes_in_use: peak,
  leak_bytes_per_step: leak,
  growth_bytes_per_step: 1e7 - leak,
});

test('allocators are keyed by memory id and labelled with it', () => {
  assert.equal(m.allocatorKey(allocator('2', 'TPU:2')), '2');
  assert.equal(m.allocatorLabel(allocator('2', 'TPU:2')), 'TPU:2 · memory id 2');
  assert.equal(m.allocatorLabel(allocator('GPU_0_bfc', 'GPU_0_bfc')), 'GPU_0_bfc');
  // No memory id on the events: the label stands in for it.
  assert.equal(m.allocatorKey(allocator('', '(no memory id)')), '(no memory id)');
});

test('the tab opens on the allocator the report names as its default, which Python chose', () => {
  const pinned = allocator('gpu_host_bfc', 'gpu_host_bfc', 'no_leak', 9e9);
  const gpu1 = allocator('1', 'GPU:1', 'no_leak', 2e9);
  const named = (a) => ({memory_id: a.memory_id, allocator: a.allocator, rule: 'highest_peak', reason: 'the device memory with the highest peak'});
  assert.equal(m.defaultAllocator({allocators: [gpu1, pinned], default_allocator: named(gpu1)}), gpu1);
  // No rule of its own: it opens on host memory when the report says so.
  assert.equal(m.defaultAllocator({allocators: [gpu1, pinned], default_allocator: named(pinned)}), pinned);
  // Keyed by memory id and label together: the same label under another memory id is another allocator.
  assert.equal(m.defaultAllocator({allocators: [gpu1], default_allocator: {...named(gpu1), memory_id: '2'}}), undefined);
  assert.equal(m.defaultAllocator({allocators: [], default_allocator: null}), undefined);
});

test('the banner drops the verdict word the reason starts with', () => {
  assert.equal(m.reasonText('leak', 'Leak: +512 KiB per step from Mul'), '+512 KiB per step from Mul');
  assert.equal(m.reasonText('no_leak', 'No leak: every buffer was freed'), 'every buffer was freed');
  assert.equal(m.reasonText('inconclusive', 'Not analysed: host0.xplane.pb is truncated'), 'Not analysed: host0.xplane.pb is truncated');
  // A verdict that says whose memory it judged reads on from the banner's word.
  assert.equal(m.reasonText('no_leak', "No leak in PyTorch's CPU allocator: every buffer was freed"), "in PyTorch's CPU allocator: every buffer was freed");
});

test('the peak reads against the capacity when the profile gives one', () => {
  assert.equal(m.formatBytesOf(21.5 * 2 ** 30, 33.6 * 2 ** 30), '21.5 GiB of 33.6 GiB (64%)');
  assert.equal(m.formatBytesOf(1536, 0), '1.5 KiB');
  assert.equal(m.formatBytesOf(1536, 1536), '1.5 KiB'); // no free memory reported: capacity is stack + heap
  assert.equal(m.formatBytesOf(null, 2 ** 30), '—');
});

test('the view state swaps runs A and B, and comparing with none ends the comparison', () => {
  const state = new m.ViewState();
  for (const [key, value] of Object.entries({run: 'a', host: 'h0', allocator: '2', module: 'jit_f(3)'})) state.set(key, value);
  assert.equal(state.comparing, false);
  state.compareWith('b');
  assert.deepEqual(state.cmp, {run: 'b', host: ''});
  state.setCompareHost('h1');
  assert.equal(state.comparing, true);
  state.swap();
  assert.deepEqual(state.sel, {run: 'b', host: 'h1', allocator: '2', module: 'jit_f(3)'});
  assert.deepEqual(state.cmp, {run: 'a', host: 'h0'});
  assert.deepEqual(state.a, {run: 'b', host: 'h1'});
  state.compareWith('');
  assert.equal(state.comparing, false);
});

test("long program ids are cut to their last digits, as the server's labels", () => {
  assert.equal(m.shortProgram('jit_f(8213770315642958113)'), 'jit_f(…8113)');
  assert.equal(m.shortProgram('output 0 of jit_g(-6213431587374541170) (allocation 2)'), 'output 0 of jit_g(…1170) (allocation 2)');
  assert.equal(m.shortProgram('jit_train_step(12)'), 'jit_train_step(12)');
  assert.equal(m.shortProgram('f32[8] (1234567890)'), 'f32[8] (1234567890)');
});

test("a standalone page's buffers of one program buffer, as the buffers route filters them", () => {
  const site = (program, allocation) => ({context: 'program', program, buffer: '', allocation, hlo_op: '', op_name: '', hlo_shape: '', source: '', match: 'exact', candidates: [], stack: []});
  const buffer = (id, s) => ({id, site: s, chunk_bytes: 100 - id, alloc_time_ps: id, free_time_ps: null, op: '', status: 'never_freed', group: null});
  const all = {run: 'r', host: 'h', allocator: 'a', total: 4, sites: [site('', -1), site('jit_f(1)', 3), site('jit_f(1)', 4), site('jit_g(2)', 3)], buffers: [0, 1, 2, 3, 1].map((s, id) => buffer(id, s))};
  const limits = {page_size: 5000, default_page_size: 100}; // a page's limits, as its report's
  const ids = (params) => m.queryBuffers(all, params, limits).body.buffers.map((b) => b.id);
  assert.deepEqual(ids({program: 'jit_f(1)', allocation: 3}), [1, 4]);
  assert.deepEqual(ids({program: 'jit_f(1)'}), [1, 2, 4]);
  assert.deepEqual(ids({program: 'jit_h(9)'}), []);
  assert.equal(m.queryBuffers(all, {allocation: 3}, limits).status, 400);
});

test('a file without times tells no time: allocation numbers, or the moment it was written', () => {
  const order = m.hostClock({event_clock_ps: 1000, step_source: {kind: 'time_windows'}});
  assert.equal(m.tellsTime(order), false);
  assert.equal(m.formatWhen(40000, order), 'allocation #40');
  // A free between allocations 40 and 41.
  assert.equal(m.formatWhen(40002, order), 'after allocation #40');
  assert.deepEqual(m.whenTicks([0, 1000, 1500, 2000], order), ['#0', '#1', '', '#2']);
  assert.match(m.axisLabel(order), /^allocation #/);
  const moment = m.hostClock({one_moment: true, step_source: {kind: 'none'}});
  assert.equal(m.tellsTime(moment), false);
  assert.equal(m.formatWhen(1500, moment), 'the moment the file was written');
  const timed = m.hostClock({event_clock_ps: null, step_source: {kind: 'step_num'}});
  assert.equal(m.tellsTime(timed), true);
  assert.equal(m.formatWhen(460420019000, timed), '460 ms');
  assert.equal(m.axisLabel(timed), 'time');
});
