// Families: the buffers of one (op, dtype, region) that outlive a step or
// are never freed, most suspicious first. A family's kind follows its live
// bytes at step boundaries; its never-freed buffers are the evidence, and the
// byte columns count them. Selecting a row highlights that family elsewhere.
// Where names the line of code its first buffer was made at.

import type {Family, HolderSearch, LeakKind} from '../api';
import {type CsvWhere, siteColumns, withCause, withSite} from '../csv';
import {breakable, type Child, el} from '../dom';
import {formatBytesDelta, formatCount, tensorAndChunks} from '../format';
import {familyDetail, hasDetail, searchNote} from '../holders';
import {type Panel, staticPanel} from '../panel';
import {type SiteLinks, whereCell, whereHelp} from '../sites';
import {byField, DataTable, memorySource} from '../table';
import {info} from './summary';

export const KIND_HELP: Record<LeakKind, string> = {
  growing: 'its live bytes keep rising to the end of the window: a leak',
  persistent: 'made early and kept (weights, optimizer state)',
  bounded: 'its live bytes stopped rising or fell back: a filled cache, a plateau, a sawtooth, memory released',
  window_end: 'made in the last step; possibly freed after the window',
};

export const REGROWN_HELP = 'grows by freeing one buffer and making it again larger: only its newest buffer is never freed';

/** A kind in words: "window end", never the JSON's `window_end`. */
export function kindWord(kind: string): string {
  return kind.replace(/_/g, ' ');
}

export function kindPill(kind: LeakKind): HTMLElement {
  return el('span', {class: `lf-kind lf-kind-${kind}`, title: KIND_HELP[kind] ?? ''}, kindWord(kind));
}

/** Tensor bytes, with the allocator's chunks beside them (muted) where they read differently. */
export function bytesCell(tensor: number, chunks: number): Child {
  const [shown, allocated] = tensorAndChunks(tensor, chunks);
  if (!allocated) return shown;
  return el('span', {title: `${allocated} in the allocator’s chunks`}, shown, el('span', {class: 'lf-chunks', 'data-chunks': allocated}, ` (${allocated})`));
}

/**
 * A family's label without the line of code the server's label ends with ("Mul [4] output (train.py:42 in step)",
 * "output 0 of f(3) (dot f32[4], model.py:57)"): the Where column says it.
 */
export function labelWithoutWhere(label: string, where: string): string {
  if (!where) return label;
  if (label.endsWith(` (${where})`)) return label.slice(0, -(where.length + 3));
  if (label.endsWith(`, ${where})`)) return `${label.slice(0, -(where.length + 3))})`;
  return label;
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
export function familyCell(g: Pick<Family, 'op' | 'shape' | 'dtype' | 'region' | 'label'> & {where?: string}): HTMLElement {
  const title = `op ${g.op || '(unknown)'}, shapes ${g.shape}, ${g.dtype}, region ${g.region || '(none)'}`;
  return el('span', {title, 'data-family': 'true'}, breakable(labelWithoutWhere(g.label, g.where ?? '')));
}

function shapesCell(g: Family): HTMLElement {
  return el('span', {title: `newest ${g.latest_shape}`}, formatCount(g.num_shapes));
}

function steps(g: Family): string {
  if (g.first_step === null || g.last_step === null) return String(g.steps);
  return `${g.steps} (${g.first_step}–${g.last_step})`;
}

/** The families table, and a way to select a row from elsewhere (the verdict, the peak breakdown). */
export interface FamiliesPanel extends Panel {
  /** Marks `family` (its index) selected, or none; does not call onSelect. */
  setSelected(family: number | null): void;
}

export const FAMILIES_HELP =
  'A family is the buffers of one op, dtype and region that outlive a step or are never freed, whatever their shapes ([32,*] where a dimension varies). ' +
  'Its kind follows its live bytes from step to step: growing families are the leak. Buffers and bytes count its never-freed buffers in tensor bytes ' +
  '(the allocator’s chunks in parentheses where they differ); per step is the growth of its live bytes from its onset on.';

export interface FamiliesOptions {
  families: Family[];
  /** The CSV's columns naming the run, host and allocator. */
  where: CsvWhere;
  /** A row selected (click, or Enter), or none. */
  onSelect(family: Family | null): void;
  sites?: SiteLinks | null;
  /** How to get Python frames: shown once above the families when set. */
  stackHint?: string | null;
  /** The buffers are live at one moment (a snapshot), not never freed. */
  oneMoment?: boolean;
  /** What a shape is in this format ("input shapes" of a PyTorch op). */
  shapeLabel?: string;
  /** How the capture helper's search for holders went; null without a companion file. */
  search?: HolderSearch | null;
}

/** The families; below a family's row, its holders and its likely cause. */
export function familiesPanel({families, where, onSelect, sites = null, stackHint = null, oneMoment = false, shapeLabel = 'shape', search = null}: FamiliesOptions): FamiliesPanel {
  const counted = oneMoment ? 'live' : 'never-freed';
  const table = new DataTable<Family>({
    caption: 'Families',
    pageSize: 20,
    sort: 'score',
    order: 'desc',
    filterLabel: 'Filter by op, shape, kind…',
    emptyText: 'Nothing was left behind: every buffer allocated in the window was freed.',
    rowKey: (g) => String(g.family),
    onSelect,
    where,
    csvRow: (g) => withCause(withSite(g, siteColumns(g.site))),
    detail: (g) => (hasDetail(g, search) ? familyDetail(g, search, families) : null),
    columns: [
      {key: 'kind', label: 'Kind', sort: 'kind', title: 'growing: a leak; persistent: made early and kept; bounded: stopped growing; window end: made in the last step', cell: kindCell},
      {key: 'label', label: 'Family', sort: 'label', wrap: true, title: `op, ${shapeLabel} (* where a dimension varies) and region`, cell: familyCell},
      {key: 'dtype', label: 'Dtype', sort: 'dtype', cell: (g) => g.dtype},
      {key: 'where', label: 'Where', sort: 'where', wrap: true, title: whereHelp('its first buffer was'), cell: (g) => whereCell(g.where, g.site, sites)},
      {key: 'num_shapes', label: 'Shapes', sort: 'num_shapes', numeric: true, title: `distinct ${shapeLabel} in the family; hover for the newest`, cell: shapesCell},
      {key: 'onset_step', label: 'Onset', sort: 'onset_step', title: 'the step from which a growing family grows', cell: (g) => onsetText(g.onset_step)},
      {key: 'count', label: 'Buffers', sort: 'count', numeric: true, title: `${counted} buffers`, cell: (g) => formatCount(g.count)},
      {
        key: 'requested_bytes',
        label: oneMoment ? 'Live' : 'Never freed',
        sort: 'requested_bytes',
        numeric: true,
        title: `tensor bytes of the ${counted} buffers; the allocator’s chunks in parentheses where they differ`,
        cell: (g) => bytesCell(g.requested_bytes, g.chunk_bytes),
      },
      {
        key: 'bytes_per_step',
        label: 'Per step',
        sort: 'bytes_per_step',
        numeric: true,
        title: "tensor bytes the family's live bytes grow per step, fitted from its onset on: the verdict's rate",
        cell: (g) => el('span', {title: `${formatBytesDelta(g.chunk_bytes_per_step)} per step in the allocator’s chunks`}, formatBytesDelta(g.bytes_per_step)),
      },
      {key: 'steps', label: 'Steps', sort: 'steps', numeric: true, title: 'steps that left never-freed buffers behind (first–last)', cell: steps},
      {key: 'score', label: 'Score', sort: 'score', numeric: true, title: 'how suspicious, 0 to 1: growth, its steadiness and its share of the memory; the table is sorted by it', cell: (g) => g.score.toFixed(2)},
    ],
    source: memorySource(families, byField, (g) => [g.kind, kindWord(g.kind), g.label, g.op, g.shape, g.latest_shape, g.dtype, g.region, g.regrown ? 'regrown' : '', g.where, g.site.program, ...g.holders.map((h) => h.path)].join(' ')),
  });
  void table.load();
  const about = oneMoment
    ? el('p', {class: 'lf-muted'}, 'The buffers of one op, dtype and region live when the snapshot was saved; growth shows across snapshots, in the run’s history. ', info(FAMILIES_HELP))
    : el('p', {class: 'lf-muted'}, 'Growing families are the leak. Select a row (click, or Enter) to draw its live bytes on the timeline and highlight its buffers. ', info(FAMILIES_HELP));
  return {
    ...staticPanel(el('div', {}, about, stackHint ? el('p', {class: 'lf-hint', role: 'note', 'data-hint': 'stack'}, stackHint) : null, searchNote(search), table.element)),
    setSelected: (family) => table.setSelected(family === null ? null : String(family)),
  };
}
