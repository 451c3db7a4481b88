// Browser tests of op families in the Leaks tab: a leak that starts late, one
// buffer regrown every step, a leak of changing shapes, a heap that rose and
// stopped, and the comparison that brings the late leak. Debian chromium
// (playwright-core) against a real `tensorboard` over profiles built here.

import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';
import {openLeaks, runName, startSuite, watch} from './harness.mjs';

// Training loops as tests/unit/analyses/test_suspects_and_verdict.py's Loop builds them: each
// step makes and frees a MatMul temporary, and `keep` adds what stays:
// - fam_clean: a Mul output freed within its step, 40 steps;
// - fam_late: the same Mul output freed until step 20 and kept from then on;
// - fam_regrown: hist = concat([hist, new]), the old buffer freed (30 steps, 64 KiB more each);
// - fam_dynamic: a Mean output [32,n] kept each step, n different every step (30 shapes);
// - fam_plateau: a Lookup output kept in steps 0-29 of 40, then nothing more.
const BUILD_FAMILIES = `
import itertools
import sys
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session

KIB, STEP_PS = 1024, 1_000_000

def loop(steps, keep):
    b = ProfileBuilder("host0")
    addresses = itertools.count(0x10_0000, 0x1_0000)
    def alloc(t, nbytes, op, shape):
        addr = next(addresses)
        b.alloc(t, addr, nbytes, op=op, shape=shape)
        return addr
    for step in range(steps):
        t0 = step * STEP_PS
        b.step(step, t0, t0 + STEP_PS - 1)
        tmp = alloc(t0 + 10, 256 * KIB, "MatMul", "[64,1024]")
        keep(step, t0 + 20, alloc, b)
        b.free(t0 + 30, tmp, 256 * KIB)
    return b

def clean(step, t, alloc, b):
    b.free(t + 5, alloc(t, 256 * KIB, "Mul", "[64,1024]"), 256 * KIB)

def late(step, t, alloc, b):
    out = alloc(t, 256 * KIB, "Mul", "[64,1024]")
    if step < 20:
        b.free(t + 5, out, 256 * KIB)

history = []
def regrown(step, t, alloc, b):
    size = (step + 1) * 64 * KIB
    history.append(alloc(t, size, "ConcatV2", f"[{(step + 1) * 16},1024]"))
    if len(history) > 1:
        b.free(t + 1, history.pop(0), size - 64 * KIB)

LENGTHS = [8 + (step * 7) % 41 for step in range(30)]
def dynamic(step, t, alloc, b):
    alloc(t, 32 * LENGTHS[step] * 4, "Mean", f"[32,{LENGTHS[step]}]")

def plateau(step, t, alloc, b):
    if step < 30:
        alloc(t, 256 * KIB, "Lookup", "[64,1024]")

for run, steps, keep in (("fam_clean", 40, clean), ("fam_late", 40, late), ("fam_regrown", 30, regrown), ("fam_dynamic", 30, dynamic), ("fam_plateau", 40, plateau)):
    write_session(sys.argv[1], run, "2026_01_01_00_00_00", {"host0": loop(steps, keep)})
`;

const pages = [];
let suite;
before(async () => {
  suite = await startSuite([], BUILD_FAMILIES);
});
after(() => suite?.stop());

const run = (name) => runName(suite.logdir, name);

async function open(name) {
  const page = await suite.browser.context.newPage();
  pages.push(watch(page));
  return openLeaks(page, suite.tb.base, name);
}

const text = (frame, selector) => frame.$eval(selector, (e) => e.textContent ?? '');
/** The groups table's header labels and first row, cell by header. */
async function topFamily(frame) {
  await frame.waitForSelector('[data-panel=families] tbody tr[data-key]');
  const heads = await frame.$$eval('[data-panel=families] thead th', (ths) => ths.map((th) => (th.textContent ?? '').replace(/ [▲▼]$/, '')));
  const cells = await frame.$$eval('[data-panel=families] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  return Object.fromEntries(heads.map((h, i) => [h, cells[i]]));
}

test('a leak that starts late: the verdict says from when, the family row shows its onset and its rate from then on', async () => {
  const frame = await open(run('fam_late'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  assert.match(await text(frame, '.lf-verdict-reason'), /^in TensorFlow's GPU:0 allocator \(GPU_0_bfc\): \+256 KiB per step from Mul \[64,1024\] output from step 20 on, 20 of 40 steps never freed/);
  const top = await topFamily(frame);
  assert.equal(top.Kind, 'growing');
  assert.equal(top.Family, 'Mul [64,1024] output');
  assert.equal(top.Onset, 'from step 20');
  assert.equal(top.Shapes, '1');
  assert.equal(top.Buffers, '20');
  assert.equal(top['Per step'], '+256 KiB');
  assert.equal(top.Steps, '20 (20–39)');
  assert.match(await text(frame, '[data-panel=families] h2'), /^Families \(1; 1 growing\)/);
  assert.match(await frame.$eval('[data-panel=families] p.lf-muted [data-info]', (e) => e.title), /^A family is .*never-freed buffers/);
  // The heap's trend counts every allocation from the first step: about half the family's rate. It is no second
  // rate beside the verdict's: the card shows the heap at the window's ends, the trend is in its tooltip, neutral.
  const heap = await frame.$('[data-card=heap]');
  assert.ok(heap, 'the heap card');
  assert.match(await heap.$eval('.lf-card-value', (e) => e.textContent), /^[\d.]+ (B|KiB|MiB) → [\d.]+ (B|KiB|MiB)$/);
  assert.match(await heap.$eval('[data-info]', (e) => e.title), /fitted over every step: every allocation, in the allocator’s chunks\. Not the leak rate.* Fitted: \+13\d KiB\/step\.$/);
  assert.equal(await heap.evaluate((e) => e.classList.contains('lf-card-bad')), false, 'not coloured as a leak');
});

test('one buffer regrown every step: the regrown wording, the marker, and the family line on the timeline', async () => {
  const frame = await open(run('fam_regrown'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'leak');
  assert.match(await text(frame, '.lf-verdict-reason'), /^in TensorFlow's GPU:0 allocator \(GPU_0_bfc\): \+64 KiB per step from one buffer regrown each step by ConcatV2, now \[480,1024\]/);
  const top = await topFamily(frame);
  assert.equal(top.Kind, 'growing regrown');
  assert.equal(top.Family, 'one buffer regrown each step by ConcatV2, now [480,1024]');
  assert.equal(top.Shapes, '30');
  assert.equal(top.Buffers, '1', 'only the newest buffer is never freed');
  assert.equal(top['Per step'], '+64 KiB');
  const marker = await frame.$('[data-panel=families] tbody tr:first-child [data-regrown]');
  assert.match(await marker.getAttribute('title'), /freeing one buffer and making it again larger/);
  assert.match(await frame.$eval('[data-panel=families] tbody tr:first-child [data-family]', (e) => e.title), /op ConcatV2, shapes \[\*,1024\]/);
  // Selected: the timeline draws the family's live bytes; the lifetime chart highlights its one never-freed buffer.
  await frame.waitForSelector('[data-chart=timeline] canvas');
  const grouped = frame.page().waitForResponse((r) => r.url().includes('/timeline?') && r.url().includes('family=0'));
  await frame.click('[data-panel=families] tbody tr:first-child');
  const body = await (await grouped).json();
  const held = body.family_bytes;
  // 64 KiB in step 0, 30 x 64 KiB at the end, though only one buffer is never freed.
  assert.ok(held[held.length - 1] >= 25 * held.find((v) => v > 0), `the regrown family holds more and more: ${held}`);
  await frame.waitForSelector('[data-chart=lifetimes][data-highlight-family="0"]');
  const legend = await frame.$$eval('[data-chart=timeline] .u-legend .u-series .u-label', (ls) => ls.map((l) => l.textContent));
  assert.ok(legend.includes('selected family (live bytes)'), legend.join(' | '));
  assert.match(await text(frame, '[data-panel=lifetimes] .lf-chart-note'), /Highlighted: 1 never-freed buffer of the family one buffer regrown each step by ConcatV2, now \[480,1024\]\.$/);
});

test('a leak of changing shapes is one family with its shape pattern and number of shapes', async () => {
  const frame = await open(run('fam_dynamic'));
  assert.match(await text(frame, '.lf-verdict-reason'), /from Mean \[32,\*\] output, 30 shapes, 30 of 30 steps never freed/);
  const top = await topFamily(frame);
  assert.equal(top.Family, 'Mean [32,*] output, 30 shapes');
  assert.equal(top.Shapes, '30');
  assert.equal(top.Buffers, '30');
  assert.equal(await frame.$eval('[data-panel=families] tbody tr:first-child td:nth-child(5) span', (e) => e.title), 'newest [32,47]');
  // The filter finds the family by one of its shapes' newest, not only by its pattern.
  await frame.fill('[data-panel=families] input[type=search]', '[32,47]');
  await frame.waitForFunction(() => document.querySelector('[data-panel=families] .lf-pager [role=status]')?.textContent === '1–1 of 1');
  // The peak breakdown's rows of exact shapes point at their family.
  await frame.waitForSelector('[data-panel=breakdown] tbody tr');
  const linked = await frame.$$eval('[data-panel=breakdown] tbody tr', (trs) => trs.filter((tr) => tr.cells[0].textContent === 'Mean').map((tr) => tr.cells[8].textContent));
  // The family by its kind and label, as the families table names it (no "#0" the page says nowhere else).
  assert.ok(linked.length > 1 && linked.every((g) => g === 'growing Mean [32,*] output, 30 shapes'), JSON.stringify(linked));
});

test('a heap that rose and stopped: no leak, and the heap figure says what it measures', async () => {
  const frame = await open(run('fam_plateau'));
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'no_leak');
  assert.match(await text(frame, '.lf-verdict-reason'), /The heap in use at step ends fits \+\d+ KiB per step over the window \(all allocations\)/);
  const top = await topFamily(frame);
  assert.deepEqual([top.Kind, top.Family, top.Onset, top['Per step']], ['bounded', 'Lookup [64,1024] output', '', '0 B']);
  const kind = await frame.$eval('[data-panel=families] tbody tr:first-child .lf-kind', (e) => e.title);
  assert.match(kind, /stopped rising or fell back/);
  const heap = await frame.$('[data-card=heap]');
  assert.match(await heap.$eval('[data-info]', (e) => e.title), /every allocation.*Not the leak rate/);
  assert.equal(await heap.evaluate((e) => e.classList.contains('lf-card-bad')), false, 'not coloured as a leak');
});

test('compared with the clean run, the late leak is a new family with its label and B’s onset', async () => {
  const page = await suite.browser.context.newPage();
  pages.push(watch(page));
  const clean = run('fam_clean');
  const late = run('fam_late');
  await page.goto(`${suite.tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(clean)}&p.leakfinder.compare=${encodeURIComponent(late)}`);
  const frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000})).contentFrame();
  await frame.waitForSelector(`.lf-compare[data-run-a="${clean}"][data-run-b="${late}"]`, {timeout: 90_000});
  await frame.waitForSelector('[data-table=compare-families] tbody tr');
  const heads = await frame.$$eval('[data-table=compare-families] thead th', (ths) => ths.map((th) => (th.textContent ?? '').replace(/ [▲▼]$/, '')));
  const cells = await frame.$$eval('[data-table=compare-families] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  const row = Object.fromEntries(heads.map((h, i) => [h, cells[i]]));
  assert.deepEqual([row.Status, row.Family, row['Onset B'], row['New leak']], ['new', 'Mul [64,1024] output', 'from step 20', 'new leak']);
  assert.equal(row['Per step B'], '+256 KiB');
  // The heap's trend, no leak rate, is in the peak card's tooltip: not a second rate beside B's.
  assert.match(await frame.$eval('[data-delta="Peak heap in use"] [data-info]', (e) => e.title), /^The heap’s trend at step ends: .*every allocation/);
  await frame.waitForSelector('[data-chart=compare-timeline][data-drawn=ab] canvas', {timeout: 60_000});
});

test('no request under /data/plugin/leakfinder/ failed', () => {
  const failures = pages.flatMap((p) => p.failures);
  assert.deepEqual(failures, [], `failed plugin requests:\n${failures.join('\n')}`);
  assert.ok(pages.some((p) => p.pluginRequests.length > 0));
});
