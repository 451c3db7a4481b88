// tools/check_types.mjs: the routes' real answers hold to src/wire.ts, and a
// copy of wire.ts that drifted from them fails, naming the route, the JSON path
// and the interface field.

import assert from 'node:assert/strict';
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {WIRE_TS, checkAnswers, dumpAnswers, LOGDIRS, ROUTE_TYPES} from '../tools/check_types.mjs';

let folder;
let answers;

before(() => {
  folder = mkdtempSync(join(tmpdir(), 'leakfinder-check-types-'));
  answers = join(folder, 'answers.jsonl');
  // The demo runs hold every route's answer: leaks, programs, comparisons.
  dumpAnswers(answers, [LOGDIRS[0]]);
});

after(() => rmSync(folder, {recursive: true, force: true}));

/** A copy of wire.ts with `from` (which must occur once) replaced by `to`. */
function drifted(from, to) {
  const source = readFileSync(WIRE_TS, 'utf8');
  assert.equal(source.split(from).length, 2, `wire.ts holds ${JSON.stringify(from)} once`);
  const path = join(folder, `api_${Math.random().toString(36).slice(2)}.ts`);
  writeFileSync(path, source.replace(from, to));
  return path;
}

test('the real answers hold to wire.ts', () => {
  assert.deepEqual(checkAnswers(answers), []);
});

test('a key the JSON has and the interface lost fails, naming route, path and field', () => {
  const errors = checkAnswers(answers, drifted('  onset_step: number | null;\n', ''));
  assert.equal(errors.length, 1, errors.join('\n'));
  assert.match(errors[0], /^route report \(demo_logs: report\?run=/);
  assert.match(errors[0], /at \$\.runs\[0\]\.hosts\[0\]\.allocators\[0\]\.families\[0\]\.onset_step: the JSON has key "onset_step", which interface Family lacks/);
});

test('a non-optional key the JSON lacks fails', () => {
  const errors = checkAnswers(answers, drifted('  regrown: boolean;\n', '  regrown: boolean;\n  regrowth: number;\n'));
  assert.equal(errors.length, 1, errors.join('\n'));
  assert.match(errors[0], /^route report .*: the JSON lacks "regrowth", which Family\.regrowth does not mark optional/);
});

test('a value of another type fails, nested interfaces followed', () => {
  const errors = checkAnswers(answers, drifted('export interface Delta {\n  a: number;', 'export interface Delta {\n  a: string;'));
  assert.ok(errors.length >= 1);
  assert.ok(errors.every((e) => e.startsWith('route compare ')), errors.join('\n'));
  assert.match(errors[0], /at \$\.hosts\[0\]\.\w+\[0\]\.peak_\w+\.a: Delta\.a is string, the JSON has number \d+ \(and \d+ more places\)$/);
});

test('a string outside its literal union fails', () => {
  const errors = checkAnswers(answers, drifted("'growing' | 'persistent' | 'bounded' | 'window_end'", "'growing' | 'persistent' | 'bounded'"));
  assert.ok(errors.some((e) => /^route report .*\.families\[\d+\]\.kind: Family\.kind is LeakKind, the JSON has string "window_end"/.test(e)), errors.join('\n'));
});

test('a route the plugin serves but no interface is mapped to fails', () => {
  const {timeline: _, ...fewer} = ROUTE_TYPES;
  assert.deepEqual(checkAnswers(answers, WIRE_TS, fewer), ['route timeline: the plugin serves it, but check_types.mjs maps it to no interface of wire.ts']);
});
