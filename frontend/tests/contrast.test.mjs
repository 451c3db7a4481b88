// WCAG AA contrast of the tab's text and pills (4.5:1) and of its focus ring (3:1), in both themes, computed from
// the colours styles.css gives them: each sample element's computed colour on its computed background (translucent
// backgrounds composited over the ones below). Chromium, no TensorBoard.

import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {launchBrowser} from './harness.mjs';
import {SRC} from './sources.mjs';

/** [selector of the sample, its markup]: every kind of text and pill the tab draws on a colour of its own. */
const SAMPLES = `
<main class="lf-root">
  <p id="text">text</p><p class="lf-muted" id="muted">muted</p><a href="#" id="link">link</a>
  <div class="lf-card lf-card-bad"><div class="lf-card-label" id="card-label">l</div><div class="lf-card-value" id="card-bad">v</div><div class="lf-card-detail" id="card-detail">d</div></div>
  <div class="lf-card lf-card-good"><div class="lf-card-value" id="card-good">v</div></div>
  ${['leak', 'no_leak', 'inconclusive'].map((v) => `<div class="lf-verdict lf-verdict-${v}"><div class="lf-verdict-title" id="verdict-title-${v}">t</div><span class="lf-verdict-reason" id="verdict-${v}">r</span><div class="lf-verdict-steps" id="verdict-steps-${v}">s</div><button class="lf-link-button" id="verdict-link-${v}">b</button><span class="lf-verdict-word-leak" id="verdict-word-${v}">Leak</span></div>`).join('')}
  <div class="lf-verdict lf-verdict-no_leak lf-verdict-capture"><span class="lf-verdict-reason" id="capture">r</span></div>
  ${['growing', 'persistent', 'bounded', 'window_end'].map((k) => `<span class="lf-kind lf-kind-${k}" id="kind-${k}">k</span>`).join('')}
  <span class="lf-regrown" id="regrown">regrown</span>
  ${['new', 'grown', 'shrunk', 'fixed', 'unchanged'].map((s) => `<span class="lf-status lf-status-${s}" id="status-${s}">s</span>`).join('')}
  <span class="lf-side lf-side-a" id="side-a">A</span><span class="lf-side lf-side-b" id="side-b">B</span>
  ${['live_out', 'never_freed', 'temporary', 'parameter', 'constant', 'thread_local', 'small'].map((r) => `<span class="lf-reason lf-reason-${r}" id="reason-${r}">r</span>`).join('')}
  <table class="lf-table"><thead><tr><th id="th">h</th></tr></thead><tbody><tr aria-selected="true"><td id="selected-row">x</td></tr><tr class="lf-breakdown-before_window"><td id="before-row">x</td></tr></tbody></table>
  <div class="lf-hint" id="hint">h</div><div class="lf-notice lf-notice-error" id="error">e</div>
  <div class="lf-regression"><strong id="regression">r</strong></div><div class="lf-compare-ok" id="compare-ok">ok</div>
  <span class="lf-chunks" id="chunks">(12.6 MiB)</span><span class="lf-where-caller" id="caller">← a.py:1</span><code class="lf-program" id="program">jit_f(3)</code>
  <span class="lf-info" id="info">i</span><div class="lf-chart-note" id="chart-note">n</div>
</main>`;

let browser;
let page;
before(async () => {
  browser = await launchBrowser();
  page = await browser.context.newPage();
  await page.setContent(`<!doctype html><html><head><style>${readFileSync(join(SRC, 'styles.css'), 'utf8')}</style></head><body>${SAMPLES}</body></html>`);
});
after(() => browser?.close());

/** Every sample's text colour and its background, composited, as [r, g, b] in 0-255; and the focus ring's and surfaces'. */
function measure(theme) {
  return page.evaluate((theme) => {
    document.documentElement.dataset.theme = theme;
    const parse = (c) => {
      const m = c.match(/rgba?\(([^)]+)\)/);
      if (!m) throw new Error(`colour ${c}`);
      const [r, g, b, a = '1'] = m[1].split(/[ ,/]+/).filter(Boolean);
      return [Number(r), Number(g), Number(b), Number(a)];
    };
    const over = (top, below) => top.slice(0, 3).map((v, i) => v * top[3] + below[i] * (1 - top[3]));
    /** The background an element's text sits on: its own and its ancestors', composited from the page down. */
    const background = (el) => {
      const layers = [];
      for (let e = el; e; e = e.parentElement) layers.push(parse(getComputedStyle(e).backgroundColor));
      return layers.reverse().reduce((below, layer) => over(layer, below), [255, 255, 255]);
    };
    const out = {};
    for (const el of document.querySelectorAll('[id]')) {
      const bg = background(el);
      out[el.id] = {fg: over(parse(getComputedStyle(el).color), bg), bg};
    }
    const probe = document.createElement('span');
    document.body.append(probe);
    const rootStyle = getComputedStyle(document.documentElement);
    probe.style.color = rootStyle.getPropertyValue('--lf-focus');
    const focus = parse(getComputedStyle(probe).color);
    probe.style.color = rootStyle.getPropertyValue('--lf-bg');
    const bg = parse(getComputedStyle(probe).color);
    probe.style.color = rootStyle.getPropertyValue('--lf-surface');
    const surface = parse(getComputedStyle(probe).color);
    probe.remove();
    return {samples: out, focus, surfaces: [bg, surface]};
  }, theme);
}

function luminance([r, g, b]) {
  const f = (c) => (c / 255 <= 0.03928 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}

/** WCAG's contrast ratio of two colours. */
export function contrast(a, b) {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

test('the ratio is WCAG’s: black on white 21, a colour on itself 1', () => {
  assert.equal(contrast([0, 0, 0], [255, 255, 255]).toFixed(1), '21.0');
  assert.equal(contrast([95, 102, 112], [95, 102, 112]), 1);
  // TensorBoard's orange, the focus ring before: under 3:1 on white.
  assert.ok(contrast([245, 124, 0], [255, 255, 255]) < 3);
});

for (const theme of ['light', 'dark']) {
  test(`${theme}: every text and pill at 4.5:1 or more on its background, the focus ring at 3:1 on the page and cards`, async () => {
    const {samples, focus, surfaces} = await measure(theme);
    assert.ok(Object.keys(samples).length > 40, 'the samples were measured');
    const low = Object.entries(samples)
      .map(([id, {fg, bg}]) => [id, contrast(fg, bg)])
      .filter(([, ratio]) => ratio < 4.5)
      .map(([id, ratio]) => `${id} ${ratio.toFixed(2)}`);
    assert.deepEqual(low, []);
    for (const surface of surfaces) assert.ok(contrast(focus, surface) >= 3, `focus ring ${contrast(focus, surface).toFixed(2)}:1 on ${surface}`);
  });
}

/** A custom property's colour composited on the page background, as [r, g, b]. */
function tokenOnPage(theme, name) {
  return page.evaluate(
    ([theme, name]) => {
      document.documentElement.dataset.theme = theme;
      const probe = document.createElement('span');
      document.body.append(probe);
      const rgba = (v) => {
        probe.style.color = getComputedStyle(document.documentElement).getPropertyValue(v);
        const [r, g, b, a = '1'] = getComputedStyle(probe).color.match(/rgba?\(([^)]+)\)/)[1].split(/[ ,/]+/).filter(Boolean);
        return [Number(r), Number(g), Number(b), Number(a)];
      };
      const top = rgba(name);
      const bg = rgba('--lf-bg');
      probe.remove();
      return top.slice(0, 3).map((v, i) => v * top[3] + bg[i] * (1 - top[3]));
    },
    [theme, name],
  );
}

for (const theme of ['light', 'dark']) {
  test(`${theme}: the buffers faded beside a selected family are not the before-the-window grey, and stay visible`, async () => {
    const faded = await tokenOnPage(theme, '--lf-buffer-faded');
    const before = await tokenOnPage(theme, '--lf-buffer-dim');
    const bg = await tokenOnPage(theme, '--lf-bg');
    const distance = Math.hypot(...faded.map((v, i) => v - before[i]));
    assert.ok(distance >= 25, `faded ${faded} and before-the-window ${before} are ${distance.toFixed(1)} apart`);
    // Faded, yet seen against the page: the bars still show where the other buffers were.
    assert.ok(contrast(faded, bg) >= 1.2, `faded at ${contrast(faded, bg).toFixed(2)}:1 on the page`);
  });
}
