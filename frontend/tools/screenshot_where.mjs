// Makes docs/screenshot-where.png: the Leaks tab's Where column on the real
// JAX 0.8 GPU GEMM profile of ../shared/profiles/jax_gpu/amd_jax08_gemm
// (AMD-AGI/TraceLens @ 042a7522, MIT licence, recorded by others: see
// ../shared/profiles/README.md).
//
//   node frontend/tools/screenshot_where.mjs docs/screenshot-where.png
//
// A real `tensorboard` on a free port over a temporary logdir holding a copy of
// the run (XProf writes cache files into the session folders it opens), Debian's
// chromium through playwright-core (tests/harness.mjs). The breakdown's first
// Where link is followed with the keyboard and shown focused (its focus ring),
// and the static view below shows the program buffer that the link's hover text names
// (headless chromium draws no title tooltips). The image is two clips of that
// one page, one above the other: the top (run, verdict, summary cards) and the
// peak breakdown with the static view's selected allocation; a labelled band
// between them says which panels are left out. Nothing is added to the page.

import {mkdirSync, rmSync} from 'node:fs';
import {dirname, resolve} from 'node:path';
import {launchBrowser, makeLogdir, openLeaks, runName, startTensorBoard} from '../tests/harness.mjs';

const RUN_PATH = 'jax_gpu/amd_jax08_gemm';
const WIDTH = 1400;

const out = process.argv[2];
if (!out) {
  console.error('usage: node frontend/tools/screenshot_where.mjs OUT.png');
  process.exit(2);
}

let logdir = null;
let tb = null;
let browser = null;
async function cleanUp() {
  await browser?.close().catch(() => {});
  await tb?.stop().catch(() => {});
  if (logdir) rmSync(logdir, {recursive: true, force: true});
  browser = tb = logdir = null;
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
}

/** A rectangle of the frame's element in page coordinates (the frame's document scrolled to its top). */
async function box(frame, frameOffset, selector) {
  const r = await frame.$eval(selector, (e) => {
    const b = e.getBoundingClientRect();
    return {top: b.top, bottom: b.bottom};
  });
  return {top: frameOffset + r.top, bottom: frameOffset + r.bottom};
}

try {
  logdir = makeLogdir([], null, [RUN_PATH]);
  const run = runName(logdir, 'amd_jax08_gemm');
  tb = await startTensorBoard(logdir);
  browser = await launchBrowser();
  const page = await browser.context.newPage();
  // Tall enough that the tab's frame holds everything from the verdict to the static view unscrolled.
  await page.setViewportSize({width: WIDTH, height: 3800});
  const frame = await openLeaks(page, tb.base, run);
  await frame.waitForSelector('[data-panel=breakdown] tbody tr[data-key]');

  // The cell shown must be the one docs/attribution.md describes.
  const first = '[data-panel=breakdown] tbody tr:first-child';
  const where = await frame.$eval(`${first} .lf-where`, (e) => ({text: e.textContent, title: e.getAttribute('title') ?? ''}));
  if (where.text !== 'generate_gemm_trace.py:37' || !where.title.includes('output 0 of jit_dot(49)')) {
    throw new Error(`unexpected first Where cell of the peak breakdown: ${JSON.stringify(where)}`);
  }
  console.log(`first row's Where: ${where.text}\nits hover text:\n  ${where.title.split('\n').join('\n  ')}`);

  // Follow the link with the keyboard, as a user would after reading its hover text.
  await frame.focus(`${first} a[data-site-link]`);
  await page.keyboard.press('Enter');
  await frame.waitForSelector('[data-panel=static] [data-module="jit_dot(49)"][data-selected-allocation="0"] [data-selected="0"] [data-table=selected-buffer] tbody tr[data-key]');
  // The tab redraws the breakdown as it opens the view, which drops the focus: give it back to the
  // link that was followed (after a key press, so with its focus ring), then scroll the frame back
  // to its top (the view scrolled to the selection), where the clips are taken.
  await frame.focus(`${first} a[data-site-link]`);
  const ring = await frame.$eval(`${first} a[data-site-link]`, (a) => a.matches(':focus-visible'));
  if (!ring) console.warn("the first row's link has no focus ring");
  await frame.evaluate(() => window.scrollTo(0, 0));
  await page.waitForTimeout(800);

  const frameOffset = (await (await page.$('iframe[src*="plugin_entry.html?name=leakfinder"]')).boundingBox()).y;
  const cards = await box(frame, frameOffset, '[data-panel=timeline]');
  const breakdown = await box(frame, frameOffset, '[data-panel=breakdown]');
  const selected = await box(frame, frameOffset, '[data-panel=static] [data-selected="0"]');
  const skipped = await frame.$$eval('[data-panel]', (panels) => {
    const names = [];
    for (const p of panels) {
      if (p.dataset.panel === 'breakdown') break;
      names.push((p.querySelector('h2')?.textContent ?? p.dataset.panel).replace(/\s*\(.*$/, '').trim());
    }
    return names;
  });
  const clip = (top, bottom) => page.screenshot({clip: {x: 0, y: Math.round(top), width: WIDTH, height: Math.round(bottom - top)}});
  const above = await clip(0, cards.top - 8);
  const below = await clip(breakdown.top - 12, selected.bottom + 12);

  // The two clips one above the other, on a page of their own.
  const note = `⋯ ${skipped.join(', ')} of the same page left out ⋯`;
  const png = (b) => `data:image/png;base64,${b.toString('base64')}`;
  const sheet = await browser.context.newPage();
  await sheet.setViewportSize({width: WIDTH, height: 900});
  await sheet.setContent(
    `<!doctype html><html><body style="margin:0"><div id="shot" style="width:${WIDTH}px;background:#fff">` +
      `<img style="display:block" src="${png(above)}">` +
      `<div style="height:26px;line-height:26px;text-align:center;font:italic 13px sans-serif;color:#555;background:repeating-linear-gradient(135deg,#eee 0 8px,#e2e2e2 8px 16px);border-top:1px dashed #999;border-bottom:1px dashed #999"></div>` +
      `<img style="display:block" src="${png(below)}"></div></body></html>`,
  );
  await sheet.$eval('#shot > div', (d, text) => (d.textContent = text), note);
  await sheet.waitForFunction(() => Array.from(document.images).every((i) => i.complete && i.naturalWidth > 0));
  mkdirSync(dirname(resolve(out)), {recursive: true});
  await (await sheet.$('#shot')).screenshot({path: resolve(out)});
  console.log(`wrote ${resolve(out)}`);
} finally {
  await cleanUp();
}
