// Browser tests of issue 42's "a page that tells the truth once": one figure per fact, the finding first, hints
// that agree with the page, the Where column, plurals. On the demo captures and the real profiles recorded by
// others in ../shared/profiles (AMD-AGI/TraceLens's, MIT licence: see its README), skipped when those are absent.

import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import {existsSync, readFileSync, readdirSync} from 'node:fs';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {openLeaks, PYTHON, REPO, runName, SHARED_PROFILES, startSuite, watch} from './harness.mjs';

const CONV8 = 'jax_gpu/amd_jax08_conv8';
const QWEN = 'torch/tracelens_qwen_h100';
const noConv8 = !existsSync(join(SHARED_PROFILES, CONV8)) && `${join(SHARED_PROFILES, CONV8)} is not here`;
const noQwen = !existsSync(join(SHARED_PROFILES, QWEN)) && `${join(SHARED_PROFILES, QWEN)} is not here`;
/** What capture_tf.py leaked, as it wrote it beside the profile. */
const TF_LEAK = JSON.parse(readFileSync(join(REPO, 'demo_logs', 'tf_leak', 'capture.json'), 'utf8'));

let suite;
const pages = [];
before(async () => {
  suite = await startSuite(['tf_leak', 'tf_fixed', 'jax_liveout', 'jax_clean'], null, [CONV8, QWEN]);
});
after(() => suite?.stop());

async function open(run) {
  const page = await suite.browser.context.newPage();
  pages.push(watch(page));
  return openLeaks(page, suite.tb.base, run);
}

const text = (frame, selector) => frame.$eval(selector, (e) => e.textContent ?? '');
/** What the page says, as a reader sees it (closed <details> and tooltips left out). */
const shown = (frame) => frame.evaluate(() => document.querySelector('main').innerText);

/** 1536 -> "1.5 KiB": the tab's rule (format.ts), for figures the test computes from the capture program's own. */
function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 || v >= 100 || Number.isInteger(v) ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}

/** Nouns the page counts: "1 buffers" would be wrong for each. */
const PLURAL_AFTER_ONE = /(?<![\d.,])\b1 (buffers|rows|memory events|events|points|families|captures|steps|allocators|files|findings|frees|groups|shapes|modules|hosts|buffer groups)\b|\w\(s\)|\(ies\)/g;

function plurals(textShown) {
  return [...textShown.matchAll(PLURAL_AFTER_ONE)].map((m) => textShown.slice(Math.max(0, m.index - 40), m.index + 40));
}

test('tf_leak: one leak rate on the page, tensor bytes with chunks beside them, balance and XProf counts explained', async () => {
  const run = runName(suite.logdir, 'tf_leak');
  const frame = await open(run);
  const rate = `+${bytes(TF_LEAK.leaked_bytes_per_step)}`;
  // The verdict names the rate, and every rate above the timeline is that one: the heap's trend is no card of its own.
  const top = (await frame.$eval('.lf-verdict', (e) => e.innerText)) + (await frame.$eval('.lf-cards', (e) => e.innerText));
  const rates = [...top.matchAll(/([+-]?[\d.]+ [KMG]?i?B) ?(?:\/ ?|per )step/g)].map((m) => m[1]);
  assert.ok(rates.length > 0 && rates.every((r) => r === rate), `rates above the timeline: ${rates}`);
  assert.doesNotMatch(top, /not a leak rate/);
  const heap = await frame.$('[data-card=heap]');
  assert.match(await heap.$eval('[data-info]', (e) => e.title), /Not the leak rate.* Fitted: \+\d+ KiB\/step\.$/);
  assert.equal(await heap.evaluate((e) => e.className), 'lf-card', 'neutral');
  // The growing family: its never-freed tensors in tensor bytes, the allocator's chunks beside them, one rate.
  const family = TF_LEAK.steps * TF_LEAK.leaked_bytes_per_step;
  await frame.waitForSelector('[data-panel=families] tbody tr[data-key]');
  const heads = await frame.$$eval('[data-panel=families] thead th', (ths) => ths.map((th) => (th.textContent ?? '').replace(/ [▲▼]$/, '')));
  assert.ok(!heads.includes('Allocated') && !heads.includes('Allocated per step'), heads.join(' | '));
  const row = await frame.$$eval('[data-panel=families] tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  const cell = (h) => row[heads.indexOf(h)];
  assert.match(cell('Never freed'), new RegExp(`^${bytes(family).replace('.', '\\.')} \\(([\\d.]+ MiB)\\)$`));
  assert.equal(cell('Per step'), rate);
  // The card's never-freed bytes are in tensor bytes too, the chunks in its detail; both from the same answer.
  const report = await (await fetch(`${suite.tb.base}data/plugin/leakfinder/report?run=${encodeURIComponent(run)}`)).json();
  const a = report.runs[0].hosts[0].allocators[0];
  assert.ok(a.never_freed_requested_bytes >= family && a.never_freed_bytes > a.never_freed_requested_bytes);
  const kept = await frame.$('[data-card=never-freed]');
  assert.equal(await kept.$eval('.lf-card-value', (e) => e.textContent), bytes(a.never_freed_requested_bytes));
  assert.match(await kept.$eval('.lf-card-detail', (e) => e.textContent), new RegExp(`^${a.never_freed_count} buffers .*; ${bytes(a.never_freed_bytes).replace('.', '\\.')} in the allocator’s chunks$`));
  // The balance and the never-freed count disagree by the frees of buffers from before the window: said so.
  assert.equal(a.balance, a.never_freed_count - a.freed_before_window_count);
  const balance = await text(frame, '[data-card=allocations] .lf-card-detail');
  assert.equal(balance, `balance +${a.balance}: ${a.never_freed_count} never freed, less ${a.freed_before_window_count === 1 ? '1 free of a buffer' : `${a.freed_before_window_count} frees of buffers`} from before the window`);
  assert.equal(await frame.$eval('[data-card=allocations]', (e) => e.className), 'lf-card', 'counts are not judged');
  // XProf's Memory Profile counts only the events it samples for its chart: its own converter says how many.
  const [file] = readdirSync(join(suite.logdir, run.replace('/', '/plugins/profile/'))).filter((f) => f.endsWith('.xplane.pb'));
  const oracle = spawnSync(
    PYTHON,
    ['-c', `import sys, json; sys.path.insert(0, "tests/support"); from xprof_oracle import xprof_tool; p = xprof_tool(sys.argv[1], "memory_profile")["memoryProfilePerAllocator"][sys.argv[2]]; s = p["sampledTimelineSnapshots"]; print(json.dumps([sum(x["activityMetadata"]["memoryActivity"] == k for x in s) for k in ("ALLOCATION", "DEALLOCATION")]))`, join(suite.logdir, run.replace('/', '/plugins/profile/'), file), a.memory_id],
    {cwd: REPO, encoding: 'utf8'},
  );
  assert.equal(oracle.status, 0, oracle.stderr);
  const [xprofAllocs, xprofFrees] = JSON.parse(oracle.stdout);
  assert.notDeepEqual([xprofAllocs, xprofFrees], [a.num_allocations, a.num_deallocations]);
  const note = await text(frame, '[data-note=xprof-counts]');
  assert.match(note, new RegExp(`only the ${(xprofAllocs + xprofFrees).toLocaleString('en-US')} events it samples for its timeline chart`));
  assert.match(note, new RegExp(`all ${(a.num_allocations + a.num_deallocations).toLocaleString('en-US')} memory events of the allocator, over the whole profile`));
  assert.deepEqual(plurals(await shown(frame)), []);
});

test('tf_leak: the verdict names its family as a button, and a peak breakdown row selects its family', async () => {
  const frame = await open(runName(suite.logdir, 'tf_leak'));
  await frame.waitForSelector('[data-panel=families] tbody tr[data-key]');
  await frame.waitForSelector('[data-chart=timeline] canvas');
  const button = await frame.$('.lf-verdict-reason button[data-select-family]');
  assert.equal(await button.textContent(), `${TF_LEAK.leaked_op} ${TF_LEAK.leaked_shape} ${TF_LEAK.leaked_region}`);
  const key = await button.getAttribute('data-select-family');
  const drawn = frame.page().waitForResponse((r) => r.url().includes('/timeline?') && r.url().includes(`family=${key}`));
  await button.click();
  await drawn;
  assert.equal(await frame.$eval(`[data-panel=families] tbody tr[data-key="${key}"]`, (tr) => tr.getAttribute('aria-selected')), 'true');
  await frame.waitForSelector(`[data-chart=lifetimes][data-highlight-family="${key}"]`);
  // A breakdown row of another family selects that one; its Family cell names it as the families table does.
  const other = await frame.$('[data-panel=breakdown] tbody tr:has([data-family-of]:not([data-family-of="' + key + '"]))');
  const otherKey = await other.$eval('[data-family-of]', (e) => e.dataset.familyOf);
  const label = await frame.$eval(`[data-panel=families] tbody tr[data-key="${otherKey}"] [data-family]`, (e) => e.textContent);
  assert.match(await other.$eval('[data-family-of]', (e) => e.textContent), new RegExp(`${label.replace(/[[\]]/g, '\\$&')}$`));
  await other.click();
  await frame.waitForSelector(`[data-panel=families] tbody tr[data-key="${otherKey}"][aria-selected=true]`);
  await frame.waitForSelector(`[data-chart=lifetimes][data-highlight-family="${otherKey}"]`);
});

test('tf_leak: a buffer row selects its family, by click and by keyboard; the other buffers fade apart from the before-the-window grey', async () => {
  const frame = await open(runName(suite.logdir, 'tf_leak'));
  await frame.waitForSelector('[data-panel=families] tbody tr[data-key]');
  await frame.waitForSelector('[data-chart=lifetimes][data-drawn]');
  await frame.selectOption('[data-panel=lifetimes] select[aria-label="Buffer status"]', 'never_freed');
  const row = await frame.waitForSelector('[data-panel=lifetimes] tbody tr[data-key]:has([data-family-of])');
  const key = await row.$eval('[data-family-of]', (e) => e.dataset.familyOf);
  const buffer = await row.getAttribute('data-key');
  // The Family cell names the family as the families table does, no "#0" found nowhere else.
  const label = await frame.$eval(`[data-panel=families] tbody tr[data-key="${key}"] [data-family]`, (e) => e.textContent);
  assert.match(await row.$eval('[data-family-of]', (e) => e.textContent), new RegExp(`${label.replace(/[[\]]/g, '\\$&')}$`));
  assert.doesNotMatch(await frame.$eval('[data-panel=lifetimes] table', (t) => t.innerText), /#\d/);
  await row.click();
  await frame.waitForSelector(`[data-panel=families] tbody tr[data-key="${key}"][aria-selected=true]`);
  await frame.waitForSelector(`[data-chart=lifetimes][data-highlight-family="${key}"]`);
  await frame.waitForSelector(`[data-panel=lifetimes] tbody tr[data-key="${buffer}"][aria-selected=true]`);
  // The table lists that family's never-freed buffers now, and says so.
  assert.equal(await text(frame, '[data-panel=lifetimes] [data-heading=buffers]'), `Never-freed buffers of the selected family, ${TF_LEAK.leaked_op} ${TF_LEAK.leaked_shape} ${TF_LEAK.leaked_region}: select it again to list every buffer`);
  // The legend says what the faded bars are, in a colour that is not the before-the-window grey.
  const swatches = await frame.$$eval('[data-panel=lifetimes] .lf-legend > span', (ss) =>
    ss.map((s) => ({text: s.textContent, hidden: s.hidden, color: getComputedStyle(s.querySelector('.lf-swatch')).backgroundColor})),
  );
  const faded = swatches.find((s) => s.text.startsWith('the other buffers'));
  const before = swatches.find((s) => s.text === 'allocated before the window');
  assert.ok(faded && !faded.hidden, JSON.stringify(swatches));
  assert.notEqual(faded.color, before.color);
  assert.equal(await frame.$eval('[data-chart=lifetimes]', (e) => e.dataset.faded), faded.color);
  // By keyboard: Enter on the selected row clears the family, Space selects it again.
  const again = await frame.$(`[data-panel=lifetimes] tbody tr[data-key="${buffer}"]`);
  await again.focus();
  await frame.page().keyboard.press('Enter');
  await frame.waitForSelector('[data-chart=lifetimes][data-highlight-family=""]');
  await frame.waitForSelector(`[data-panel=families] tbody tr[data-key="${key}"][aria-selected=false]`);
  assert.equal(await frame.$eval('[data-panel=lifetimes] .lf-legend > span:has(.lf-swatch[style*="faded"])', (s) => s.hidden), true, 'no faded bars, no faded entry');
  const focused = await frame.$(`[data-panel=lifetimes] tbody tr[data-key="${buffer}"]`);
  await focused.focus();
  await frame.page().keyboard.press(' ');
  await frame.waitForSelector(`[data-chart=lifetimes][data-highlight-family="${key}"]`);
  await frame.waitForSelector(`[data-panel=families] tbody tr[data-key="${key}"][aria-selected=true]`);
  // Another family chosen in the families table: the buffer row is no longer the selection.
  const other = await frame.$eval('[data-panel=families] tbody tr[data-key]:not([aria-selected=true])', (tr) => tr.dataset.key);
  await frame.click(`[data-panel=families] tbody tr[data-key="${other}"]`);
  await frame.waitForSelector(`[data-chart=lifetimes][data-highlight-family="${other}"]`);
  await frame.waitForSelector('[data-panel=lifetimes] tbody tr[data-key]');
  assert.equal(await frame.$(`[data-panel=lifetimes] tbody tr[aria-selected=true]`), null);
});

/** Focuses `selector` from the keyboard (Tab from the element before it), as a keyboard user reaches it. */
async function tabTo(frame, selector) {
  await frame.focus(selector);
  await frame.page().keyboard.press('Shift+Tab');
  await frame.page().keyboard.press('Tab');
  assert.ok(await frame.$eval(selector, (e) => document.activeElement === e && e.matches(':focus-visible')), `${selector} focused from the keyboard`);
}

/** The tooltip's rows in `chart`, label to value, and its title. */
const tooltipOf = (frame, chart) =>
  frame.$eval(`[data-chart=${chart}] .lf-tooltip`, (t) => ({
    hidden: t.hidden,
    title: t.querySelector('strong')?.textContent ?? '',
    rows: Object.fromEntries([...t.querySelectorAll('dt')].map((dt) => [dt.textContent, dt.nextElementSibling?.textContent ?? ''])),
  }));

test('tf_leak: the charts by keyboard: focus ring at 3:1, the arrow keys, Home and End move a cursor whose tooltip says what the pointer’s would', async () => {
  const page = await suite.browser.context.newPage();
  pages.push(watch(page));
  const answers = [];
  page.on('response', (r) => {
    if (r.url().includes('/timeline?') && !r.url().includes('family=')) answers.push(r.json());
  });
  const frame = await openLeaks(page, suite.tb.base, runName(suite.logdir, 'tf_leak'));
  await frame.waitForSelector('[data-chart=timeline] canvas');
  const data = await answers[answers.length - 1];
  const n = data.time_ps.length;
  assert.ok(n > 20, `${n} samples`);

  await tabTo(frame, '[data-chart=timeline]');
  // The focus ring: the --lf-focus outline (3:1 on the page and cards: contrast.test.mjs).
  const ring = await frame.$eval('[data-chart=timeline]', (e) => {
    const probe = document.createElement('span');
    probe.style.color = 'var(--lf-focus)';
    document.body.append(probe);
    const focus = getComputedStyle(probe).color;
    probe.remove();
    const style = getComputedStyle(e);
    return {style: style.outlineStyle, width: style.outlineWidth, color: style.outlineColor, focus};
  });
  assert.deepEqual([ring.style, ring.width, ring.color], ['solid', '2px', ring.focus]);
  // Focused, the cursor is on the first sample; End, Left, Shift+Right and Home move it.
  const hover = () => frame.$eval('[data-chart=timeline]', (e) => Number(e.dataset.hover));
  assert.equal(await hover(), 0);
  await page.keyboard.press('End');
  assert.equal(await hover(), n - 1);
  await page.keyboard.press('ArrowLeft');
  assert.equal(await hover(), n - 2);
  await page.keyboard.press('Home');
  await page.keyboard.press('Shift+ArrowRight');
  await page.keyboard.press('ArrowRight');
  assert.equal(await hover(), 11);
  // The tooltip: the time, the step, the heap, and the event's size, op and line, as the answer has them.
  const tip = await tooltipOf(frame, 'timeline');
  assert.equal(tip.hidden, false);
  assert.match(tip.title, /^At [\d.]+ (ps|ns|µs|ms|s)$/);
  assert.match(tip.rows.step, /^step \d+$|^—$/);
  assert.equal(tip.rows['heap in use'], bytes(data.heap_bytes[11]));
  const event = Object.keys(tip.rows).find((k) => k.startsWith('event at '));
  assert.ok(event, JSON.stringify(tip.rows));
  const size = data.event_bytes[11];
  assert.equal(tip.rows[event], `${size >= 0 ? '+' : '-'}${bytes(Math.abs(size))} ${size >= 0 ? 'allocated' : 'freed'}`);
  assert.equal(tip.rows.op, data.event_op[11] || '(not recorded)');
  if (data.event_where[11]) assert.equal(tip.rows.line, data.event_where[11]);
  await page.keyboard.press('Escape');
  assert.equal((await tooltipOf(frame, 'timeline')).hidden, true);

  // The lifetimes chart: from buffer to buffer, each described as hovering describes it.
  await frame.waitForSelector('[data-chart=lifetimes][data-drawn]');
  await tabTo(frame, '[data-chart=lifetimes]');
  const keyed = () => frame.$eval('[data-chart=lifetimes]', (e) => e.dataset.keyed);
  const first = await keyed();
  assert.notEqual(first, '');
  const tip1 = await tooltipOf(frame, 'lifetimes');
  assert.equal(tip1.hidden, false);
  assert.ok(tip1.title && 'size' in tip1.rows && 'allocated' in tip1.rows, JSON.stringify(tip1));
  await page.keyboard.press('ArrowRight');
  assert.notEqual(await keyed(), first);
  await page.keyboard.press('End');
  const last = await keyed();
  await page.keyboard.press('Home');
  assert.equal(await keyed(), first);
  assert.notEqual(last, first);
  await page.keyboard.press('ArrowUp');
  assert.notEqual((await tooltipOf(frame, 'lifetimes')).title, '');
  await page.keyboard.press('Escape');
  assert.equal(await keyed(), '');
});

test('jax_liveout: the finding first, with its line; how to record memory events once, folded; the run list tells it from jax_clean', async () => {
  const run = runName(suite.logdir, 'jax_liveout');
  const frame = await open(run);
  // capture_jax.py makes h = relu(x @ w1 + b1) at line 48; its jax_liveout step returns it.
  const reason = await text(frame, '.lf-verdict-reason');
  assert.match(reason, /^Static view: broadcast_maximum_fusion f32\[256,3072\] at capture_jax\.py:48 \(3 MiB\), returned by jit_train_step_liveout\(\d+\): XLA keeps it for the whole program\./);
  assert.doesNotMatch(reason, /TF_CPU_ALLOCATOR_USE_BFC|live_out/);
  const page = await shown(frame);
  assert.equal(page.split('TF_CPU_ALLOCATOR_USE_BFC').length - 1, 0, 'folded away until asked for');
  assert.equal(await frame.$eval('[data-how=record-events]', (d) => d.open), false);
  await frame.click('[data-how=record-events] summary');
  assert.equal((await shown(frame)).split('TF_CPU_ALLOCATOR_USE_BFC').length - 1, 1, 'said once');
  // Both runs analysed, the run list marks the one with a finding.
  const clean = runName(suite.logdir, 'jax_clean');
  await frame.selectOption('[data-select=run]', clean);
  await frame.waitForSelector(`.lf-view[data-run="${clean}"]`);
  await frame.waitForSelector('main.lf-root[data-state=ready]');
  const labels = await frame.$$eval('[data-select=run] option', (os) => Object.fromEntries(os.map((o) => [o.value, o.textContent])));
  assert.equal(labels[run], `${run} (inconclusive, 1 finding)`);
  assert.equal(labels[clean], `${clean} (inconclusive)`);
  assert.deepEqual(plurals(await shown(frame)), []);
});

test('a host of eight GPUs: every allocator in the banner with why one is shown; no "no Python frames" beside lines', {skip: noConv8}, async () => {
  const frame = await open('amd_jax08_conv8/jax_conv_minimal_08');
  const rows = await frame.$$eval('[data-list=allocators] tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  assert.equal(rows.length, 8);
  const summary = await text(frame, '[data-list=allocators] summary');
  const shownAllocator = await frame.$eval('[data-select=allocator]', (s) => s.selectedOptions[0].textContent);
  assert.match(summary, /^8 allocators on this host, none leaking; GPU:\d is shown: the device memory with the highest peak$/);
  assert.ok(shownAllocator.startsWith(summary.match(/(GPU:\d) is shown/)[1]), `${summary} / ${shownAllocator}`);
  // The one shown has the highest peak of the device memories.
  const peaks = rows.filter((r) => r[0].startsWith('GPU:')).map((r) => [r[0], r[3]]);
  assert.ok(peaks.length === 8, JSON.stringify(peaks));
  // Lines are shown (the programs' source lines): the hint that the profile has no Python frames would contradict them.
  await frame.waitForSelector('[data-panel=families] tbody tr[data-key]');
  assert.match(await text(frame, '[data-panel=families] tbody tr:first-child .lf-where'), /generate_conv_trace\.py:23/);
  assert.equal(await frame.$('[data-hint=stack]'), null);
  // The family's label does not repeat the Where column.
  assert.doesNotMatch(await text(frame, '[data-panel=families] tbody tr:first-child [data-family]'), /generate_conv_trace/);
  assert.deepEqual(plurals(await shown(frame)), []);
  // Another allocator from the banner's list.
  await frame.click('[data-list=allocators] button[data-allocator=GPU_3_bfc]');
  await frame.waitForSelector('[data-list=allocators] button[data-allocator=GPU_3_bfc][aria-current=true]');
});

test('a Hugging Face trace: the Where column leads with the model’s frame, the harness after; shapes said to be inputs', {skip: noQwen}, async () => {
  const frame = await open('tracelens_qwen_h100');
  await frame.waitForSelector('[data-panel=breakdown] tbody tr [data-caller]');
  const where = await frame.$$eval('[data-panel=breakdown] tbody tr .lf-where', (ws) =>
    ws.map((w) => {
      const caller = w.querySelector('[data-caller]');
      const all = w.textContent ?? '';
      return [all.slice(0, all.length - (caller?.textContent?.length ?? 0)), caller?.dataset.caller ?? ''];
    }),
  );
  const mlp = where.find(([first]) => first.startsWith('Qwen2MLP.forward'));
  assert.deepEqual(mlp, ['Qwen2MLP.forward (modeling_qwen2.py:56)', 'text_base_model.py:28 in run_on_input']);
  assert.ok(where.every(([first]) => !first.startsWith('text_base_model.py')), 'no row leads with the harness frame');
  const heads = await frame.$$eval('[data-panel=breakdown] thead th', (ths) => ths.map((th) => (th.textContent ?? '').replace(/ [▲▼]$/, '')));
  assert.ok(heads.includes('Input shapes') && !heads.includes('Shape'), heads.join(' | '));
  // The buffers table says so too: a PyTorch trace names an op's inputs' shapes, not the buffer's own.
  await frame.waitForSelector('[data-panel=lifetimes] tbody tr[data-key]');
  const bufferHeads = await frame.$$eval('[data-panel=lifetimes] thead th', (ths) => ths.map((th) => (th.textContent ?? '').replace(/ [▲▼]$/, '')));
  assert.ok(bufferHeads.includes('Input shapes') && !bufferHeads.includes('Shape'), bufferHeads.join(' | '));
  // A trace has no compiled programs: the lifetimes' legend and help say nothing of a static view, and with no
  // selection the legend lists only what is drawn.
  const legend = await frame.$$eval('[data-panel=lifetimes] .lf-legend > span', (ss) => ss.filter((s) => !s.hidden).map((s) => s.textContent));
  assert.deepEqual(legend, ['freed', 'never freed (drawn to the end of the window)', 'allocated before the window']);
  assert.doesNotMatch(await text(frame, '[data-panel=lifetimes] p.lf-muted'), /static view/);
  assert.deepEqual(plurals(await shown(frame)), []);
});

test('opened without a run and no run leaks: the run with a finding is shown, not the clean one sorted before it', async () => {
  const other = await startSuite(['jax_clean', 'jax_liveout'], null);
  try {
    const page = await other.browser.context.newPage();
    pages.push(watch(page));
    const frame = await openLeaks(page, other.tb.base, '');
    const liveout = runName(other.logdir, 'jax_liveout');
    assert.equal(await frame.$eval('[data-select=run]', (s) => s.value), liveout);
    assert.match(await text(frame, '.lf-verdict-reason'), /^Static view: broadcast_maximum_fusion/);
  } finally {
    await other.stop();
  }
});

test('no request under /data/plugin/leakfinder/ failed, no page error', () => {
  assert.deepEqual(pages.flatMap((p) => p.failures), []);
  assert.deepEqual(pages.flatMap((p) => p.errors), []);
});
