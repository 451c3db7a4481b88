// The logic the frontend shares with the Python package, against the same case files
// (tests/cases/*.json) that the pytest suite reads: a disagreement fails one side or the other.

import assert from 'node:assert/strict';
import {readFileSync, readdirSync} from 'node:fs';
import {join} from 'node:path';
import {before, test} from 'node:test';
import {REPO_CASES, SRC, importSources} from './sources.mjs';

let m;

before(async () => {
  m = await importSources(`
    export {countOf, formatBytes, formatFraction, knownCapacity, shortProgram} from './format';
    export {captureCount, tensorboardRun} from './panels/history';
    export {answerKey, queryBuffers} from './inline';
    export {neutralise, siteColumns, toCsv, withSite} from './csv';
    export {CAUSE_TITLES, HOLDER_KIND_WORDS, SHAPE_MATCH_WORDS, ambiguousText, heldBy} from './holders';
  `);
});

function cases(name) {
  return JSON.parse(readFileSync(join(REPO_CASES, `${name}.json`), 'utf8'));
}

/** Every [input, expected] pair of `pairs` through `f`; the mismatches together, so one run shows them all. */
function each(pairs, f) {
  assert.ok(pairs.length > 0, 'no cases');
  const wrong = pairs.filter(([input, expected]) => f(input) !== expected).map(([input, expected]) => `${JSON.stringify(input)}: ${JSON.stringify(f(input))}, expected ${JSON.stringify(expected)}`);
  assert.deepEqual(wrong, []);
}

test('number formatting answers tests/cases/format.json', () => {
  const c = cases('format');
  each(c.bytes, m.formatBytes);
  each(c.fraction, m.formatFraction);
  each(c.short_program, m.shortProgram);
  each(c.count, ([n, word, many]) => m.countOf(n, word, many));
  each(c.known_capacity, ([capacity, peak]) => m.knownCapacity(capacity, peak));
});

test('the TensorBoard run of a session answers tests/cases/tensorboard_run.json', () => {
  const c = cases('tensorboard_run');
  each(c.run, m.tensorboardRun);
  assert.ok(c.several.length > 0, 'no cases');
  for (const {sessions, runs} of c.several) {
    const listed = sessions.map((run) => ({run}));
    // The runs the tab shows a history for: those of a session with another capture in its run.
    const several = [...new Set(sessions.filter((s) => m.captureCount(listed, s) > 1).map(m.tensorboardRun))].sort();
    assert.deepEqual(several, runs, JSON.stringify(sessions));
  }
});

test("a standalone page's answer keys answer tests/cases/answer_key.json", () => {
  each(cases('answer_key').cases.map((c) => [c, c.key]), (c) => m.answerKey(c.route, c.args));
});

test('CSV cells and tables answer tests/cases/csv.json', () => {
  const c = cases('csv');
  each(c.cells, m.neutralise);
  each(c.tables.map((t) => [t, t.csv]), (t) => m.toCsv(t.rows, t.where));
  // Key order is part of the answer: a row's site columns stand in its place.
  each(c.sites.map((s) => [s.row, JSON.stringify(Object.entries(s.out))]), (row) => JSON.stringify(Object.entries(m.withSite(row, m.siteColumns(row.site)))));
});

test("a standalone page's buffer query answers tests/cases/buffer_paging.json", () => {
  const c = cases('buffer_paging');
  const all = {run: 'r', host: 'h', allocator: c.allocator, total: c.buffers.length, buffers: c.buffers, sites: c.sites, families: c.families};
  const answer = (q) => {
    const {status, body} = m.queryBuffers(all, q.args, c.limits);
    return JSON.stringify(status === 200 ? {ids: body.buffers.map((b) => b.id), total: body.total} : {status, error: body.error});
  };
  each(c.queries.map((q) => [q, JSON.stringify('error' in q ? {status: q.status, error: q.error} : {ids: q.ids, total: q.total})]), answer);
});

test("a family's holders and likely cause in words answer tests/cases/holders.json", () => {
  const words = cases('holders');
  assert.deepEqual(m.HOLDER_KIND_WORDS, words.holder_kind);
  assert.deepEqual(m.CAUSE_TITLES, words.cause_title);
  each(words.held_by, (args) => m.heldBy(...args));
  assert.equal(m.SHAPE_MATCH_WORDS, words.shape_match);
  each(words.ambiguous, (args) => m.ambiguousText(...args));
});

test('every count the tab words goes through countOf: no plural made by hand in the sources', () => {
  const files = readdirSync(SRC, {recursive: true}).filter((f) => f.endsWith('.ts') && f !== 'wire.ts' && f !== 'format.ts');
  assert.ok(files.length > 20, 'the sources were read');
  // "buffer${n === 1 ? '' : 's'}", "entr${… ? 'y' : 'ies'}" and "buffer(s)": a noun's plural made by hand (a verb's
  // agreement, "1 host leaks", is no noun's).
  const handMade = /=== 1 \? '(y|)' : '(s|es|ies)'|[a-z]\(s\)(?= [a-z])|\(ies\)/;
  const found = files.flatMap((f) =>
    readFileSync(`${SRC}/${f}`, 'utf8')
      .split('\n')
      .map((line, i) => [`${f}:${i + 1}`, line])
      .filter(([, line]) => handMade.test(line)),
  );
  assert.deepEqual(found, []);
});
