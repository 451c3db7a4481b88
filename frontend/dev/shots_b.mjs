// Dev helper (page-b): one TensorBoard over demo runs and shared profiles, screenshots of several runs.
//   node dev/shots_b.mjs outdir run1 run2 ...   (run names as the tab lists them)
import {makeLogdir, startTensorBoard, launchBrowser, openLeaks} from '../tests/harness.mjs';
import {writeFileSync} from 'node:fs';
const [out, ...runs] = process.argv.slice(2);
const logdir = makeLogdir(['tf_leak', 'tf_fixed', 'jax_liveout', 'jax_clean'], null, ['jax_gpu/amd_jax08_conv8', 'torch/tracelens_qwen_h100', 'torch/snapshot_cs336_bcrafton']);
const tb = await startTensorBoard(logdir);
const browser = await launchBrowser();
try {
  const runsList = await (await fetch(tb.base + 'data/plugin/leakfinder/runs')).json();
  console.log(JSON.stringify(runsList.runs?.map((r) => r.run) ?? runsList));
  for (const [i, run] of runs.entries()) {
    const page = await browser.context.newPage();
    page.on('pageerror', (e) => console.log('pageerror:', e.message));
    const [a, b] = run.split('|');
    let frame;
    if (b) {
      await page.goto(`${tb.base}#leakfinder&p.leakfinder.run=${encodeURIComponent(a)}&p.leakfinder.compare=${encodeURIComponent(b)}`);
      frame = await (await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000})).contentFrame();
      await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 90_000});
    } else frame = await openLeaks(page, tb.base, run);
    await page.waitForTimeout(2500);
    const h = await frame.evaluate(() => document.documentElement.scrollHeight);
    await page.setViewportSize({width: 1400, height: Math.min(h + 80, 6000)});
    await page.waitForTimeout(800);
    await page.screenshot({path: `${out}/${i}.png`});
    writeFileSync(`${out}/${i}.txt`, await frame.evaluate(() => document.querySelector('main').innerText));
    await page.close();
  }
} finally {
  await browser.close();
  await tb.stop();
}
