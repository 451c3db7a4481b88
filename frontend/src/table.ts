// A sortable, filterable, paged table usable from the keyboard. Rows come
// from a source that pages (the server, or an in-memory list).

import {csvButton, type CsvWhere, fetchAll} from './csv';
import {append, breakableChild, type Child, clear, el} from './dom';
import {formatCount} from './format';
import {LatestRequest, STALE} from './panel';

export interface Column<T> {
  key: string;
  label: string;
  /** Sortable when set; the key sent to the source. */
  sort?: string;
  numeric?: boolean;
  wrap?: boolean;
  title?: string;
  cell(row: T): Child;
}

export interface PageQuery {
  offset: number;
  limit: number;
  sort: string;
  order: 'asc' | 'desc';
  filter: string;
}

export interface Page<T> {
  rows: T[];
  total: number;
}

export type Source<T> = (query: PageQuery, signal: AbortSignal) => Promise<Page<T>>;

export interface TableOptions<T> {
  caption: string;
  columns: Column<T>[];
  source: Source<T>;
  pageSize?: number;
  sort: string;
  order: 'asc' | 'desc';
  /** Shows a text filter that is passed to the source. */
  filterLabel?: string;
  extraTools?: Child[];
  rowKey(row: T): string;
  rowClass?(row: T): string;
  /** Rows become selectable (click, Enter or Space). */
  onSelect?(row: T | null): void;
  emptyText?: string;
  /** The CSV's first columns: where the rows belong (run, host, allocator or module), as the CLI's CSV has them. */
  where?: CsvWhere;
  /** A row as the CSV has it, when not its own JSON (a site as columns). */
  csvRow?(row: T): unknown;
  /** What to say of a row below it, across the columns (part of the row: selected with it); null for nothing. */
  detail?(row: T): Child | null;
}

export class DataTable<T> {
  readonly element: HTMLElement;
  private readonly body: HTMLTableSectionElement;
  /** Each sortable header's label, which the sort arrow follows. */
  private readonly headLabels = new Map<string, HTMLElement>();
  private readonly headCells = new Map<string, HTMLTableCellElement>();
  private readonly status: HTMLElement;
  private readonly prev: HTMLButtonElement;
  private readonly next: HTMLButtonElement;
  private readonly query: PageQuery;
  private rows: T[] = [];
  private selected: string | null = null;
  /** The page being fetched: a newer page (sort, filter, page) drops it. */
  private readonly request = new LatestRequest();
  private filterTimer = 0;

  constructor(private readonly options: TableOptions<T>) {
    this.query = {offset: 0, limit: options.pageSize ?? 25, sort: options.sort, order: options.order, filter: ''};
    const head = el('tr');
    for (const column of options.columns) {
      const th = el('th', {scope: 'col', class: column.numeric ? 'lf-num' : null, title: column.title});
      // A header with a meaning to tell shows an ⓘ (styles.css): its tooltip, and a sort button's accessible description.
      if (column.sort) {
        const label = el('span', {}, column.label);
        const button = el('button', {type: 'button', 'data-sort': column.sort, 'aria-description': column.title}, label);
        button.addEventListener('click', () => this.sortBy(column.sort as string));
        this.headLabels.set(column.sort, label);
        this.headCells.set(column.sort, th);
        th.appendChild(button);
      } else {
        th.textContent = column.label;
      }
      head.appendChild(th);
    }
    this.body = el('tbody');
    const table = el('table', {class: 'lf-table'}, el('caption', {class: 'lf-sr'}, options.caption), el('thead', {}, head), this.body);
    table.querySelector('caption')?.setAttribute('style', 'position:absolute;left:-9999px');
    this.status = el('span', {role: 'status'});
    this.prev = el('button', {type: 'button', 'aria-label': `Previous page of ${options.caption}`}, '‹ Prev');
    this.next = el('button', {type: 'button', 'aria-label': `Next page of ${options.caption}`}, 'Next ›');
    this.prev.addEventListener('click', () => this.page(-1));
    this.next.addEventListener('click', () => this.page(1));
    const tools = el('div', {class: 'lf-table-tools'});
    if (options.filterLabel) {
      const input = el('input', {type: 'search', placeholder: options.filterLabel, 'aria-label': options.filterLabel});
      input.addEventListener('input', () => {
        clearTimeout(this.filterTimer);
        this.filterTimer = window.setTimeout(() => {
          this.query.filter = input.value.trim();
          this.query.offset = 0;
          void this.load();
        }, 150);
      });
      tools.appendChild(input);
    }
    append(tools, ...(options.extraTools ?? []), csvButton(options.caption, (signal) => this.csvRows(signal), options.where));
    this.element = el(
      'div',
      {class: 'lf-table-block'},
      tools.childNodes.length ? tools : null,
      el('div', {class: 'lf-table-wrap'}, table),
      el('div', {class: 'lf-pager'}, this.prev, this.next, this.status),
    );
    this.body.addEventListener('keydown', (event) => this.onKey(event));
    this.updateHeaders();
  }

  /** (Re)loads the current page from the source. */
  async load(): Promise<void> {
    this.status.textContent = 'Loading…';
    try {
      const query = {...this.query};
      const page = await this.request.run((signal) => this.options.source(query, signal));
      if (page === STALE) return;
      if (page.total > 0 && this.query.offset >= page.total) {
        this.query.offset = Math.max(0, Math.floor((page.total - 1) / this.query.limit) * this.query.limit);
        return this.load();
      }
      this.rows = page.rows;
      this.renderRows(page.total);
    } catch (err) {
      this.status.textContent = `Could not load: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  /** Drops the page being fetched and a filter not yet applied (the table is going away). */
  destroy(): void {
    clearTimeout(this.filterTimer);
    this.request.cancel();
  }

  /** Every row, in the table's sort and filter, as the CSV has them. */
  private async csvRows(signal: AbortSignal): Promise<readonly unknown[]> {
    const rows = await fetchAll(this.options.source, this.query, signal);
    const {csvRow} = this.options;
    return csvRow ? rows.map((row) => csvRow(row)) : rows;
  }

  reset(): Promise<void> {
    this.query.offset = 0;
    return this.load();
  }

  setSelected(key: string | null): void {
    this.selected = key;
    for (const tr of this.rowElements()) tr.setAttribute('aria-selected', String(tr.dataset.key === key));
    for (const tr of Array.from(this.body.rows)) if (tr.dataset.detailFor !== undefined) tr.classList.toggle('lf-detail-selected', tr.dataset.detailFor === key);
  }

  /** The rows of the data, without the detail rows below them. */
  private rowElements(): HTMLTableRowElement[] {
    return Array.from(this.body.rows).filter((tr) => tr.dataset.key !== undefined);
  }

  private renderRows(total: number): void {
    clear(this.body);
    const {columns, onSelect} = this.options;
    if (!this.rows.length) {
      this.body.appendChild(el('tr', {}, el('td', {colspan: columns.length, class: 'lf-muted'}, this.options.emptyText ?? 'Nothing to show.')));
    }
    this.rows.forEach((row, index) => {
      const key = this.options.rowKey(row);
      const tr = el('tr', {'data-key': key, class: this.options.rowClass?.(row) ?? null});
      for (const column of columns) {
        const cell = column.cell(row);
        const content = column.wrap ? breakableChild(cell) : cell;
        tr.appendChild(el('td', {class: [column.numeric ? 'lf-num' : '', column.wrap ? 'lf-wrap' : ''].join(' ').trim() || null}, content));
      }
      if (onSelect) {
        tr.classList.add('lf-selectable');
        tr.tabIndex = index === 0 ? 0 : -1;
        tr.setAttribute('aria-selected', String(key === this.selected));
        tr.addEventListener('click', () => this.select(row, tr));
      }
      this.body.appendChild(tr);
      const detail = this.options.detail?.(row);
      if (detail) {
        tr.classList.add('lf-has-detail');
        const below = el('tr', {class: 'lf-detail', 'data-detail-for': key}, el('td', {colspan: columns.length}, detail));
        below.classList.toggle('lf-detail-selected', key === this.selected);
        if (onSelect) below.addEventListener('click', () => this.select(row, tr));
        this.body.appendChild(below);
      }
    });
    const first = total ? this.query.offset + 1 : 0;
    const last = this.query.offset + this.rows.length;
    this.status.textContent = `${formatCount(first)}–${formatCount(last)} of ${formatCount(total)}`;
    this.prev.disabled = this.query.offset === 0;
    this.next.disabled = last >= total;
  }

  private select(row: T, tr: HTMLTableRowElement): void {
    const key = this.options.rowKey(row);
    const deselect = key === this.selected;
    this.setSelected(deselect ? null : key);
    for (const other of this.rowElements()) other.tabIndex = other === tr ? 0 : -1;
    this.options.onSelect?.(deselect ? null : row);
  }

  private onKey(event: KeyboardEvent): void {
    const tr = (event.target as HTMLElement).closest('tr');
    if (!tr || !this.options.onSelect || tr.dataset.key === undefined) return;
    const rows = this.rowElements();
    const index = rows.indexOf(tr as HTMLTableRowElement);
    let target: HTMLTableRowElement | undefined;
    if (event.key === 'ArrowDown') target = rows[index + 1];
    else if (event.key === 'ArrowUp') target = rows[index - 1];
    else if (event.key === 'Home') target = rows[0];
    else if (event.key === 'End') target = rows[rows.length - 1];
    else if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      const row = this.rows[index];
      if (row !== undefined) this.select(row, tr as HTMLTableRowElement);
      return;
    } else return;
    event.preventDefault();
    if (target) {
      for (const other of rows) other.tabIndex = other === target ? 0 : -1;
      target.focus();
    }
  }

  private sortBy(sort: string): void {
    if (this.query.sort === sort) this.query.order = this.query.order === 'asc' ? 'desc' : 'asc';
    else {
      this.query.sort = sort;
      const column = this.options.columns.find((c) => c.sort === sort);
      this.query.order = column?.numeric ? 'desc' : 'asc';
    }
    this.query.offset = 0;
    this.updateHeaders();
    void this.load();
  }

  private updateHeaders(): void {
    for (const [sort, th] of this.headCells) {
      const active = sort === this.query.sort;
      th.setAttribute('aria-sort', active ? (this.query.order === 'asc' ? 'ascending' : 'descending') : 'none');
      const label = this.headLabels.get(sort);
      const column = this.options.columns.find((c) => c.sort === sort);
      if (label && column) label.textContent = column.label + (active ? (this.query.order === 'asc' ? ' ▲' : ' ▼') : '');
    }
  }

  private page(delta: number): void {
    this.query.offset = Math.max(0, this.query.offset + delta * this.query.limit);
    void this.load();
  }
}

/**
 * A source over rows already in memory: sorts by `sortValue`, filters by the
 * lower-cased text of `filterText`, pages.
 */
export function memorySource<T>(
  rows: T[],
  sortValue: (row: T, sort: string) => number | string | null,
  filterText?: (row: T) => string,
): Source<T> {
  return async (query) => {
    const needle = query.filter.toLowerCase();
    let kept = needle && filterText ? rows.filter((row) => filterText(row).toLowerCase().includes(needle)) : rows.slice();
    const sign = query.order === 'asc' ? 1 : -1;
    kept = kept.sort((a, b) => {
      const x = sortValue(a, query.sort);
      const y = sortValue(b, query.sort);
      if (x === y) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      return (x < y ? -1 : 1) * sign;
    });
    return {rows: kept.slice(query.offset, query.offset + query.limit), total: kept.length};
  };
}

/** Sorts by the row's own field named by the sort key. */
export function byField<T extends object>(row: T, sort: string): number | string | null {
  const value = (row as Record<string, unknown>)[sort];
  return typeof value === 'number' || typeof value === 'string' ? value : null;
}
