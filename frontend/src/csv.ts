// CSV download of a whole table (every page, in the table's sort and filter),
// with the same cells as `tb-leakfinder report --csv` (tb_leakfinder/views/csv.py):
// the columns that say where a row belongs (run, host, allocator or module), then
// the rows' own JSON keys, nested values as JSON, and a leading apostrophe on text
// a spreadsheet would run as a formula. A row's `site` is its own columns, in its
// place: the site's keys, its stack's frames joined by " ← ".

import type {Site} from './api';
import {el} from './dom';
import {STACK_SEPARATOR} from './sites';
import type {PageQuery, Source} from './table';

/** What leads a formula; a tab or carriage return can hide one (OWASP's list). */
const FORMULA_STARTS = ['=', '+', '-', '@', '\t', '\r'];
/** Rows asked of the source at once: within the server's page limit. */
export const CSV_PAGE = 1000;

/** A cell's text: numbers as they are, nested values as JSON, formula-looking text quoted. */
export function neutralise(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return String(value);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return FORMULA_STARTS.some((c) => text.startsWith(c)) ? `'${text}` : text;
}

/** A site's cells, as views/csv.py's site_columns: its keys, the stack (innermost first) as one line. */
export function siteColumns(site: Site): Record<string, unknown> {
  return {...site, stack: site.stack.join(STACK_SEPARATOR)};
}

/** The row with its `site` replaced, in its place, by `columns` (views/csv.py's _with_site). */
export function withSite(row: object, columns: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (key === 'site') Object.assign(out, columns);
    else out[key] = value;
  }
  return out;
}

/** A family row with its `cause` as three columns in its place (views/csv.py's cause_columns): its id, evidence, fix. */
export function withCause(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (key !== 'cause') out[key] = value;
    else {
      const cause = value as {id: string; evidence: string; fix: string} | null;
      Object.assign(out, {cause: cause && cause.id, cause_evidence: cause && cause.evidence, cause_fix: cause && cause.fix});
    }
  }
  return out;
}

function field(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * Where a table's rows belong, in column order, under the CLI's names: run, host,
 * allocator (its `name`) or module; run_a, run_b, host_a, host_b, allocator_a,
 * allocator_b for a comparison. Null is an empty cell.
 */
export type CsvWhere = Readonly<Record<string, string | null>>;

/** A line of cells; a lone empty cell is quoted, as Python's csv writes it, so that it is not a blank line. */
function line(cells: string[]): string {
  return `${cells.length === 1 && cells[0] === '' ? '""' : cells.map(field).join(',')}\r\n`;
}

/**
 * RFC 4180 text as views/csv.py's Table writes it: a header of the `where`
 * columns, then every other key of the (JSON object) rows in the order first
 * met; each line holds the `where` values, then the row's own.
 */
export function toCsv(rows: readonly unknown[], where: CsvWhere = {}): string {
  const records = rows.map((row) => (row !== null && typeof row === 'object' ? (row as Record<string, unknown>) : {value: row}));
  const context = Object.keys(where);
  const keys = new Set<string>(context);
  for (const record of records) for (const key of Object.keys(record)) keys.add(key);
  const header = [...keys];
  const own = header.slice(context.length);
  const fixed = context.map((k) => neutralise(where[k]));
  const lines = [line(header.map(neutralise))];
  for (const record of records) lines.push(line([...fixed, ...own.map((k) => neutralise(record[k]))]));
  return lines.join('');
}

/** Every row of `source` for `query` (sort and filter kept), a page at a time. */
export async function fetchAll<T>(source: Source<T>, query: PageQuery, signal: AbortSignal): Promise<T[]> {
  const rows: T[] = [];
  for (;;) {
    const page = await source({...query, offset: rows.length, limit: CSV_PAGE}, signal);
    rows.push(...page.rows);
    if (!page.rows.length || rows.length >= page.total) return rows;
  }
}

export function csvFileName(caption: string): string {
  const slug = caption.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  return `${slug || 'table'}.csv`;
}

function save(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], {type: 'text/csv;charset=utf-8'}));
  const link = el('a', {href: url, download: name});
  link.style.display = 'none';
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** A button that downloads the whole table `caption` as CSV, under the columns of `where`; `rows` fetches all of it. */
export function csvButton(caption: string, rows: (signal: AbortSignal) => Promise<readonly unknown[]>, where?: CsvWhere): HTMLButtonElement {
  const label = 'Download CSV';
  const button = el('button', {type: 'button', class: 'lf-csv', 'aria-label': `Download ${caption} as CSV`}, label);
  button.addEventListener('click', async () => {
    button.disabled = true;
    button.textContent = 'Preparing CSV…';
    try {
      save(csvFileName(caption), toCsv(await rows(new AbortController().signal), where));
      button.textContent = label;
    } catch (err) {
      button.textContent = `CSV failed: ${err instanceof Error ? err.message : String(err)}`;
    } finally {
      button.disabled = false;
    }
  });
  return button;
}
