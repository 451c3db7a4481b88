// Temporary audit script (not committed): every run of a mixed logdir in a real TensorBoard.
import {writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {openLeaks, startSuite, watch} from './harness.mjs';

const BUILD = `
import pathlib, sys, shutil
from tb_leakfinder.testing.torch_snapshot_builder import helper_job
from tb_leakfinder.testing.tpu_profile import tpu_inference
from tb_leakfinder.testing.xspace_builder import write_session
from tb_leakfinder.testing.history_runs import slow_leak_run
root = pathlib.Path(sys.argv[1])
(root / 'flexgen').mkdir()
helper_job('2.0').write(root / 'flexgen' / 'oom_snapshot.pickle')
helper_job('2.0', out_of_memory=False).write(root / 'flexgen' / 'after_run.pickle')
tpu, _ = tpu_inference()
write_session(str(root), "tpu4", "2026_01_01_00_00_00", {tpu.hostname: tpu})
slow_leak_run(root, 'watched', captures=4)
src = next((root / 'tf_leak').rglob('*.xplane.pb'))
dst = root / 'tf_truncated' / src.relative_to(root / 'tf_leak')
dst.parent.mkdir(parents=True)
data = src.read_bytes()
dst.write_bytes(data[: len(data) // 2])
`;
const PLURAL = /(?<![\d.,])\b1 (buffers|rows|memory events|events|points|families|captures|steps|allocators|files|findings|frees|groups|shapes|modules|hosts|buffer groups|allocations|programs|devices|entries)\b|\w\(s\)|\(ies\)/g;
const ENUM = /\b(window_end|live_out|never_freed|before_window|no_leak|thread_local|out_of_memory|one_moment)\b/g;
const TIME_UNIT = /\d ?(ps|ns|µs|ms)\b/g;

const suite = await startSuite(['tf_leak', 'tf_fixed', 'jax_liveout', 'jax_clean'], BUILD, [
  'jax_gpu/amd_jax08_conv8', 'jax_gpu/amd_jax08_attn', 'torch/tracelens_qwen_h100', 'torch/kineto_resnet50_w4', 'torch/snapshot_cs336_bcrafton',
]);
const out = [];
try {
  const runs = await (await fetch(`${suite.tb.base}data/plugin/leakfinder/runs`)).json();
  const names = (runs.runs ?? runs).map((r) => r.run ?? r);
  console.log('runs', names.length, JSON.stringify(names));
  for (const run of ['', ...names]) {
    const page = await suite.browser.context.newPage();
    const seen = watch(page);
    let frame;
    try {
      frame = await openLeaks(page, suite.tb.base, run);
      await page.waitForTimeout(2500);
    } catch (e) {
      out.push({run, error: String(e).slice(0, 300)});
      await page.close();
      continue;
    }
    const r = await frame.evaluate(() => {
      const main = document.querySelector('main');
      const text = main.innerText;
      const tl = document.querySelector('[data-chart=timeline]');
      const lf = document.querySelector('[data-chart=lifetimes]');
      const heads = [...document.querySelectorAll('th')].filter((th) => th.offsetParent).map((th) => `${th.textContent.trim()}${th.title || th.querySelector('[aria-description]')?.getAttribute('aria-description') ? '' : ' (no tooltip)'}`);
      const selects = [...document.querySelectorAll('.lf-toolbar select')].filter((s) => s.offsetParent).map((s) => `${s.dataset.select}:${s.options.length}:${s.disabled ? 'disabled' : ''}`);
      const compare = [...(document.querySelector('[data-select=compare]')?.options ?? [])].map((o) => o.textContent);
      return {
        text,
        shownRun: document.querySelector('[data-select=run]')?.value,
        window: tl?.dataset.window ?? null,
        lfRange: lf?.dataset.xRange ?? null,
        lfWindow: lf?.dataset.window ?? null,
        neverFreedEnd: lf?.dataset.neverFreedEnd ?? null,
        stackHint: !!document.querySelector('[data-hint=stack]'),
        heads,
        selects,
        compare,
        verdict: document.querySelector('.lf-verdict')?.dataset.verdict,
        reason: document.querySelector('.lf-verdict-reason')?.textContent?.slice(0, 300),
      };
    });
    const safe = (run || 'default').replace(/[^\w]+/g, '_');
    await page.screenshot({path: `/tmp/s5audit/${safe}.png`, fullPage: true}).catch(() => {});
    await frame.locator('main').screenshot({path: `/tmp/s5audit/${safe}_frame.png`}).catch(() => {});
    const perStep = [...new Set([...r.text.matchAll(/[+-]?[\d.]+ (?:B|KiB|MiB|GiB) ?(?:\/ ?step|per step)/g)].map((m) => m[0]))];
    out.push({
      run,
      shownRun: r.shownRun,
      verdict: r.verdict,
      reason: r.reason,
      plurals: [...r.text.matchAll(PLURAL)].map((m) => r.text.slice(Math.max(0, m.index - 30), m.index + 30)),
      enums: [...r.text.matchAll(ENUM)].map((m) => r.text.slice(Math.max(0, m.index - 30), m.index + 30)),
      timeUnits: [...r.text.matchAll(TIME_UNIT)].length,
      window: r.window,
      lfRange: r.lfRange,
      lfWindow: r.lfWindow,
      neverFreedEnd: r.neverFreedEnd,
      stackHint: r.stackHint,
      headsNoTip: r.heads.filter((h) => h.endsWith('(no tooltip)')),
      selects: r.selects,
      compare: r.compare,
      perStep,
      failures: seen.failures,
      errors: seen.errors,
    });
    writeFileSync(`/tmp/s5audit/${safe}.txt`, r.text);
    await page.close();
  }
} finally {
  writeFileSync('/tmp/s5audit/audit.json', JSON.stringify(out, null, 1));
  await suite.stop();
}
