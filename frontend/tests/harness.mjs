// Test harness: a real `tensorboard` process on a free port over a temporary
// logdir, and Debian's chromium driven by playwright-core.

import {spawn, spawnSync} from 'node:child_process';
import {cpSync, existsSync, mkdtempSync, readdirSync, rmSync} from 'node:fs';
import {createServer} from 'node:net';
import {tmpdir} from 'node:os';
import {basename, delimiter, dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {chromium} from 'playwright-core';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Real profiles recorded by others, beside the clone (as tests/integration/test_real_jax_gpu.py finds them), or where $SHARED_PROFILES says. */
export const SHARED_PROFILES = process.env.SHARED_PROFILES || join(REPO, '..', 'shared', 'profiles');
export const PYTHON = process.env.PYTHON || 'python3';
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A fresh logdir holding copies of the demo runs (by name), of the shared
 * profiles' runs (by path under SHARED_PROFILES, copied under their last
 * name, when present) and whatever `python` writes.
 */
export function makeLogdir(demoRuns, pythonSnippet, sharedRuns = []) {
  const logdir = mkdtempSync(join(tmpdir(), 'leakfinder-logdir-'));
  for (const name of demoRuns) {
    const src = join(REPO, 'demo_logs', name);
    if (existsSync(src)) cpSync(src, join(logdir, name), {recursive: true});
  }
  for (const path of sharedRuns) {
    const src = join(SHARED_PROFILES, path);
    if (existsSync(src)) cpSync(src, join(logdir, basename(path)), {recursive: true});
  }
  if (pythonSnippet) {
    const result = spawnSync(PYTHON, ['-c', pythonSnippet, logdir], {cwd: REPO, encoding: 'utf8'});
    if (result.status !== 0) throw new Error(`profile builder failed:\n${result.stdout}\n${result.stderr}`);
  }
  return logdir;
}

/** The run name (`<tb_run>/<session>`) of the single session under logdir/tbRun. */
export function runName(logdir, tbRun) {
  const sessions = readdirSync(join(logdir, tbRun, 'plugins', 'profile'));
  return `${tbRun}/${sessions.sort()[0]}`;
}

async function waitForServer(url, child, output, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`tensorboard exited with ${child.exitCode}:\n${output()}`);
    try {
      const response = await fetch(url);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`tensorboard did not answer ${url} within ${timeoutMs} ms:\n${output()}`);
}

/** Starts `tensorboard --logdir logdir` and waits until the plugin answers. */
export async function startTensorBoard(logdir, extraArgs = []) {
  const port = await freePort();
  const args = ['-m', 'tensorboard.main', '--logdir', logdir, '--port', String(port), '--host', '127.0.0.1', ...extraArgs];
  // The working tree's tb_leakfinder (and its freshly built bundle), not an older installed copy.
  const env = {...process.env, PYTHONPATH: [REPO, process.env.PYTHONPATH].filter(Boolean).join(delimiter)};
  const child = spawn(PYTHON, args, {cwd: tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe']});
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const prefix = extraArgs.includes('--path_prefix') ? extraArgs[extraArgs.indexOf('--path_prefix') + 1] : '';
  const base = `http://127.0.0.1:${port}${prefix}/`;
  await waitForServer(`${base}data/plugin/leakfinder/runs`, child, () => log, 90_000);
  return {
    base,
    port,
    log: () => log,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function launchBrowser() {
  const userDataDir = mkdtempSync(join(tmpdir(), 'leakfinder-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: {width: 1400, height: 1000},
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, {recursive: true, force: true});
    },
  };
}

/**
 * Watches a page: failed plugin requests (HTTP >= 400 or network failure),
 * dialogs (an injected alert() would open one) and page errors.
 */
export function watch(page) {
  // `aborted`: requests the page itself cancelled (a newer one replaced them, or the page navigated away).
  const seen = {failures: [], aborted: [], dialogs: [], errors: [], pluginRequests: []};
  page.on('response', (r) => {
    if (!r.url().includes('/data/plugin/leakfinder/')) return;
    seen.pluginRequests.push(r.url());
    if (r.status() >= 400) seen.failures.push(`${r.status()} ${r.url()}`);
  });
  page.on('requestfailed', (r) => {
    if (!r.url().includes('/data/plugin/leakfinder/')) return;
    const reason = r.failure()?.errorText ?? '';
    (reason === 'net::ERR_ABORTED' ? seen.aborted : seen.failures).push(`${reason} ${r.url()}`);
  });
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('pageerror', (e) => seen.errors.push(e.message));
  return seen;
}

/**
 * What a test file needs: a fresh logdir (copies of `demoRuns`, of
 * `sharedRuns` and what `pythonSnippet` writes), `tensorboard --path_prefix /tb` on it (so that the
 * bundle's relative URLs are proven) and a browser. `stop()` ends and removes all.
 */
export async function startSuite(demoRuns, pythonSnippet, sharedRuns = []) {
  const logdir = makeLogdir(demoRuns, pythonSnippet, sharedRuns);
  const tb = await startTensorBoard(logdir, ['--path_prefix', '/tb']);
  const browser = await launchBrowser();
  return {
    logdir,
    tb,
    browser,
    async stop() {
      await browser.close();
      await tb.stop();
      rmSync(logdir, {recursive: true, force: true});
    },
  };
}

/** Opens TensorBoard on the Leaks tab with `run` selected; returns the plugin's frame once it is ready. */
export async function openLeaks(page, base, run) {
  const hash = `#leakfinder${run ? `&p.leakfinder.run=${encodeURIComponent(run)}` : ''}`;
  await page.goto(base + hash);
  const frameElement = await page.waitForSelector('iframe[src*="plugin_entry.html?name=leakfinder"]', {timeout: 60_000});
  const frame = await frameElement.contentFrame();
  await frame.waitForSelector('main.lf-root[data-state="ready"]', {timeout: 90_000});
  return frame;
}
