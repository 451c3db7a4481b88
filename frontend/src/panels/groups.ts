// Leak suspects: groups of never-freed buffers, sortable and filterable.
// Selecting a row highlights that group's buffers elsewhere.

import type {LeakGroup, LeakKind} from '../api';
import {el} from '../dom';
import {formatBytes, formatBytesDelta, formatCount} from '../format';
import {byField, DataTable, memorySource} from '../table';

export const KIND_HELP: Record<LeakKind, string> = {
  growing: 'accumulates step after step',
  persistent: 'made once, early, and kept',
  bounded: 'a cache that stops growing',
  window_end: 'made in the last step; possibly freed after the window',
};

export function kindPill(kind: LeakKind): HTMLElement {
  return el('span', {class: `lf-kind lf-kind-${kind}`, title: KIND_HELP[kind] ?? ''}, kind.replace('_', ' '));
}

function steps(g: LeakGroup): string {
  if (g.first_step === null || g.last_step === null) return String(g.steps);
  return `${g.steps} (${g.first_step}–${g.last_step})`;
}

export function renderSuspects(leaks: LeakGroup[], onSelect: (group: LeakGroup | null) => void): {element: HTMLElement; table: DataTable<LeakGroup>} {
  const table = new DataTable<LeakGroup>({
    caption: 'Leak suspects',
    pageSize: 20,
    sort: 'score',
    order: 'desc',
    filterLabel: 'Filter by op, shape, kind…',
    emptyText: 'No suspects: every buffer allocated in the window was freed, or what is kept does not grow.',
    rowKey: (g) => String(g.group),
    onSelect,
    columns: [
      {key: 'kind', label: 'Kind', sort: 'kind', cell: (g) => kindPill(g.kind)},
      {key: 'op', label: 'Op', sort: 'op', wrap: true, cell: (g) => g.op || '(unknown)'},
      {key: 'shape', label: 'Shape', sort: 'shape', wrap: true, cell: (g) => g.shape},
      {key: 'dtype', label: 'Dtype', sort: 'dtype', cell: (g) => g.dtype},
      {key: 'region', label: 'Region', sort: 'region', cell: (g) => g.region},
      {key: 'count', label: 'Buffers', sort: 'count', numeric: true, cell: (g) => formatCount(g.count)},
      {key: 'bytes', label: 'Never freed', sort: 'bytes', numeric: true, cell: (g) => formatBytes(g.bytes)},
      {key: 'bytes_per_step', label: 'Per step', sort: 'bytes_per_step', numeric: true, cell: (g) => formatBytesDelta(g.bytes_per_step)},
      {key: 'steps', label: 'Steps', sort: 'steps', numeric: true, title: 'steps that left buffers behind (first–last)', cell: steps},
      {key: 'score', label: 'Score', sort: 'score', numeric: true, cell: (g) => g.score.toFixed(2)},
    ],
    source: memorySource(
      leaks,
      byField,
      (g) => [g.kind, g.op, g.shape, g.dtype, g.region].join(' '),
    ),
  });
  void table.load();
  return {
    element: el(
      'div',
      {},
      el('p', {class: 'lf-muted'}, 'Buffers that were never freed, grouped by op, shape, dtype and region. Select a row (click, or Enter) to highlight its buffers on the timeline and in the lifetime chart.'),
      table.element,
    ),
    table,
  };
}
