// Unit tests of the frontend's pure functions: the TypeScript sources are
// bundled by esbuild in memory and imported, no browser needed.

import assert from 'node:assert/strict';
import {dirname, join} from 'node:path';
import {before, test} from 'node:test';
import {fileURLToPath} from 'node:url';
import * as esbuild from 'esbuild';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');
let m;

before(async () => {
  const entry = `
    export * from './format';
    export {packAddresses, parseAddress} from './panels/lifetimes';
    export {readHashState, writeHashState} from './host';
    export {downsample} from './chart';
    export {heldOver} from './panels/timeline';
    export {routeUrl, moduleKey} from './api';
  `;
  const out = await esbuild.build({
    stdin: {contents: entry, resolveDir: SRC, loader: 'ts'},
    bundle: true,
    format: 'esm',
    write: false,
    platform: 'neutral',
    loader: {'.css': 'text'},
    // uPlot touches `window` when loaded; the functions under test do not need it.
    plugins: [
      {
        name: 'stub-uplot',
        setup(build) {
          build.onResolve({filter: /^uplot$/}, () => ({path: 'uplot', namespace: 'stub'}));
          build.onLoad({filter: /.*/, namespace: 'stub'}, () => ({contents: 'export default {};', loader: 'js'}));
        },
      },
    ],
  });
  const code = out.outputFiles[0].text;
  m = await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`);
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

test('downsampling keeps the extremes and bounds the points', () => {
  const x = Array.from({length: 100000}, (_, i) => i);
  const y = x.map((i) => (i === 31337 ? 1e9 : i % 7));
  const [dx, dy] = m.downsample(x, y, 500);
  assert.ok(dx.length <= 2000, `${dx.length} points`);
  assert.ok(dy.includes(1e9), 'the peak survives');
  assert.deepEqual(dx, [...dx].sort((a, b) => a - b));
});

test('routes are relative URLs with their arguments encoded', () => {
  assert.equal(m.routeUrl('report', {run: 'a/b c', host: null}), './report?run=a%2Fb+c');
  assert.equal(m.routeUrl('runs'), './runs');
  assert.equal(m.moduleKey({name: 'jit_f(3)', memory_space: 0}), 'jit_f(3)');
  assert.equal(m.moduleKey({name: 'jit_f(3)', memory_space: 1}), 'jit_f(3) (memory space 1)');
});

test("a suspect's held bytes over time: live from allocation (or the start) until free", () => {
  const spans = [
    {alloc_ps: 10, free_ps: null, bytes: 100},
    {alloc_ps: 20, free_ps: 30, bytes: 50},
    {alloc_ps: null, free_ps: 15, bytes: 7},
  ];
  assert.deepEqual(m.heldOver([0, 10, 15, 20, 29, 30, 99], spans), [7, 107, 100, 150, 150, 100, 100]);
});
