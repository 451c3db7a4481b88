// Browser tests of where buffers were made: the Where column of the groups,
// peak breakdown and buffers tables, its hover text (the Python stack and the
// program buffer), its link into the static view with that buffer allocation
// selected, and the hint shown once when the profile has no Python frames.
// Debian chromium (playwright-core) against a real `tensorboard` over the real
// JAX 0.8 GPU GEMM profile of ../shared/profiles/jax_gpu (recorded by others,
// MIT licence, see ../shared/profiles/README.md) and the demo's TensorFlow capture.

import assert from 'node:assert/strict';
import {existsSync} from 'node:fs';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {openLeaks, runName, SHARED_PROFILES, startSuite, watch} from './harness.mjs';

const GEMM = 'jax_gpu/amd_jax08_gemm';
const GEMM_RUN = 'amd_jax08_gemm/jax08_gemm';
const noGemm = !existsSync(join(SHARED_PROFILES, GEMM)) && `${join(SHARED_PROFILES, GEMM)} is not here (the shared profiles lie beside the repository)`;

let suite;
const pages = [];
before(async () => {
  suite = await startSuite(['tf_leak'], null, [GEMM]);
});
after(() => suite?.stop());

async function open(run) {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  pages.push(seen);
  const frame = await openLeaks(page, suite.tb.base, run);
  return {page, frame, seen};
}

/** The Where cells (their `.lf-where` span) of a panel's table, row by row, found by the column's header. */
async function whereCells(frame, panel) {
  await frame.waitForSelector(`[data-panel=${panel}] tbody tr[data-key]`);
  const heads = await frame.$$eval(`[data-panel=${panel}] table.lf-table thead th`, (ths) => ths.map((th) => (th.textContent ?? '').replace(/ [▲▼]$/, '')));
  const column = heads.indexOf('Where');
  assert.ok(column >= 0, `${panel} has a Where column: ${heads}`);
  return frame.$$eval(
    `[data-panel=${panel}] table.lf-table tbody tr[data-key] > td:nth-child(${column + 1})`,
    (tds) =>
      tds.map((td) => {
        const span = td.querySelector('.lf-where');
        const link = td.querySelector('a[data-site-link]');
        return {
          text: td.textContent ?? '',
          where: span?.getAttribute('data-where') ?? null,
          title: span?.getAttribute('title') ?? '',
          link: link ? {program: link.dataset.program, allocation: link.dataset.allocation, href: link.getAttribute('href')} : null,
        };
      }),
  );
}

test('the peak breakdown names the line of the JAX GEMM, its stack and program buffer on hover', {skip: noGemm}, async () => {
  const {frame} = await open(GEMM_RUN);
  assert.equal(await frame.$eval('[data-select=allocator]', (s) => s.value), 'GPU_0_bfc');
  const cells = await whereCells(frame, 'breakdown');
  const [first, second] = cells;
  assert.equal(first.text, 'generate_gemm_trace.py:37');
  assert.equal(first.where, 'generate_gemm_trace.py:37');
  assert.ok(first.title.includes('generate_gemm_trace.py:31 in run_gemms'), first.title);
  assert.ok(first.title.includes('dot_general bf16[8192,8192]'), first.title);
  assert.ok(first.title.includes('output 0 of jit_dot(49)'), first.title);
  assert.ok(first.title.includes('op name: jit(dot)/dot_general'), first.title);
  assert.ok(first.title.includes('source: /workspace/traces/generate_gemm_trace.py:37'), first.title);
  assert.deepEqual({program: first.link?.program, allocation: first.link?.allocation}, {program: 'jit_dot(49)', allocation: '0'});
  // The link is an address too (a new tab opens the same view): the module and its allocation in the hash.
  const hash = new URLSearchParams(new URL(first.link.href).hash.slice(1));
  assert.equal(hash.get('p.leakfinder.module'), 'jit_dot(49)');
  assert.equal(hash.get('p.leakfinder.allocation'), '0');
  assert.equal(hash.get('p.leakfinder.run'), GEMM_RUN);
  // Same-name programs (jit_broadcast_in_dim 45 and 47 have outputs of one size) are told apart by the program id
  // of the kernels each execution launched: no row is ambiguous.
  assert.match(second.title, /temporaries \(2 buffers\) of jit_dot\(49\)/);
  for (const cell of cells) assert.ok(!cell.title.includes('ambiguous'), cell.title);
  // Every frame of this profile is there: no hint to capture them.
  assert.equal(await frame.$('[data-hint=stack]'), null);
});

test("the breakdown's link opens the static view of jit_dot(49) with allocation 0 selected", {skip: noGemm}, async () => {
  const {page, frame} = await open(GEMM_RUN);
  await frame.waitForSelector('[data-panel=breakdown] tbody tr[data-key]');
  await frame.click('[data-panel=breakdown] tbody tr:first-child a[data-site-link]');
  const panel = await frame.waitForSelector('[data-panel=static] [data-module="jit_dot(49)"][data-selected-allocation="0"]');
  assert.equal(await frame.$eval('[data-panel=static] h2', (h) => h.textContent), 'Static view: jit_dot(49)');
  assert.equal(await frame.$eval('[data-select=module]', (s) => s.value), 'jit_dot(49)');
  // The allocation's buffers, listed first: the dot's bf16[8192,8192] output.
  await panel.waitForSelector('[data-selected="0"] [data-table=selected-buffer] tbody tr[data-key]');
  const selected = await panel.$$eval('[data-selected="0"] [data-table=selected-buffer] tbody tr[data-key]', (trs) => trs.map((tr) => Array.from(tr.cells, (td) => td.textContent)));
  assert.equal(selected.length, 1);
  assert.deepEqual(selected[0].slice(0, 5), ['custom-call.1', 'jit(dot)/dot_general', 'custom-call', 'bf16[8192,8192]', '128 MiB']);
  assert.equal(selected[0][5], 'live-out');
  // Its row of the whole-program buffers is marked, and its block drawn in the accent colour.
  const marked = await panel.$$eval('[data-table=whole-program] tbody tr.lf-selected-buffer', (trs) => trs.map((tr) => tr.cells[0].textContent));
  assert.deepEqual(marked, ['custom-call.1']);
  assert.equal(await panel.$eval('[data-chart=static-blocks]', (e) => e.dataset.selected), '1');
  // Scrolled to it.
  await frame.waitForFunction(() => {
    const box = document.querySelector('[data-selected="0"]')?.getBoundingClientRect();
    return box && box.top >= -1 && box.top < window.innerHeight;
  });
  // The view is in the URL: a reload opens the same module and buffer.
  const hash = new URLSearchParams(new URL(page.url()).hash.slice(1));
  assert.equal(hash.get('p.leakfinder.module'), 'jit_dot(49)');
  assert.equal(hash.get('p.leakfinder.allocation'), '0');
  await page.reload();
  const again = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]')).contentFrame();
  await again.waitForSelector('[data-panel=static] [data-module="jit_dot(49)"][data-selected-allocation="0"] [data-selected="0"]');
  // Another module from the selector drops the selection.
  await again.selectOption('[data-select=module]', 'jit_dot(79)');
  await again.waitForSelector('[data-panel=static] [data-module="jit_dot(79)"]');
  assert.equal(await again.$('[data-panel=static] [data-selected-allocation]'), null);
  assert.equal(new URLSearchParams(new URL(page.url()).hash.slice(1)).get('p.leakfinder.allocation'), null);
});

test("the buffers table's Where column on the JAX GEMM: each buffer's line and program buffer", {skip: noGemm}, async () => {
  const {frame} = await open(GEMM_RUN);
  const cells = await whereCells(frame, 'lifetimes');
  assert.ok(cells.length > 0);
  // Largest first: the outputs of the 16384x4096 dot, made at line 37 under run_gemms.
  const [first] = cells;
  assert.equal(first.text, 'generate_gemm_trace.py:37');
  assert.ok(first.title.includes('output 0 of jit_dot(79)'), first.title);
  assert.ok(first.title.includes('stack: generate_gemm_trace.py:31 in run_gemms'), first.title);
  assert.ok(first.title.includes('dot_general bf16[16384,4096]'), first.title);
  assert.deepEqual({program: first.link?.program, allocation: first.link?.allocation}, {program: 'jit_dot(79)', allocation: '0'});
  for (const cell of cells) assert.match(cell.where, /^generate_gemm_trace\.py:\d+/, JSON.stringify(cell));
  // A temporaries block: its program buffer and the buffer's HLO shape.
  const temporaries = cells.find((c) => c.title.includes('temporaries'));
  assert.ok(temporaries, 'a temporaries block among the largest buffers');
  assert.match(temporaries.title, /temporaries \(2 buffers\) of jit_dot\(\d+\) \(allocation \d+\)\ndot_general s8\[\d+\]/);
  // Pinned host memory: a transfer, with its line but no program buffer to link to.
  await frame.selectOption('[data-select=allocator]', 'xla_gpu_host_bfc');
  await frame.waitForFunction(() => document.querySelector('[data-select=allocator]')?.value === 'xla_gpu_host_bfc' && document.querySelector('main.lf-root')?.dataset.state === 'ready');
  const [transfer] = await whereCells(frame, 'lifetimes');
  assert.equal(transfer.text, 'generate_gemm_trace.py:31 in run_gemms');
  assert.ok(transfer.title.includes('transfer to device, outside any program'), transfer.title);
  assert.equal(transfer.link, null);
});

test('a TensorFlow capture without Python frames: empty Where cells and the hint, once', async () => {
  const {frame} = await open(runName(suite.logdir, 'tf_leak'));
  const hints = await frame.$$eval('[data-hint=stack]', (ps) => ps.map((p) => p.textContent ?? ''));
  assert.equal(hints.length, 1, 'one hint, not one per row');
  assert.match(hints[0], /python_tracer=True/);
  assert.ok(await frame.$('[data-panel=families] [data-hint=stack]'), 'beside the op families');
  for (const panel of ['families', 'breakdown', 'lifetimes']) {
    const cells = await whereCells(frame, panel);
    assert.ok(cells.length > 0, panel);
    assert.deepEqual(
      cells.filter((c) => c.text !== '' || c.link !== null),
      [],
      `${panel}: every Where cell is empty`,
    );
  }
});

test('no failed requests, dialogs or page errors', () => {
  for (const seen of pages) {
    assert.deepEqual(seen.failures, []);
    assert.deepEqual(seen.dialogs, []);
    assert.deepEqual(seen.errors, []);
  }
});
