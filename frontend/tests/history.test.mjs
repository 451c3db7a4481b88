// Browser tests of the run history: a TensorBoard run of several captures
// (sessions taken minutes apart) shown as one history in the Leaks tab, its
// points opening each capture. Debian chromium (playwright-core) against a
// real `tensorboard` over runs that tb_leakfinder.testing.history_runs writes.

import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import {readdirSync} from 'node:fs';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {openLeaks, PYTHON, REPO, startSuite, watch} from './harness.mjs';

// - job: 5 captures 10 min apart of a job keeping one 4 KiB Mul [256] buffer a step (1,000 steps between captures);
// - clean: the same job keeping nothing;
// - single: one capture alone, which has no history;
// - pod: 5 captures of two hosts, host0 leaking as job does, host1 clean: a series each;
// - between: 4 captures whose windows keep nothing while the job grows between them: each capture alone is
//   clean, its history leaks (unexplained: allocated before each window);
// - copied: job's captures copied as `cp` does, into folders named c5..c1 (so that names sort backwards) and
//   every mtime one second: they carry no time of their own.
const BUILD_RUNS = `
import sys
from tb_leakfinder.testing.history_runs import slow_leak_run, strip_times
slow_leak_run(sys.argv[1])
slow_leak_run(sys.argv[1], "clean", leak_bytes_per_step=0)
slow_leak_run(sys.argv[1], "single", captures=1)
slow_leak_run(sys.argv[1], "pod", host="host1", leak_bytes_per_step=0)
slow_leak_run(sys.argv[1], "pod", host="host0")
slow_leak_run(sys.argv[1], "between", captures=4, kept_in_window=False)
strip_times(slow_leak_run(sys.argv[1], "copied"))
`;

const pages = [];
let suite;
before(async () => {
  suite = await startSuite([], BUILD_RUNS);
});
after(() => suite?.stop());

/** The sessions of a TensorBoard run, in time order (their names are the capture times). */
const sessions = (tbRun) => readdirSync(join(suite.logdir, tbRun, 'plugins', 'profile')).sort().map((s) => `${tbRun}/${s}`);
const hashState = (url) => new URLSearchParams(new URL(url).hash.slice(1));

async function open(run, host) {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  pages.push(seen);
  if (!host) return {page, frame: await openLeaks(page, suite.tb.base, run), seen};
  await page.goto(`${suite.tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(run)}&p.leakfinder.host=${host}`);
  const frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000})).contentFrame();
  await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 90_000});
  return {page, frame, seen};
}

/** Clicks the point of capture `i` on the history chart. */
async function clickPoint(frame, i) {
  await frame.waitForSelector(`${HISTORY} [data-chart=history][data-points-x]`);
  const {pointsX, pointsY} = await frame.$eval(`${HISTORY} [data-chart=history]`, (e) => ({...e.dataset}));
  const over = await frame.$(`${HISTORY} [data-chart=history] .u-over`);
  await over.click({position: {x: Number(pointsX.split(',')[i]), y: Number(pointsY.split(',')[i])}});
}

const HISTORY = '[data-panel=history]';

/** The history panel once its answer is drawn: its banner's verdict, label and reason. */
async function historyBanner(frame) {
  await frame.waitForSelector(`${HISTORY} [data-history]`, {timeout: 90_000});
  return frame.$eval(`${HISTORY} [data-history]`, (e) => ({
    verdict: e.dataset.verdict,
    label: e.querySelector('.lf-verdict-label')?.textContent,
    reason: e.querySelector('.lf-verdict-reason')?.textContent,
  }));
}

/** The growing families table's rows, cell by header. */
async function families(frame) {
  await frame.waitForSelector(`${HISTORY} .lf-table tbody tr`);
  const heads = await frame.$$eval(`${HISTORY} .lf-table thead th`, (ths) => ths.map((th) => (th.textContent ?? '').replace(/ [▲▼]$/, '')));
  const rows = await frame.$$eval(`${HISTORY} .lf-table tbody tr`, (trs) => trs.map((tr) => Array.from(tr.cells, (td) => td.textContent)));
  return rows.map((cells) => Object.fromEntries(heads.map((h, i) => [h, cells[i]])));
}

test('a run of 5 captures that leaks: the history says so, charts 5 points and names the family', async () => {
  const job = sessions('job');
  assert.equal(job.length, 5);
  const {frame} = await open(job[0]);
  const banner = await historyBanner(frame);
  assert.equal(banner.verdict, 'leak');
  assert.equal(banner.label, 'Leak');
  assert.match(
    banner.reason,
    /^\+15\.6 MiB over 40 min across 5 captures, \+4\.0 KiB per step from one capture to the next, from Mul \[256\] output, in 5 captures \(2026_05_28_20_26_40, .* and 1 more\); out of memory in about 29 days$/,
  );
  assert.equal(await frame.$eval(HISTORY, (e) => e.dataset.verdict), 'leak');
  assert.match(await frame.$eval(`${HISTORY} h2`, (e) => e.textContent), /^Run history: job, 5 captures$/);
  // The chart: one point per capture, the one shown marked.
  await frame.waitForSelector(`${HISTORY} [data-chart=history] canvas`);
  const chart = await frame.$eval(`${HISTORY} [data-chart=history]`, (e) => ({...e.dataset}));
  assert.equal(chart.points, '5');
  assert.equal(chart.current, '0');
  const xs = chart.pointsX.split(',').map(Number);
  assert.equal(xs.length, 5);
  assert.ok(xs.every((x, i) => i === 0 || x > xs[i - 1]), `points in time order: ${xs}`);
  const legend = await frame.$$eval(`${HISTORY} .u-legend .u-series .u-label`, (ls) => ls.map((l) => l.textContent));
  assert.deepEqual(legend, ['time', 'heap floor (outlives every step)', 'heap peak']);
  assert.match(await frame.$eval(`${HISTORY} .lf-chart-note`, (e) => e.textContent), /^5 captures of GPU_0_bfc on host0, .*: what outlives every step moved \+15\.6 MiB/);
  // The families that grew across the captures.
  const rows = await families(frame);
  assert.equal(rows.length, 1);
  assert.deepEqual(rows[0], {Family: 'Mul [256] output (accounts for the growth)', Where: '', 'Growing captures': '5 of 5', 'Per step': '+4 KiB'});
  // The capture's own report is still the tab's: its verdict first, its timeline.
  assert.equal(await frame.$eval('.lf-view', (e) => e.dataset.run), job[0]);
  await frame.waitForSelector('[data-panel=timeline]');
});

test('hovering a point tells its capture; clicking the third opens capture 3, in the selector and the URL', async () => {
  const job = sessions('job');
  const {page, frame} = await open(job[0]);
  await historyBanner(frame);
  await frame.waitForSelector(`${HISTORY} [data-chart=history][data-points-x]`);
  const {pointsX, pointsY} = await frame.$eval(`${HISTORY} [data-chart=history]`, (e) => ({...e.dataset}));
  const position = {x: Number(pointsX.split(',')[2]), y: Number(pointsY.split(',')[2])};
  const over = await frame.$(`${HISTORY} [data-chart=history] .u-over`);
  await over.hover({position});
  await frame.waitForSelector(`${HISTORY} .lf-tooltip:not([hidden])`);
  const tip = await frame.$eval(`${HISTORY} .lf-tooltip`, (e) => e.textContent);
  assert.match(tip, new RegExp(`^${job[2]}`));
  assert.match(tip, /stepssteps 2,000–2,009/);
  assert.match(tip, /click to open this capture/);
  // Its report may be fetched already (the run list's background scan): opened from the cache then.
  await over.click({position});
  await frame.waitForSelector(`.lf-view[data-run="${job[2]}"]`, {timeout: 60_000});
  await frame.waitForSelector('main.lf-root[data-state="ready"]');
  assert.equal(await frame.$eval('select[data-select=run]', (s) => s.value), job[2]);
  assert.equal(hashState(page.url()).get('p.leakfinder.run'), job[2]);
  // Its report is shown: this capture's verdict and summary, and the history marks it as the one shown.
  assert.equal(await frame.$eval('.lf-view > .lf-verdict', (e) => e.dataset.verdict), 'leak');
  assert.match(await frame.$eval('.lf-view > .lf-verdict .lf-verdict-reason', (e) => e.textContent), /Mul \[256\] output/);
  await frame.waitForSelector(`${HISTORY} [data-chart=history][data-current="2"]`);
  await frame.waitForSelector('[data-panel=timeline] canvas');
});

test('the chart opens a capture from the keyboard: arrows move between points, Enter opens', async () => {
  const job = sessions('job');
  const {page, frame} = await open(job[4]);
  await historyBanner(frame);
  await frame.waitForSelector(`${HISTORY} [data-chart=history][data-current="4"] canvas`);
  await frame.focus(`${HISTORY} [data-chart=history]`);
  for (const key of ['ArrowRight', 'ArrowRight']) await page.keyboard.press(key);
  assert.match(await frame.$eval(`${HISTORY} .lf-tooltip`, (e) => e.textContent), new RegExp(`^${job[1]}`));
  await page.keyboard.press('Enter');
  await frame.waitForSelector(`.lf-view[data-run="${job[1]}"]`, {timeout: 60_000});
  assert.equal(hashState(page.url()).get('p.leakfinder.run'), job[1]);
});

test('a clean run of 5 captures: no leak in its history, and no family grew', async () => {
  const clean = sessions('clean');
  const {frame} = await open(clean[1]);
  const banner = await historyBanner(frame);
  assert.equal(banner.verdict, 'no_leak');
  assert.equal(banner.label, 'No leak');
  assert.match(banner.reason, /^what outlives each step moved \+0 B over 40 min across 5 captures, rising between 0 of 4 of them$/);
  assert.equal(await frame.$eval(`${HISTORY} [data-chart=history]`, (e) => e.dataset.points), '5');
  const rows = await families(frame);
  assert.deepEqual(rows.map((r) => r.Family), ['No family grew in these captures.']);
});

test('captures of two hosts: a series each, worst first, chosen in the selector; a point opens its host', async () => {
  const pod = sessions('pod');
  const {page, frame} = await open(pod[0], 'host1');
  const banner = await historyBanner(frame);
  assert.equal(banner.verdict, 'leak');
  assert.match(banner.reason, /^GPU_0_bfc on host0: Leak: \+15\.6 MiB over 40 min across 5 captures/);
  assert.match(await frame.$eval(`${HISTORY} [data-note=history]`, (e) => e.textContent), /captures come from 2 hosts \(host0, host1\): each host's history is its own/);
  const options = await frame.$$eval(`${HISTORY} select[data-select=history-series] option`, (os) => os.map((o) => o.textContent));
  assert.deepEqual(options, ['GPU_0_bfc on host0 (leak)', 'GPU_0_bfc on host1 (no leak)']);
  // The host shown is host1: its series is drawn first.
  const series = `${HISTORY} select[data-select=history-series]`;
  assert.equal(await frame.$eval(series, (s) => s.value), '1');
  assert.equal(await frame.$eval(`${HISTORY} [data-chart=history]`, (e) => e.dataset.host), 'host1');
  assert.match(await frame.$eval(`${HISTORY} [data-series-reason]`, (e) => e.textContent), /^GPU_0_bfc on host1: No leak: what outlives each step moved \+0 B/);
  assert.deepEqual((await families(frame)).map((r) => r.Family), ['No family grew in these captures.']);
  await frame.selectOption(series, '0');
  await frame.waitForSelector(`${HISTORY} [data-chart=history][data-host=host0][data-points="5"]`);
  assert.deepEqual((await families(frame)).map((r) => r.Family), ['Mul [256] output (accounts for the growth)']);
  // A point of host0's series opens that capture on host0, whose series the history then shows.
  await clickPoint(frame, 3);
  await frame.waitForSelector(`.lf-view[data-run="${pod[3]}"]`, {timeout: 60_000});
  assert.equal(hashState(page.url()).get('p.leakfinder.run'), pod[3]);
  assert.equal(hashState(page.url()).get('p.leakfinder.host'), 'host0');
  assert.equal(await frame.$eval('select[data-select=host]', (s) => s.value), 'host0');
  await frame.waitForSelector(`${HISTORY} [data-chart=history][data-host=host0][data-current="3"]`);
  assert.equal(await frame.$eval(series, (s) => s.value), '0');
});

test('a run whose captures are each clean but whose history leaks: the history leads the page, the CLI and check', async () => {
  const between = sessions('between');
  const {frame} = await open(between[0]);
  const banner = await historyBanner(frame);
  assert.equal(banner.verdict, 'leak');
  assert.match(banner.reason, /^\+11\.7 MiB over 30 min across 4 captures, \+4\.0 KiB per step from one capture to the next; the growth is unexplained: .* allocated before the windows \(held when each began: 100 MiB, 104 MiB, 108 MiB, 112 MiB\)/);
  // The run's verdict comes first on the page; the capture's own below it, and said to be the capture's.
  const banners = await frame.$$eval('.lf-view .lf-verdict', (bs) =>
    bs.map((b) => ({history: b.dataset.history ?? null, capture: b.dataset.capture ?? null, verdict: b.dataset.verdict, title: b.querySelector('.lf-verdict-title')?.textContent ?? null})),
  );
  assert.deepEqual(banners, [
    {history: 'true', capture: null, verdict: 'leak', title: null},
    {history: null, capture: 'true', verdict: 'no_leak', title: `This capture (${between[0]}), on its own:`},
  ]);
  // Under the red history, the capture's own "No leak" is not coloured green: neutral, titled as the capture's.
  const colours = await frame.$eval('.lf-view .lf-verdict[data-capture]', (b) => {
    const probe = document.createElement('div');
    probe.className = 'lf-verdict lf-verdict-no_leak';
    document.body.append(probe);
    const green = getComputedStyle(probe);
    const own = getComputedStyle(b);
    const out = {own: [own.backgroundColor, own.borderLeftColor], green: [green.backgroundColor, green.borderLeftColor]};
    probe.remove();
    return out;
  });
  assert.notEqual(colours.own[0], colours.green[0], 'not the green background');
  assert.notEqual(colours.own[1], colours.green[1], 'not the green border');
  const label = await frame.$eval('select[data-select=run]', (s) => s.selectedOptions[0]?.textContent);
  assert.equal(label, `${between[0]} (on its own: no leak)`);
  // Said once: the banner ends with why the growth is unexplained, no paragraph repeats it below.
  assert.equal(await frame.$(`${HISTORY} [data-unexplained]`), null);
  assert.equal(banner.reason.match(/\+4\.0 KiB per step/g)?.length, 1);
  // The CLI says the same, in the same order, and check fails on it: on this run alone, only its history leaks.
  const check = spawnSync(PYTHON, ['-m', 'tb_leakfinder.views.cli', 'check', join(suite.logdir, 'between'), '--no-cache'], {cwd: REPO, encoding: 'utf8'});
  assert.equal(check.status, 1, check.stderr);
  const lines = check.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 5, check.stdout);
  assert.ok(lines[0].trim().startsWith('leak  (the logdir top): history of 4 captures: Leak: '), lines[0]);
  assert.ok(lines[0].endsWith(banner.reason), `${lines[0]}\n${banner.reason}`);
  const names = between.map((run) => run.split('/')[1]);
  assert.deepEqual(
    lines.slice(1).map((l) => l.trim().split(/ +/).slice(0, 3).join(' ')),
    names.map((name) => `no_leak capture ${name}:`),
  );
});

test('captures copied without their times: charted in step order, no rate per hour, and why', async () => {
  const copied = sessions('copied');
  assert.deepEqual(copied, ['copied/c1', 'copied/c2', 'copied/c3', 'copied/c4', 'copied/c5']);
  const {frame} = await open('copied/c5');
  const banner = await historyBanner(frame);
  assert.equal(banner.verdict, 'leak');
  assert.match(banner.reason, /across 5 captures, \+4\.0 KiB per step from one capture to the next, from Mul \[256\] output, in 5 captures \(c5, c4, c3, c2 and 1 more\); no rate per hour and no forecast: the captures carry no time of their own/);
  assert.doesNotMatch(banner.reason, /out of memory/);
  const chart = await frame.$eval(`${HISTORY} [data-chart=history]`, (e) => ({...e.dataset}));
  assert.equal(chart.axis, 'step');
  assert.equal(chart.current, '0'); // c5 holds the first steps
  const xs = chart.pointsX.split(',').map(Number);
  assert.ok(xs.every((x, i) => i === 0 || x > xs[i - 1]), `points in step order: ${xs}`);
  const note = await frame.$eval(`${HISTORY} .lf-chart-note`, (e) => e.textContent);
  assert.match(note, /^5 captures of GPU_0_bfc on host0, in step order: what outlives every step moved \+15\.6 MiB\. /);
  // One rate on the page, the verdict's: the chart's note has none.
  assert.doesNotMatch(note, /per (hour|step|capture)/);
  assert.equal(banner.reason.match(/[+-][\d.]+ [KMG]?i?B per (hour|step|capture)\b/g)?.length, 1);
  assert.match(await frame.$eval(`${HISTORY} [data-time-note]`, (e) => e.textContent), /^Times: no rate per hour and no forecast/);
});

test('a run of one capture shows no history, and does not ask for one', async () => {
  const [single] = sessions('single');
  const {frame, seen} = await open(single);
  await frame.waitForSelector('[data-panel=timeline]');
  assert.equal(await frame.$(HISTORY), null);
  assert.deepEqual(seen.pluginRequests.filter((u) => u.includes('/history')), []);
});

test('no request under /data/plugin/leakfinder/ failed, and nothing else went wrong', () => {
  const failures = pages.flatMap((p) => p.failures);
  assert.deepEqual(failures, [], `failed plugin requests:\n${failures.join('\n')}`);
  assert.deepEqual(pages.flatMap((p) => [...p.errors, ...p.dialogs]), []);
  assert.ok(pages.some((p) => p.pluginRequests.some((u) => u.includes('/history?tb_run=job'))));
});
