// Holds the wire types of src/wire.ts, which tools/gen_wire_types.py makes from
// the server's schema (tb_leakfinder/wire/schema.py), against real answers of
// the Python routes: what the schema declares is what the serializers send
// (mypy checks the keys they write; this checks the values, the casts included).
// Every route is asked on the demo runs, the accuracy captures and runs of
// several captures that tools/dump_answers.py writes (for `history` and the
// report's `histories`), and each answer is walked alongside its interface,
// read with the TypeScript compiler. A key the interface lacks, a non-optional
// key the answer lacks, or a value of another kind (number, string and its
// literals, boolean, null, array, object) fails the check.
//
//   node tools/check_types.mjs                 dump the answers, then check them
//   node tools/check_types.mjs --answers FILE  check answers dumped before
//   node tools/check_types.mjs --api FILE      check another copy of wire.ts

import {spawnSync} from 'node:child_process';
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {fileURLToPath} from 'node:url';
import {parseArgs} from 'node:util';
import ts from 'typescript';

const FRONTEND = join(dirname(fileURLToPath(import.meta.url)), '..');
const REPO = join(FRONTEND, '..');
export const WIRE_TS = join(FRONTEND, 'src', 'wire.ts');
// The real PyTorch profiles lie beside the repository, when they are there: their hosts' answers are of other formats.
const TORCH_PROFILES = join(REPO, '..', 'shared', 'profiles', 'torch');
export const LOGDIRS = [join(REPO, 'demo_logs'), join(REPO, 'benchmarks', 'accuracy', 'captures'), ...(existsSync(TORCH_PROFILES) ? [TORCH_PROFILES] : [])];

/** The interface each route answers with (docs/http_api.md); the CLI's --json prints report's and compare's. */
export const ROUTE_TYPES = {
  runs: 'RunsAnswer',
  report: 'ReportAnswer',
  history: 'HistoryAnswer',
  overview: 'OverviewAnswer',
  timeline: 'TimelineAnswer',
  buffers: 'BuffersAnswer',
  module: 'ModuleAnswer',
  compare: 'ComparisonAnswer',
};

/** Writes every route's answers on `logdirs` to `out` (JSON lines, see tools/dump_answers.py). */
export function dumpAnswers(out, logdirs = LOGDIRS) {
  const python = process.env.PYTHON || 'python3';
  const done = spawnSync(python, [join(FRONTEND, 'tools', 'dump_answers.py'), out, ...logdirs], {cwd: REPO, encoding: 'utf8'});
  if (done.status !== 0) throw new Error(`dump_answers.py failed:\n${done.stdout}\n${done.stderr}`);
}

/** The exported types of `apiPath`, by name, with the checker that reads them. */
function loadTypes(apiPath) {
  // tsconfig's options, so that `T | null` keeps its null (strict) as the tab's build sees it.
  const config = ts.readConfigFile(join(FRONTEND, 'tsconfig.json'), ts.sys.readFile);
  const {options} = ts.parseJsonConfigFileContent(config.config, ts.sys, FRONTEND);
  const program = ts.createProgram([apiPath], {...options, noEmit: true});
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(apiPath);
  if (!source) throw new Error(`cannot read ${apiPath}`);
  const types = new Map();
  for (const symbol of checker.getExportsOfModule(checker.getSymbolAtLocation(source))) {
    if (symbol.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) types.set(symbol.name, checker.getDeclaredTypeOfSymbol(symbol));
  }
  return {checker, types};
}

function kindOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function shown(value) {
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Walks one JSON value alongside a TypeScript type, reporting each disagreement once per (interface field, problem). */
class Walker {
  constructor(checker, report) {
    this.checker = checker;
    this.report = report;
  }

  /** Whether `member` (one type of a union) takes a value of this kind; objects and arrays are walked after. */
  takes(member, value) {
    const f = member.flags;
    if (f & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return true;
    switch (kindOf(value)) {
      case 'null':
        return Boolean(f & ts.TypeFlags.Null);
      case 'boolean':
        if (f & ts.TypeFlags.BooleanLiteral) return this.checker.typeToString(member) === String(value);
        return Boolean(f & ts.TypeFlags.Boolean);
      case 'number':
        if (member.isNumberLiteral()) return member.value === value;
        return Boolean(f & ts.TypeFlags.Number);
      case 'string':
        if (member.isStringLiteral()) return member.value === value;
        return Boolean(f & ts.TypeFlags.String);
      case 'array':
        return this.checker.isArrayType(member);
      default:
        return Boolean(f & (ts.TypeFlags.Object | ts.TypeFlags.Intersection)) && !this.checker.isArrayType(member);
    }
  }

  /** `field` names what `type` came from: "Family.onset_step", or the route's interface at the top. */
  walk(value, type, path, field) {
    const members = (type.isUnion() ? type.types : [type]).filter((m) => !(m.flags & ts.TypeFlags.Undefined));
    const taking = members.filter((m) => this.takes(m, value));
    if (!taking.length) {
      this.report(path, field, `${field} is ${this.checker.typeToString(type)}, the JSON has ${kindOf(value)}`, ` ${shown(value)}`);
      return;
    }
    if (typeof value === 'object' && value !== null && !(taking[0].flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown))) {
      this.walkCandidates(value, taking, path, field);
    }
  }

  /** With several array or object types to choose from (a union), the first the value fits; else the one it misses least. */
  walkCandidates(value, candidates, path, field) {
    if (candidates.length === 1) return this.walkInside(value, candidates[0], path, field);
    let best = null;
    for (const candidate of candidates) {
      const found = [];
      new Walker(this.checker, (...problem) => found.push(problem)).walkInside(value, candidate, path, field);
      if (!found.length) return;
      if (!best || found.length < best.length) best = found;
    }
    for (const problem of best) this.report(...problem);
  }

  walkInside(value, type, path, field) {
    if (!Array.isArray(value)) return this.walkFields(value, type, path, field);
    const [element] = this.checker.getTypeArguments(type);
    value.forEach((v, i) => this.walk(v, element, `${path}[${i}]`, `${field}[]`));
  }

  walkFields(value, type, path, field) {
    // An anonymous object type is named by the field that holds it ("ModuleAnswer.curve").
    const named = type.aliasSymbol ?? (type.symbol?.name.startsWith('__') ? undefined : type.symbol);
    const name = named?.name ?? (type.isIntersection() ? this.checker.typeToString(type) : field);
    const props = new Map(this.checker.getPropertiesOfType(type).map((p) => [p.name, p]));
    for (const [key, v] of Object.entries(value)) {
      const prop = props.get(key);
      if (prop) this.walk(v, this.checker.getTypeOfSymbol(prop), `${path}.${key}`, `${owner(prop, name)}.${key}`);
      else this.report(`${path}.${key}`, `${name}.${key}`, `the JSON has key "${key}", which interface ${name} lacks`);
    }
    for (const [key, prop] of props) {
      if (!(key in value) && !(prop.flags & ts.SymbolFlags.Optional)) {
        this.report(path, `${owner(prop, name)}.${key}`, `the JSON lacks "${key}", which ${owner(prop, name)}.${key} does not mark optional`);
      }
    }
  }
}

/** The interface that declares `prop` (an inherited field is edited there), else `fallback`. */
function owner(prop, fallback) {
  const parent = prop.declarations?.[0]?.parent;
  return parent && ts.isInterfaceDeclaration(parent) ? parent.name.text : fallback;
}

/**
 * Every disagreement between the answers in `answersFile` and the types of
 * `apiPath`, each as one sentence naming the route, the first JSON path where
 * it shows (with how many more) and the interface field. Empty when they agree.
 */
export function checkAnswers(answersFile, apiPath = WIRE_TS, routeTypes = ROUTE_TYPES) {
  const {checker, types} = loadTypes(apiPath);
  const [header, ...answers] = readFileSync(answersFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
  const errors = [];
  for (const route of header.routes) {
    if (!(route in routeTypes)) errors.push(`route ${route}: the plugin serves it, but check_types.mjs maps it to no interface of wire.ts`);
  }
  for (const [route, name] of Object.entries(routeTypes)) {
    if (!types.has(name)) errors.push(`route ${route}: wire.ts exports no interface ${name}`);
    else if (!answers.some((a) => a.route === route)) errors.push(`route ${route}: no answer of it was checked`);
  }
  // One line per (route, field, problem): a drifted field shows in every answer, on every row.
  const seen = new Map();
  for (const answer of answers) {
    const type = types.get(routeTypes[answer.route]);
    if (!type) continue;
    // `value` is shown for the first place only: the same mismatch with other values is one line.
    const report = (path, field, problem, value = '') => {
      const key = `${answer.route}\u0000${field}\u0000${problem}`;
      const first = seen.get(key);
      if (first) first.more++;
      else seen.set(key, {route: answer.route, request: answer.request, path, problem: problem + value, more: 0});
    };
    new Walker(checker, report).walk(answer.body, type, '$', routeTypes[answer.route]);
  }
  for (const {route, request, path, problem, more} of seen.values()) {
    errors.push(`route ${route} (${request}): at ${path}: ${problem}${more ? ` (and ${more} more ${more === 1 ? 'place' : 'places'})` : ''}`);
  }
  return errors;
}

function main() {
  const {values} = parseArgs({options: {api: {type: 'string'}, answers: {type: 'string'}}});
  const apiPath = resolve(values.api ?? WIRE_TS);
  const tmp = values.answers ? null : mkdtempSync(join(tmpdir(), 'leakfinder-answers-'));
  try {
    const answers = values.answers ?? join(tmp, 'answers.jsonl');
    if (tmp) dumpAnswers(answers);
    const errors = checkAnswers(answers, apiPath);
    if (errors.length) {
      console.error(`check-types: the routes' answers and ${apiPath} disagree:\n${errors.map((e) => `  ${e}`).join('\n')}`);
      process.exitCode = 1;
    } else {
      const count = readFileSync(answers, 'utf8').trim().split('\n').length - 1;
      console.log(`check-types: ${count} answers of ${Object.keys(ROUTE_TYPES).length} routes hold to ${apiPath}`);
    }
  } finally {
    if (tmp) rmSync(tmp, {recursive: true, force: true});
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
