// The pod overview: what a run of several hosts opens on. "3 of 64 hosts
// leak", then one row per host and allocator, worst first (the server's
// order); a click (or Enter) on a row opens that host and allocator.

import type {OverviewAnswer, OverviewRow} from '../api';
import type {DataCache} from '../data';
import {el, errorMessage, notice} from '../dom';
import {formatBytesDelta, formatBytesOf, formatCount} from '../format';
import {OwningPanel, STALE} from '../panel';
import {byField, DataTable, memorySource} from '../table';
import {HEAP_TREND} from './summary';
import {VERDICT_LABEL} from './verdict';

interface RankedRow extends OverviewRow {
  /** The row's place in the server's worst-first order. */
  rank: number;
}

function verdictCell(row: OverviewRow): HTMLElement {
  const text = VERDICT_LABEL[row.verdict] ?? row.verdict;
  return el('span', {class: `lf-overview-verdict lf-verdict-${row.verdict}`, 'data-verdict': row.verdict, title: row.error ?? null}, row.error ? `${text} (not read)` : text);
}

/** The leak rate, one figure; the heap's trend (not a leak rate) in its tooltip. */
function leakCell(row: OverviewRow): HTMLElement {
  const trend = row.bytes_per_step === null ? null : `Heap trend ${formatBytesDelta(row.bytes_per_step)}/step: ${HEAP_TREND}`;
  return el('span', {title: trend}, row.verdict === 'leak' && row.leak_bytes_per_step !== null ? `${formatBytesDelta(row.leak_bytes_per_step)}/step` : '—');
}

function peakCell(row: OverviewRow): string {
  return formatBytesOf(row.peak_bytes_in_use, row.memory_capacity_bytes);
}

function sortValue(row: RankedRow, sort: string): number | string | null {
  if (sort === 'peak_fraction') return row.memory_capacity_bytes ? (row.peak_bytes_in_use ?? 0) / row.memory_capacity_bytes : (row.peak_bytes_in_use ?? 0);
  if (sort === 'step_source') return row.step_source?.kind ?? null;
  return byField(row, sort);
}

export interface OverviewOptions {
  cache: Pick<DataCache, 'overview'>;
  run: string;
  /** Opens a row's host and allocator. */
  onOpen(row: OverviewRow): void;
}

/** The view shown for a multi-host run until a host is chosen. */
export class OverviewView extends OwningPanel {
  readonly element = el('section', {class: 'lf-overview', 'data-panel': 'overview'});
  private readonly request = this.owned.latest();
  /** TensorBoard's reloads: apart from the first load, which a failed reload must not cancel. */
  private readonly reloads = this.owned.latest();
  /** The table shown: replaced by a reload whose answer differs. */
  private table: DataTable<RankedRow> | null = null;
  /** The answer shown, as sent: a reload redraws only when it differs. */
  private shown = '';

  constructor(private readonly options: OverviewOptions) {
    super();
    this.element.append(notice('loading', `Loading the overview of ${options.run}…`));
    this.owned.add(() => this.table?.destroy());
  }

  mount(): void {
    void this.load();
  }

  update(): void {}

  /** TensorBoard reloaded: asks again (a host may have been added or analysed since). */
  async reload(): Promise<void> {
    try {
      const overview = await this.reloads.run((signal) => this.options.cache.overview(this.options.run, signal));
      if (overview !== STALE && JSON.stringify(overview) !== this.shown) await this.load(overview);
    } catch {
      // the table shown stays; the next reload tries again
    }
  }

  private async load(answer?: OverviewAnswer): Promise<void> {
    try {
      const overview = answer ?? (await this.request.run((signal) => this.options.cache.overview(this.options.run, signal)));
      if (overview === STALE) return;
      this.shown = JSON.stringify(overview);
      const rows: RankedRow[] = overview.rows.map((row, rank) => ({...row, rank}));
      const table = new DataTable<RankedRow>({
        caption: `Hosts of ${overview.run}`,
        pageSize: 50,
        sort: 'rank',
        order: 'asc',
        filterLabel: 'Filter by host, allocator, verdict…',
        rowKey: (r) => `${r.host}\u0000${r.memory_id ?? ''}`,
        rowClass: (r) => `lf-overview-row-${r.verdict}`,
        // No CLI table of its own: the run says which pod the rows are of.
        where: {run: overview.run},
        onSelect: (r) => {
          if (r) this.options.onOpen(r);
        },
        columns: [
          {key: 'rank', label: '#', sort: 'rank', numeric: true, title: 'worst first: leaks, then the fastest leak, then the fastest-rising heap, then the fullest memory', cell: (r) => r.rank + 1},
          {key: 'host', label: 'Host', sort: 'host', cell: (r) => r.host},
          {key: 'name', label: 'Allocator', sort: 'name', cell: (r) => r.allocator ?? '—'},
          {key: 'verdict', label: 'Verdict', sort: 'verdict', cell: verdictCell},
          {key: 'leak_bytes_per_step', label: 'Leak per step', sort: 'leak_bytes_per_step', numeric: true, title: "the growing families' tensor bytes per step, summed: what the forecast uses; hover a row for its heap's trend", cell: leakCell},
          {key: 'peak', label: 'Peak', sort: 'peak_fraction', numeric: true, title: 'peak bytes in use, of the memory capacity', cell: peakCell},
          {key: 'step_source', label: 'Steps from', sort: 'step_source', title: 'where the steps came from', cell: (r) => r.step_source?.description ?? '—'},
        ],
        source: memorySource(rows, sortValue, (r) => [r.host, r.allocator ?? '', r.memory_id ?? '', r.verdict].join(' ')),
      });
      this.table?.destroy();
      this.table = table;
      await table.load();
      if (this.request.signal.aborted) return;
      const leaking = overview.num_leaking_hosts;
      this.element.replaceChildren(
        el(
          'h2',
          {class: `lf-overview-title lf-verdict-${leaking ? 'leak' : 'no_leak'}`, 'data-summary': 'hosts'},
          `${formatCount(leaking)} of ${formatCount(overview.num_hosts)} hosts ${leaking === 1 ? 'leaks' : 'leak'}`,
        ),
        el('p', {class: 'lf-muted'}, 'One row per host and allocator, worst first. Select a row (click, or Enter) to open that host.'),
        table.element,
      );
    } catch (err) {
      this.element.replaceChildren(notice('error', el('p', {}, el('strong', {}, 'Could not load the overview: '), errorMessage(err))));
    }
  }
}
