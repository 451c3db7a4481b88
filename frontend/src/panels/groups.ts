// Never-freed groups: the buffers never freed, grouped by op, shape, dtype and
// region, most suspicious first; the growing ones are the leak suspects.
// Selecting a row highlights that group's buffers elsewhere.

import type {Group, LeakKind} from '../api';
import type {CsvWhere} from '../csv';
import {el} from '../dom';
import {formatBytes, formatBytesDelta, formatCount} from '../format';
import {byField, DataTable, memorySource} from '../table';

export const KIND_HELP: Record<LeakKind, string> = {
  growing: 'accumulates step after step: a leak suspect',
  persistent: 'made once, early, and kept',
  bounded: 'a cache that stops growing',
  window_end: 'made in the last step; possibly freed after the window',
};

export function kindPill(kind: LeakKind): HTMLElement {
  return el('span', {class: `lf-kind lf-kind-${kind}`, title: KIND_HELP[kind] ?? ''}, kind.replace('_', ' '));
}

function steps(g: Group): string {
  if (g.first_step === null || g.last_step === null) return String(g.steps);
  return `${g.steps} (${g.first_step}–${g.last_step})`;
}

export function renderGroups(groups: Group[], where: CsvWhere, onSelect: (group: Group | null) => void): HTMLElement {
  const table = new DataTable<Group>({
    caption: 'Never-freed groups',
    pageSize: 20,
    sort: 'score',
    order: 'desc',
    filterLabel: 'Filter by op, shape, kind…',
    emptyText: 'Nothing was left behind: every buffer allocated in the window was freed.',
    rowKey: (g) => String(g.group),
    onSelect,
    where,
    columns: [
      {key: 'kind', label: 'Kind', sort: 'kind', cell: (g) => kindPill(g.kind)},
      {key: 'op', label: 'Op', sort: 'op', wrap: true, cell: (g) => g.op || '(unknown)'},
      {key: 'shape', label: 'Shape', sort: 'shape', wrap: true, cell: (g) => g.shape},
      {key: 'dtype', label: 'Dtype', sort: 'dtype', cell: (g) => g.dtype},
      {key: 'region', label: 'Region', sort: 'region', cell: (g) => g.region},
      {key: 'count', label: 'Buffers', sort: 'count', numeric: true, cell: (g) => formatCount(g.count)},
      {key: 'requested_bytes', label: 'Never freed', sort: 'requested_bytes', numeric: true, title: 'tensor bytes', cell: (g) => formatBytes(g.requested_bytes)},
      {key: 'bytes', label: 'Allocated', sort: 'bytes', numeric: true, title: "the allocator's chunks", cell: (g) => formatBytes(g.bytes)},
      {key: 'bytes_per_step', label: 'Per step', sort: 'bytes_per_step', numeric: true, title: 'tensor bytes kept per step, fitted across steps', cell: (g) => formatBytesDelta(g.bytes_per_step)},
      {
        key: 'allocated_bytes_per_step',
        label: 'Allocated per step',
        sort: 'allocated_bytes_per_step',
        numeric: true,
        title: "the allocator's chunk bytes kept per step",
        cell: (g) => formatBytesDelta(g.allocated_bytes_per_step),
      },
      {key: 'steps', label: 'Steps', sort: 'steps', numeric: true, title: 'steps that left buffers behind (first–last)', cell: steps},
      {key: 'score', label: 'Score', sort: 'score', numeric: true, cell: (g) => g.score.toFixed(2)},
    ],
    source: memorySource(groups, byField, (g) => [g.kind, g.op, g.shape, g.dtype, g.region].join(' ')),
  });
  void table.load();
  return el(
    'div',
    {},
    el(
      'p',
      {class: 'lf-muted'},
      'Buffers that were never freed, grouped by op, shape, dtype and region; growing groups are the leak suspects. Sizes are tensor bytes, with the allocator’s chunks beside them. Select a row (click, or Enter) to highlight its buffers on the timeline and in the lifetime chart.',
    ),
    table.element,
  );
}
