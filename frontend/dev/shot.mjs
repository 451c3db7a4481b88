// Dev helper: screenshot the Leaks tab of a running TensorBoard.
//   node dev/shot.mjs http://127.0.0.1:6006/ out.png [run] [light|dark] [height] [select] [compare]
// With `select`, the top never-freed family is clicked first (its buffers highlighted).
// With `compare` (a run name), the tab compares `run` (A) with it (B).
import {chromium} from 'playwright-core';
import {mkdtempSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';

const [base = 'http://127.0.0.1:6006/', out = '/tmp/leaks.png', run = '', theme = 'light', height = '2400', select = '', compare = ''] = process.argv.slice(2);
const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'lf-chrome-')), {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: {width: 1400, height: Number(height)},
  colorScheme: theme,
});
const page = context.pages()[0] ?? (await context.newPage());
page.on('console', (m) => console.log('console:', m.type(), m.text()));
page.on('pageerror', (e) => console.log('pageerror:', e.message));
page.on('requestfailed', (r) => console.log('requestfailed:', r.url()));
page.on('response', (r) => { if (r.status() >= 400) console.log('HTTP', r.status(), r.url()); });
const hash = (run ? `&p.leakfinder.run=${encodeURIComponent(run)}` : '') + (compare ? `&p.leakfinder.compare=${encodeURIComponent(compare)}` : '');
await page.goto(`${base}#leakfinder${hash}`);
await page.waitForSelector('iframe, main.lf-root', {timeout: 30000});
const frameEl = await page.$('iframe');
const frame = frameEl ? await frameEl.contentFrame() : page.mainFrame();
await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 60000});
await page.waitForTimeout(1500);
if (compare) await frame.waitForSelector('[data-chart=compare-timeline][data-drawn]', {timeout: 60000}).catch((e) => console.log('not drawn:', e.message.split('\n')[0]));
if (select) {
  await frame.click('[data-panel=families] tbody tr:first-child');
  await frame.waitForSelector('[data-chart=lifetimes]:not([data-highlight-family=""])[data-highlight-family]');
  await page.waitForTimeout(1000);
}
const h = await frame.evaluate(() => document.documentElement.scrollHeight);
console.log('iframe content height', h);
await page.screenshot({path: out});
console.log(await frame.evaluate(() => document.querySelector('.lf-verdict')?.textContent));
await context.close();
