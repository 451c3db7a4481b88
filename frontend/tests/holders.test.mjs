// Browser tests of the holders and likely causes in the tab: real PyTorch CPU captures made here with
// tb_leakfinder.capture (its holder finder writes the companion file beside each trace), a real `tensorboard`,
// Debian chromium (playwright-core); and the standalone page (`report --html`) of the same capture.
//
// The program: an evaluation loop without torch.no_grad() that sums its losses, `total = total + evaluate(...)`,
// so `total` keeps every step's autograd graph and with it each step's Tanh output, [64,2048] float (512 KiB).

import assert from 'node:assert/strict';
import {spawnSync} from 'node:child_process';
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {delimiter, join} from 'node:path';
import {pathToFileURL} from 'node:url';
import {after, before, test} from 'node:test';
import {openLeaks, PYTHON, REPO, runName, startSuite, watch} from './harness.mjs';

const STEPS = 6; // captured steps: each keeps one Tanh output
const KEPT = 64 * 2048 * 4;
// Run from a file of its own (written by BUILD), as a training script is: its lines' text is recorded.
const PROGRAM = `
import pathlib, sys
import torch
import tb_leakfinder
from tb_leakfinder.capture.holders.finder import HolderFinder

def evaluate(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)

def run(logdir, no_grad=False, recorders=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.Tanh(), torch.nn.Linear(2048, 1))
    x, y = torch.randn(64, 256), torch.randn(64, 1)
    total = 0
    with tb_leakfinder.capture(logdir, start=1, count=${STEPS}, framework="torch", recorders=recorders) as cap:
        for step in range(${STEPS + 1}):
            with cap.step(step):
                if no_grad:
                    with torch.no_grad():
                        total = total + evaluate(model, x, y)
                else:
                    total = total + evaluate(model, x, y)

logdir = pathlib.Path(sys.argv[1])
run(logdir / "graph_kept")
# A walk bounded to one object stops before it reaches the graph: a partial search.
run(logdir / "partial", recorders=[HolderFinder("torch", torch, max_objects=1)])
run(logdir / "no_grad", no_grad=True)
`;
const BUILD = `
import pathlib, runpy, sys, tempfile
with tempfile.TemporaryDirectory() as folder:
    program = pathlib.Path(folder) / "evaluation.py"
    program.write_text(${JSON.stringify(PROGRAM)})
    runpy.run_path(str(program), run_name="__main__")
`;

let suite;
const seens = [];
before(async () => {
  suite = await startSuite(['tf_leak'], BUILD);
});
after(async () => {
  for (const seen of seens) assert.deepEqual([...seen.failures, ...seen.errors], []);
  await suite?.stop();
});

async function open(run) {
  const page = await suite.browser.context.newPage();
  seens.push(watch(page));
  const frame = await openLeaks(page, suite.tb.base, run);
  await frame.waitForSelector('[data-panel=families] tbody tr[data-key]');
  return frame;
}

const text = (frame, selector) => frame.$eval(selector, (e) => e.textContent ?? '');

/** Each family row's label and what its detail row says (null without one), in the table's order. */
function families(frame) {
  return frame.$$eval('[data-panel=families] tbody tr[data-key]', (rows) =>
    rows.map((tr) => {
      const next = tr.nextElementSibling;
      const detail = next?.classList.contains('lf-detail') ? next : null;
      return {
        label: tr.querySelector('[data-family]')?.textContent ?? '',
        detail: detail?.textContent ?? null,
        holders: Array.from(detail?.querySelectorAll('[data-holder]') ?? []).map((li) => ({path: li.dataset.holder, kind: li.dataset.holderKind, text: li.textContent})),
        cause: detail?.querySelector('[data-cause]')?.getAttribute('data-cause') ?? null,
        code: Array.from(detail?.querySelectorAll('code') ?? []).map((c) => c.textContent),
      };
    }),
  );
}

test('a kept autograd graph: the family names the reference that keeps it, its kind and its likely cause', async () => {
  const frame = await open('graph_kept');
  const rows = await families(frame);
  const tanh = rows.find((r) => r.label.startsWith('aten::tanh'));
  assert.ok(tanh, rows.map((r) => r.label).join('; '));
  // `total` keeps the graph of every step, and each graph its step's Tanh output.
  const [held] = tanh.holders;
  assert.match(held.path, /^total(\.|$)/);
  assert.equal(held.kind, 'autograd_graph');
  assert.match(held.text, new RegExp(`^Held by ${held.path.replace('.', '\\.')}: \\w+, ${STEPS} of ${STEPS} never-freed buffers, ${(STEPS * KEPT) / 2 ** 20} MiB \\(tensors an autograd graph saved\\)$`));
  assert.ok(tanh.code.includes(held.path), 'the path is code');
  // Its line's text, recorded at capture time: the line in evaluate that runs the model (the capture's line marks),
  // not evaluate's first line, which is all PyTorch's stack names.
  const line = PROGRAM.split('\n').findIndex((l) => l.includes('mse_loss(model(x), y)')) + 1;
  assert.match(tanh.detail, new RegExp(`Made at evaluation\\.py:${line} in evaluate: return torch\\.nn\\.functional\\.mse_loss\\(model\\(x\\), y\\)`));
  // The cause in words, its fix with code as code, and where it is explained.
  assert.equal(tanh.cause, 'graph_kept');
  assert.match(tanh.detail, /Likely cause: the autograd graph is kept \(aten::tanh/);
  assert.ok(tanh.code.includes('torch.no_grad()') && tanh.code.includes('.detach()'), tanh.code.join(' | '));
  assert.match(tanh.detail, /docs\/causes\.md, section graph_kept/);
  assert.equal(await frame.$eval('[data-family-detail] [data-doc]', (e) => e.dataset.doc), 'docs/causes.md#graph_kept');
  // `total` itself, the last step's sum, is a local of train(): made at its def line, whose text is recorded.
  const add = rows.find((r) => r.holders.some((h) => h.path === 'total'));
  assert.ok(add, 'the sum is held by the local `total`');
  assert.match(add.holders.find((h) => h.path === 'total').text, /a local of a running function, made at \S+evaluation\.py:\d+ in run: def run\(logdir, no_grad=False, recorders=None\):/);
  // Said once in full: the other family of the same graph names it.
  const addmm = rows.find((r) => r.label.startsWith('aten::addmm') && r.cause);
  if (addmm) assert.match(addmm.detail, /Likely cause: the autograd graph is kept \(as for aten::tanh/);
  // How the search went, above the table.
  assert.match(await text(frame, '[data-holder-search=complete]'), /^Holders, found by the capture helper in the training process: complete, [\d,]+ objects in [\d.]+ s\.$/);
});

test("a leak's banner names the top family's holder, as code, and its likely cause in a few words", async () => {
  const frame = await open('graph_kept');
  const reason = await text(frame, '.lf-verdict-reason');
  assert.match(reason, new RegExp(`Held by total(\\.grad_fn)?: \\w+, ${STEPS} of ${STEPS} never-freed buffers, ${(STEPS * KEPT) / 2 ** 20} MiB\\.$`));
  assert.match(await frame.$eval('.lf-verdict-reason code', (c) => c.textContent), /^total(\.|$)/);
  assert.doesNotMatch(reason, /`/);
  const cause = await text(frame, '.lf-verdict-cause[data-cause=graph_kept]');
  assert.match(cause, /^Likely cause: the autograd graph is kept\. Fix: keep loss\.item\(\) or \.detach\(\).*docs\/causes\.md#graph_kept/);
  // The id only in the docs' anchor, never as words.
  assert.doesNotMatch(cause.replace('docs/causes.md#graph_kept', ''), /graph_kept/);
  // Beside it, the process's own memory (the capture helper recorded it): judged apart from the allocator's leak,
  // which it does not count twice, and drawn on the timeline as the training process's growth.
  const process = await frame.$eval('[data-process-memory]', (e) => ({verdict: e.getAttribute('data-process-memory'), text: e.textContent ?? ''}));
  assert.ok(['no_leak', 'inconclusive'].includes(process.verdict ?? ''), `${process.verdict}: ${process.text}`);
  assert.match(process.text, /^Process memory: /);
  const legend = await frame.$$eval('[data-chart=timeline] .u-legend .u-series .u-label', (ls) => ls.map((l) => l.textContent));
  assert.ok(legend.some((l) => l?.startsWith('training process (RSS')), legend.join(' | '));
});

test('a partial search says so, and what it means for a family it found no holder for', async () => {
  const frame = await open('partial');
  const note = await text(frame, '[data-holder-search=partial]');
  assert.match(note, /partial, [\d,]+ objects? in [\d.]+ s \(the walk stopped after .*max_objects=1\)\): the holders named are true, but there may be more/);
  const tanh = (await families(frame)).find((r) => r.label.startsWith('aten::tanh'));
  assert.deepEqual(tanh.holders, []);
  assert.match(await frame.$eval('[data-holder-missed=partial]', (e) => e.textContent), /^No holder found for these buffers, but the search for holders was partial \(the walk stopped after .*max_objects=1\)\): a reference it did not reach may keep them\./);
  // The cause comes from the profile alone: a partial search does not touch it.
  assert.equal(tanh.cause, 'graph_kept');
  assert.doesNotMatch(await text(frame, '.lf-verdict-reason'), /Held by/);
});

test('no leak: no holder in the banner, no cause anywhere', async () => {
  const frame = await open('no_grad');
  assert.equal(await frame.$eval('.lf-verdict', (e) => e.dataset.verdict), 'no_leak');
  assert.doesNotMatch(await text(frame, '.lf-verdict'), /Held by|Likely cause/);
  assert.equal(await frame.$$eval('[data-cause]', (all) => all.length), 0);
  assert.equal(await frame.$$eval('[data-holder-missed]', (all) => all.length), 0);
});

test('without a companion file: no holders note, no detail rows', async () => {
  const frame = await open(runName(suite.logdir, 'tf_leak'));
  await frame.waitForSelector('.lf-verdict[data-verdict=leak]');
  assert.equal(await frame.$$eval('[data-holder-search]', (all) => all.length), 0);
  assert.equal(await frame.$$eval('[data-panel=families] tr.lf-detail', (all) => all.length), 0);
  // Nor a process-memory recording: one line says so, and how to record it.
  assert.match(await text(frame, '[data-process-memory=not-recorded]'), /^Process memory was not recorded: capture with tb_leakfinder\.capture/);
});

test('the standalone page shows the holder and the cause too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'leakfinder-holders-'));
  try {
    const out = join(dir, 'report.html');
    const env = {...process.env, PYTHONPATH: [REPO, process.env.PYTHONPATH].filter(Boolean).join(delimiter)};
    const done = spawnSync(PYTHON, ['-m', 'tb_leakfinder.views.cli', 'report', join(suite.logdir, 'graph_kept'), '--html', out], {cwd: REPO, env, encoding: 'utf8'});
    assert.ok(done.status === 0, done.stderr);
    const page = await suite.browser.context.newPage();
    await page.goto(pathToFileURL(out).href);
    await page.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 60_000});
    await page.waitForSelector('[data-panel=families] tr.lf-detail');
    const detail = await page.$eval('[data-panel=families] tr.lf-detail', (e) => e.textContent ?? '');
    assert.match(detail, new RegExp(`Held by total\\S*: \\w+, ${STEPS} of ${STEPS} never-freed buffers`));
    assert.match(detail, /Likely cause: the autograd graph is kept/);
    assert.match(await page.$eval('.lf-verdict-cause', (e) => e.textContent ?? ''), /^Likely cause: the autograd graph is kept\./);
    await page.close();
  } finally {
    rmSync(dir, {recursive: true, force: true});
  }
});
