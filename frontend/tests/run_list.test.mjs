// Browser test of the run list on first load: the demo runs and a copy of
// jax_clean cut to half its bytes. Without the user opening any run but the
// one in the URL, the tab analyses the others in the background (one request
// at a time) and the run list tells jax_liveout (a finding of the static
// view) from jax_clean, and Compare does not offer the cut run. Debian
// chromium (playwright-core) against a real `tensorboard`.

import assert from 'node:assert/strict';
import {after, before, test} from 'node:test';
import {openLeaks, runName, startSuite, watch} from './harness.mjs';

const BUILD = `
import pathlib, shutil, sys
logdir = pathlib.Path(sys.argv[1])
shutil.copytree(logdir / 'jax_clean', logdir / 'jax_cut')
pb = next((logdir / 'jax_cut').rglob('*.xplane.pb'))
pb.write_bytes(pb.read_bytes()[: pb.stat().st_size // 2])
`;

let suite;
before(async () => {
  suite = await startSuite(['jax_clean', 'jax_liveout', 'tf_fixed', 'tf_leak'], BUILD);
});
after(() => suite?.stop());

test('on first load the run list marks runs never opened, and Compare leaves out the unreadable one', async () => {
  const [clean, liveout, cut] = ['jax_clean', 'jax_liveout', 'jax_cut'].map((r) => runName(suite.logdir, r));
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  const requests = [];
  page.on('request', (r) => {
    if (r.url().includes('/data/plugin/leakfinder/report')) requests.push(r.url());
  });
  const frame = await openLeaks(page, suite.tb.base, clean);
  // Only jax_clean was asked for; the others are analysed after it is shown.
  const label = (run) => frame.$eval(`[data-select=run] option[value="${run}"]`, (o) => o.textContent);
  await frame.waitForFunction((run) => document.querySelector(`[data-select=run] option[value="${run}"]`)?.textContent !== run, liveout, {timeout: 90_000});
  await frame.waitForFunction((run) => document.querySelector(`[data-select=run] option[value="${run}"]`)?.textContent === `${run} (not readable)`, cut, {timeout: 90_000});
  const [cleanLabel, liveoutLabel] = [await label(clean), await label(liveout)];
  assert.notEqual(liveoutLabel.replace(liveout, ''), cleanLabel.replace(clean, ''));
  assert.match(liveoutLabel, /1 finding\)$/);
  const offered = await frame.$$eval('[data-select=compare] option', (os) => os.map((o) => o.value));
  assert.ok(!offered.includes(cut) && offered.includes(liveout), offered.join(', '));
  // The selection and view stayed as opened: the scan only relabels.
  assert.equal(await frame.$eval('[data-select=run]', (s) => s.value), clean);
  assert.equal(await frame.$eval('main.lf-root', (e) => e.dataset.state), 'ready');
  // Each run asked for once, the opened one first.
  const asked = requests.map((u) => new URL(u).searchParams.get('run'));
  assert.equal(asked[0], clean);
  assert.equal(new Set(asked).size, asked.length, asked.join(', '));
  assert.equal(asked.length, 5, asked.join(', '));
  // The one failure is the cut file's, asked in the background.
  assert.deepEqual(seen.failures.map((f) => f.split(' ')[0]), ['422']);
  assert.deepEqual([seen.errors, seen.dialogs], [[], []]);
  await page.close();
});

test('the scan does not refill the run select the user has open: it relabels it once the select loses the focus', async () => {
  const [clean, liveout] = ['jax_clean', 'jax_liveout'].map((r) => runName(suite.logdir, r));
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  // The background scan's answers wait until the select has the focus, so that the order is certain.
  let release;
  const held = new Promise((resolve) => {
    release = resolve;
  });
  await page.route('**/data/plugin/leakfinder/report?*', async (route) => {
    if (new URL(route.request().url()).searchParams.get('run') !== clean) await held;
    await route.continue();
  });
  const frame = await openLeaks(page, suite.tb.base, clean);
  const select = '[data-select=run]';
  await frame.focus(select);
  await frame.$$eval(`${select} option`, (os) => os.forEach((o) => (o.dataset.before = 'yes')));
  const answered = page.waitForResponse((r) => r.url().includes('/report?') && new URL(r.url()).searchParams.get('run') === liveout);
  release();
  await answered;
  await frame.waitForTimeout(500);
  // Focused: the same options, not yet relabelled.
  assert.ok(await frame.$$eval(`${select} option`, (os) => os.length > 1 && os.every((o) => o.dataset.before === 'yes')));
  assert.equal(await frame.$eval(`${select} option[value="${liveout}"]`, (o) => o.textContent), liveout);
  await frame.$eval(select, (s) => s.blur());
  await frame.waitForFunction((run) => /1 finding\)$/.test(document.querySelector(`[data-select=run] option[value="${run}"]`)?.textContent ?? ''), liveout, {timeout: 30_000});
  assert.equal(await frame.$eval(select, (s) => s.value), clean);
  assert.deepEqual([seen.errors, seen.dialogs], [[], []]);
  await page.close();
});

test("jax_liveout's whole-program card says what its parts count twice: the donated parameters", async () => {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  const frame = await openLeaks(page, suite.tb.base, runName(suite.logdir, 'jax_liveout'));
  const card = await frame.waitForSelector('.lf-card:has(.lf-card-label:text-is("Whole-program bytes"))', {timeout: 60_000});
  const detail = await card.$eval('.lf-card-detail', (e) => e.textContent);
  // capture_jax.py donates w1 [128,3072], b1 [3072], w2 [3072,16], b2 [16] in f32: 1,781,824 bytes, "1.7 MiB".
  assert.match(detail, /; 1\.7 MiB is both: parameters the program returns in place/);
  const figures = await card.evaluate((e) => e.textContent);
  assert.match(figures, /Whole-program bytes4\.8 MiBlive-out 4\.7 MiB, parameters 1\.8 MiB/);
  assert.deepEqual([seen.errors, seen.dialogs], [[], []]);
  await page.close();
});
