// Browser test of an empty logdir: TensorBoard still opens the Leaks tab
// (among its inactive plugins), and the tab says how to record a profile of
// each format tb_leakfinder reads and where its files go, as the read
// registry lists them (the runs route's `formats`).

import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import {after, before, test} from 'node:test';
import {PYTHON, REPO, startSuite, watch} from './harness.mjs';

let suite;
before(async () => {
  suite = await startSuite([], null);
});
after(() => suite?.stop());

function registryListings() {
  const code = 'import json; from tb_leakfinder.wire import serialize; print(json.dumps(serialize.format_listings()))';
  const result = spawnSync(PYTHON, ['-c', code], {cwd: REPO, encoding: 'utf8'});
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout);
}

test("an empty logdir's tab lists every format: how to record one and where its files go", async () => {
  const page = await suite.browser.context.newPage();
  const seen = watch(page);
  await page.goto(`${suite.tb.base}#leakfinder`);
  const frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000})).contentFrame();
  await frame.waitForSelector('main.lf-root[data-state="empty"] [data-empty="no-runs"]', {timeout: 60_000});
  const shown = await frame.$$eval('[data-empty="no-runs"] p[data-format]', (ps) =>
    ps.map((p) => ({name: p.dataset.format, text: p.textContent, code: [...p.querySelectorAll('code')].map((c) => c.textContent)})),
  );
  const listings = registryListings();
  assert.deepEqual(shown.map((s) => s.name), listings.map((f) => f.name));
  assert.ok(listings.length >= 4);
  for (const [k, f] of listings.entries()) {
    // The capture's `code` and the layout are code; the rest of the capture reads as written.
    assert.deepEqual(shown[k].code, [...f.capture.split('`').filter((_, i) => i % 2), f.layout]);
    assert.ok(shown[k].text.startsWith(`${f.name}s: ${f.capture.replaceAll('`', '')} Its files go in ${f.layout}.`), shown[k].text);
  }
  assert.match(shown.map((s) => s.text).join('\n'), /profile_memory=True/);
  assert.deepEqual(seen.failures, []);
  assert.deepEqual(seen.errors, []);
  await page.close();
});
