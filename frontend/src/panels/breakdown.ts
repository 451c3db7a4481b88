// Peak breakdown: what made up the peak, with no size cutoff. Every group of
// buffers live at it, the stack reservation and the heap allocated before the
// window; the rows add up to the peak. Where names the line of code each
// group's first buffer was made at.

import type {AllocatorReport, BreakdownCategory, BreakdownRow, Family} from '../api';
import {type CsvWhere, siteColumns, withSite} from '../csv';
import {el} from '../dom';
import {countOf, formatBytes, formatCount, formatFraction, formatStepIn, formatWhen, type HostClock} from '../format';
import {type Panel, staticPanel} from '../panel';
import {type SiteLinks, whereCell, whereHelp} from '../sites';
import {byField, DataTable, memorySource} from '../table';
import {kindPill, labelWithoutWhere} from './families';

export const CATEGORY_LABEL: Record<BreakdownCategory, string> = {
  buffers: 'buffers',
  stack: 'stack reserved',
  before_window: 'allocated before the window',
};

const key = (r: {op: string; shape: string; dtype: string; region: string}) => [r.op, r.shape, r.dtype, r.region].join('\u0000');
// A family is one per (op, dtype, region), whatever the shapes: its pattern ([32,*]) matches no row's shape.
const familyKey = (r: {op: string; dtype: string; region: string}) => [r.op, r.dtype, r.region].join('\u0000');

export interface BreakdownOptions {
  allocator: AllocatorReport;
  /** The CSV's columns naming the run, host and allocator. */
  where: CsvWhere;
  sites: SiteLinks | null;
  clock: HostClock;
  /** Selects the family of a row (click, or Enter). */
  onFamily?: ((family: Family | null) => void) | null;
  /** What a shape is in this format ("input shapes" of a PyTorch op). */
  shapeLabel?: string;
}

/**
 * The peak breakdown. A row of a family's op, dtype and region selects that family (click, or Enter).
 */
export function breakdownPanel({allocator: a, where, sites, clock, onFamily = null, shapeLabel = 'shape'}: BreakdownOptions): Panel {
  const rows = a.peak_breakdown;
  const peak = a.peak_bytes_in_use;
  const families = new Map(a.families.map((g) => [familyKey(g), g]));
  const familyOfRow = (r: BreakdownRow) => (r.category === 'buffers' ? families.get(familyKey(r)) : undefined);
  const familyOf = (r: BreakdownRow) => {
    const g = familyOfRow(r);
    return g ? el('span', {class: 'lf-kinds', 'data-family-of': String(g.family)}, kindPill(g.kind), ' ', labelWithoutWhere(g.label, g.where)) : '';
  };
  const whole = (r: BreakdownRow) => r.category !== 'buffers';
  const table = new DataTable<BreakdownRow>({
    caption: 'Peak breakdown',
    pageSize: 25,
    sort: 'bytes',
    order: 'desc',
    filterLabel: 'Filter by op, shape…',
    emptyText: 'Nothing was live at the peak.',
    rowKey: (r) => `${r.category}\u0000${key(r)}`,
    rowClass: (r) => (whole(r) ? `lf-breakdown-${r.category}` : ''),
    // A row selects its family; one of no family clears the selection.
    onSelect: onFamily ? (r) => onFamily(r ? (familyOfRow(r) ?? null) : null) : undefined,
    where,
    csvRow: (r) => withSite(r, siteColumns(r.site)),
    columns: [
      {key: 'op', label: 'Op', sort: 'op', wrap: true, cell: (r) => (whole(r) ? el('em', {}, CATEGORY_LABEL[r.category]) : r.op || '(unknown)')},
      {key: 'shape', label: shapeLabel === 'shape' ? 'Shape' : 'Input shapes', sort: 'shape', wrap: true, title: shapeLabel === 'shape' ? undefined : 'the shapes of the inputs of the op that made the buffers: the trace names no buffer’s own', cell: (r) => r.shape},
      {key: 'dtype', label: 'Dtype', sort: 'dtype', cell: (r) => r.dtype},
      {key: 'region', label: 'Region', sort: 'region', cell: (r) => r.region},
      {key: 'where', label: 'Where', sort: 'where', wrap: true, title: whereHelp('its first buffer was'), cell: (r) => whereCell(r.where, r.site, sites)},
      {key: 'count', label: 'Buffers', sort: 'count', numeric: true, cell: (r) => (whole(r) ? '' : formatCount(r.count))},
      {key: 'bytes', label: 'Bytes', sort: 'bytes', numeric: true, cell: (r) => formatBytes(r.bytes)},
      {key: 'share', label: 'Of peak', numeric: true, cell: (r) => formatFraction(peak ? r.bytes / peak : 0)},
      {key: 'family', label: 'Family', title: 'the family of the same op, dtype and region; select the row to highlight it', cell: familyOf},
    ],
    source: memorySource(rows, byField, (r) => [r.op, r.shape, r.dtype, r.region, CATEGORY_LABEL[r.category], r.where, r.site.program].join(' ')),
  });
  void table.load();
  const total = (category: BreakdownCategory) => rows.filter((r) => r.category === category).reduce((sum, r) => sum + r.bytes, 0);
  const parts = (['buffers', 'stack', 'before_window'] as const).filter((c) => total(c) > 0).map((c) => `${CATEGORY_LABEL[c]} ${formatBytes(total(c))}`);
  return staticPanel(el(
    'div',
    {},
    el(
      'p',
      {class: 'lf-muted', 'data-breakdown-total': String(rows.reduce((sum, r) => sum + r.bytes, 0))},
      `${countOf(rows.length, 'row')} add up to the peak of ${formatBytes(peak)} (${formatWhen(a.peak_time_ps, clock)}, ${formatStepIn(a.peak_step, clock)})${parts.length ? `: ${parts.join(', ')}` : ''}. Largest first, no size cutoff.`,
    ),
    table.element,
  ));
}
