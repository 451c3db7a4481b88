// The panels' lifecycle plumbing (src/panel.ts), in node: a latest-only
// request drops an older answer that arrives late, and a panel's disposables
// release what it holds, its requests included.

import assert from 'node:assert/strict';
import {before, test} from 'node:test';
import {importSources} from './sources.mjs';

let m;

before(async () => {
  m = await importSources(`export {Disposables, LatestRequest, STALE, live} from './panel';`);
});

/** A request whose answer is given by hand, as a slow server would; it rejects with an AbortError when aborted only if `honoursAbort`. */
function deferred(honoursAbort = true) {
  const d = {signal: null, resolve: null, reject: null};
  d.request = (signal) => {
    d.signal = signal;
    return new Promise((resolve, reject) => {
      d.resolve = resolve;
      d.reject = reject;
      if (honoursAbort) signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
    });
  };
  return d;
}

test('an older answer arriving after a newer request is dropped, whether or not its fetch honoured the abort', async () => {
  for (const honoursAbort of [true, false]) {
    const latest = new m.LatestRequest();
    const older = deferred(honoursAbort);
    const newer = deferred(honoursAbort);
    const first = latest.run(older.request);
    const second = latest.run(newer.request);
    assert.equal(older.signal.aborted, true, 'the newer request aborts the older');
    assert.equal(newer.signal.aborted, false);
    newer.resolve('new');
    older.resolve('old');
    assert.equal(await second, 'new');
    assert.equal(await first, m.STALE);
  }
});

test('the newest request errors as itself; a superseded one errors as STALE', async () => {
  const latest = new m.LatestRequest();
  const older = deferred(false);
  const first = latest.run(older.request);
  const failing = deferred();
  const second = latest.run(failing.request);
  older.reject(new Error('the server failed the old one'));
  failing.reject(new Error('the server failed'));
  assert.equal(await first, m.STALE);
  await assert.rejects(second, /the server failed$/);
});

test('an answer that came is kept until a newer request: a request that settled is not superseded by itself', async () => {
  const latest = new m.LatestRequest();
  assert.equal(await latest.run(async () => 1), 1);
  const signal = latest.signal;
  assert.equal(signal.aborted, false);
  latest.begin();
  assert.equal(signal.aborted, true, 'begin() supersedes the newest');
});

test("destroying a panel's disposables aborts its requests in flight: their answers are STALE", async () => {
  const panel = new m.Disposables();
  const timeline = panel.latest();
  const lifetimes = panel.latest();
  const a = deferred(false);
  const b = deferred();
  const pendingA = timeline.run(a.request);
  const pendingB = lifetimes.run(b.request);
  assert.equal(m.live.requests, 2);
  panel.dispose();
  assert.equal(a.signal.aborted, true);
  assert.equal(b.signal.aborted, true);
  a.resolve('late');
  assert.equal(await pendingA, m.STALE);
  assert.equal(await pendingB, m.STALE);
  assert.equal(m.live.requests, 0);
  assert.equal(timeline.signal.aborted, true, 'a panel destroyed stays so: its signal is not renewed');
});

test('disposables are released last first, once, and counted while held; one added after dispose is released at once', () => {
  const panel = new m.Disposables();
  const order = [];
  // A listener on something that outlives the panel (the window, TensorBoard's channel) is removed with it.
  const target = new EventTarget();
  let heard = 0;
  const listener = () => heard++;
  target.addEventListener('ping', listener);
  panel.add(() => target.removeEventListener('ping', listener));
  panel.add(() => order.push('first'));
  panel.own({destroy: () => order.push('chart')});
  panel.observe({disconnect: () => order.push('observer')});
  target.dispatchEvent(new Event('ping'));
  assert.deepEqual([m.live.observers, heard], [1, 1]);
  panel.dispose();
  panel.dispose();
  target.dispatchEvent(new Event('ping'));
  assert.deepEqual(order, ['observer', 'chart', 'first']);
  assert.deepEqual([m.live.observers, heard], [0, 1]);
  panel.add(() => order.push('late'));
  assert.deepEqual(order, ['observer', 'chart', 'first', 'late']);
});
