// Op families: the buffers of one (op, dtype, region) that outlive a step or
// are never freed, most suspicious first. A family's kind follows its live
// bytes at step boundaries; its never-freed buffers are the evidence, and the
// byte columns count them. Selecting a row highlights that family elsewhere.
// Where names the line of code its first buffer was made at.

import type {Family, LeakKind} from '../api';
import {type CsvWhere, siteColumns, withSite} from '../csv';
import {breakable, el} from '../dom';
import {formatBytes, formatBytesDelta, formatCount} from '../format';
import {type SiteLinks, whereCell, whereHelp} from '../sites';
import {byField, DataTable, memorySource} from '../table';

export const KIND_HELP: Record<LeakKind, string> = {
  growing: 'its live bytes keep rising to the end of the window: a leak',
  persistent: 'made early and kept (weights, optimizer state)',
  bounded: 'its live bytes stopped rising or fell back: a filled cache, a plateau, a sawtooth, memory released',
  window_end: 'made in the last step; possibly freed after the window',
};

export const REGROWN_HELP = 'grows by freeing one buffer and making it again larger: only its newest buffer is never freed';

export function kindPill(kind: LeakKind): HTMLElement {
  return el('span', {class: `lf-kind lf-kind-${kind}`, title: KIND_HELP[kind] ?? ''}, kind.replace('_', ' '));
}

/** "from step 20" for a family that grows; the verdict's "from step 20 on" names the same step. */
export function onsetText(onset: number | null): string {
  return onset === null ? '' : `from step ${onset}`;
}

function kindCell(g: Family): HTMLElement {
  const pill = kindPill(g.kind);
  if (!g.regrown) return pill;
  return el('span', {class: 'lf-kinds'}, pill, ' ', el('span', {class: 'lf-regrown', title: REGROWN_HELP, 'data-regrown': 'true'}, 'regrown'));
}

/** The label, with the parts it folds together in its tooltip (the regrown wording leaves out the region). */
export function familyCell(g: Pick<Family, 'op' | 'shape' | 'dtype' | 'region' | 'label'>): HTMLElement {
  const title = `op ${g.op || '(unknown)'}, shapes ${g.shape}, ${g.dtype}, region ${g.region || '(none)'}`;
  return el('span', {title, 'data-family': 'true'}, breakable(g.label));
}

function shapesCell(g: Family): HTMLElement {
  return el('span', {title: `newest ${g.latest_shape}`}, formatCount(g.num_shapes));
}

function steps(g: Family): string {
  if (g.first_step === null || g.last_step === null) return String(g.steps);
  return `${g.steps} (${g.first_step}–${g.last_step})`;
}

/**
 * The op families; `stackHint` (how to get Python frames), when set, is shown
 * once above them. A `one_moment`'s buffers are live at one moment, not never freed.
 */
export function renderFamilies(
  families: Family[],
  where: CsvWhere,
  onSelect: (family: Family | null) => void,
  sites: SiteLinks | null = null,
  stackHint: string | null = null,
  oneMoment = false,
): HTMLElement {
  const counted = oneMoment ? 'live' : 'never-freed';
  const table = new DataTable<Family>({
    caption: 'Groups (op families)',
    pageSize: 20,
    sort: 'score',
    order: 'desc',
    filterLabel: 'Filter by op, shape, kind…',
    emptyText: 'Nothing was left behind: every buffer allocated in the window was freed.',
    rowKey: (g) => String(g.family),
    onSelect,
    where,
    csvRow: (g) => withSite(g, siteColumns(g.site)),
    columns: [
      {key: 'kind', label: 'Kind', sort: 'kind', cell: kindCell},
      {key: 'label', label: 'Family', sort: 'label', wrap: true, title: 'op, shape pattern (* where a dimension varies) and region', cell: familyCell},
      {key: 'dtype', label: 'Dtype', sort: 'dtype', cell: (g) => g.dtype},
      {key: 'where', label: 'Where', sort: 'where', wrap: true, title: whereHelp('its first buffer was'), cell: (g) => whereCell(g.where, g.site, sites)},
      {key: 'num_shapes', label: 'Shapes', sort: 'num_shapes', numeric: true, title: 'distinct shapes in the family; hover for the newest', cell: shapesCell},
      {key: 'onset_step', label: 'Onset', sort: 'onset_step', title: 'the step from which a growing family grows', cell: (g) => onsetText(g.onset_step)},
      {key: 'count', label: 'Buffers', sort: 'count', numeric: true, title: `${counted} buffers`, cell: (g) => formatCount(g.count)},
      {key: 'requested_bytes', label: oneMoment ? 'Live' : 'Never freed', sort: 'requested_bytes', numeric: true, title: `tensor bytes of the ${counted} buffers`, cell: (g) => formatBytes(g.requested_bytes)},
      {key: 'chunk_bytes', label: 'Allocated', sort: 'chunk_bytes', numeric: true, title: `the allocator's chunks of the ${counted} buffers`, cell: (g) => formatBytes(g.chunk_bytes)},
      {
        key: 'bytes_per_step',
        label: 'Per step',
        sort: 'bytes_per_step',
        numeric: true,
        title: "tensor bytes the family's live bytes grow per step, fitted from its onset on",
        cell: (g) => formatBytesDelta(g.bytes_per_step),
      },
      {
        key: 'chunk_bytes_per_step',
        label: 'Allocated per step',
        sort: 'chunk_bytes_per_step',
        numeric: true,
        title: "the same in the allocator's chunk bytes",
        cell: (g) => formatBytesDelta(g.chunk_bytes_per_step),
      },
      {key: 'steps', label: 'Steps', sort: 'steps', numeric: true, title: 'steps that left never-freed buffers behind (first–last)', cell: steps},
      {key: 'score', label: 'Score', sort: 'score', numeric: true, cell: (g) => g.score.toFixed(2)},
    ],
    source: memorySource(families, byField, (g) => [g.kind, g.label, g.op, g.shape, g.latest_shape, g.dtype, g.region, g.regrown ? 'regrown' : '', g.where, g.site.program].join(' ')),
  });
  void table.load();
  const about = oneMoment
    ? el('p', {class: 'lf-muted'}, 'Op families: the buffers of one op, dtype and region live when the snapshot was saved. Growth shows across snapshots, in the run’s history.')
    : el(
        'p',
        {class: 'lf-muted'},
        'Op families: the buffers of one op, dtype and region that outlive a step or are never freed, whatever their shapes ([32,*] where a dimension varies). ',
        "A family's kind follows its live bytes from step to step: growing families are the leak. ",
        'Buffers and sizes count its never-freed buffers (tensor bytes, with the allocator’s chunks beside them); per step is the growth of its live bytes from its onset on. ',
        'Select a row (click, or Enter) to draw its live bytes on the timeline and highlight its never-freed buffers in the lifetime chart.',
      );
  return el(
    'div',
    {},
    about,
    stackHint ? el('p', {class: 'lf-hint', role: 'note', 'data-hint': 'stack'}, stackHint) : null,
    table.element,
  );
}
