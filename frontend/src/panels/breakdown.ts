// Peak breakdown: every group of buffers live at the peak, with no size cutoff.

import type {AllocatorReport, BreakdownRow} from '../api';
import {el} from '../dom';
import {formatBytes, formatCount, formatFraction, formatPs, formatStep} from '../format';
import {byField, DataTable, memorySource} from '../table';
import {kindPill} from './suspects';

export function renderBreakdown(a: AllocatorReport): HTMLElement {
  const rows = a.peak_breakdown;
  const peak = a.peak_bytes_in_use || rows.reduce((sum, r) => sum + r.bytes, 0);
  const key = (g: {op: string; shape: string; dtype: string; region: string}) => [g.op, g.shape, g.dtype, g.region].join('\u0000');
  const suspects = new Map(a.leaks.map((g) => [key(g), g]));
  const suspectOf = (r: BreakdownRow) => {
    const g = suspects.get(key(r));
    return g ? el('span', {}, kindPill(g.kind), ` #${g.group}`) : '';
  };
  const table = new DataTable<BreakdownRow>({
    caption: 'Peak breakdown',
    pageSize: 25,
    sort: 'bytes',
    order: 'desc',
    filterLabel: 'Filter by op, shape…',
    emptyText: 'Nothing was live at the peak.',
    rowKey: key,
    columns: [
      {key: 'op', label: 'Op', sort: 'op', wrap: true, cell: (r) => r.op || '(unknown)'},
      {key: 'shape', label: 'Shape', sort: 'shape', wrap: true, cell: (r) => r.shape},
      {key: 'dtype', label: 'Dtype', sort: 'dtype', cell: (r) => r.dtype},
      {key: 'region', label: 'Region', sort: 'region', cell: (r) => r.region},
      {key: 'count', label: 'Buffers', sort: 'count', numeric: true, cell: (r) => formatCount(r.count)},
      {key: 'bytes', label: 'Bytes', sort: 'bytes', numeric: true, cell: (r) => formatBytes(r.bytes)},
      {key: 'share', label: 'Of peak', numeric: true, cell: (r) => formatFraction(peak ? r.bytes / peak : 0)},
      {key: 'suspect', label: 'Suspect', title: 'the leak suspect with the same op, shape, dtype and region', cell: (r) => suspectOf(r)},
    ],
    source: memorySource(
      rows,
      byField,
      (r) => [r.op, r.shape, r.dtype, r.region].join(' '),
    ),
  });
  void table.load();
  return el(
    'div',
    {},
    el(
      'p',
      {class: 'lf-muted'},
      `${formatCount(rows.length)} groups live at the peak of ${formatBytes(a.peak_bytes_in_use)} (${formatPs(a.peak_time_ps)}, ${formatStep(a.peak_step)}), largest first. No size cutoff.`,
    ),
    table.element,
  );
}
