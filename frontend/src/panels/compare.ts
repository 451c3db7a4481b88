// The panels of a comparison (GET compare): run B, the change, against run A,
// the base. The regression banner, both verdicts side by side, the changes of
// the summary figures, the op families with their status, and the changes of
// the compiled programs.

import type {AllocatorDiff, ComparisonAnswer, Delta, FamilyDiff, FamilyStatus, HostDiff, LeakKind, ListedWholeProgramBuffer, ModuleDiff, Verdict} from '../api';
import type {CsvWhere} from '../csv';
import {type Child, el} from '../dom';
import {countOf, formatBytes, formatBytesDelta, formatCount, formatCountDelta} from '../format';
import {type Panel, staticPanel} from '../panel';
import {byField, DataTable, memorySource} from '../table';
import {REASON_LABEL} from './static';
import {card, HEAP_TREND, info} from './summary';
import {familyCell, kindPill, onsetText} from './families';
import {verdictBanner} from './verdict';

export const STATUS_HELP: Record<FamilyStatus, string> = {
  new: 'only in B',
  grown: 'larger in B (or growing in B and not in A)',
  shrunk: 'smaller in B',
  fixed: 'only in A: gone in B',
  unchanged: 'within 5% (BFC rounds sizes)',
};

/** The order of the compare route: what B brings first. */
const STATUS_ORDER: FamilyStatus[] = ['new', 'grown', 'shrunk', 'fixed', 'unchanged'];

export function statusPill(status: FamilyStatus): HTMLElement {
  return el('span', {class: `lf-status lf-status-${status}`, title: STATUS_HELP[status] ?? ''}, status);
}

/** "A" or "B" in the side's colour, as the chart draws it. */
export function sideTag(side: 'a' | 'b'): HTMLElement {
  return el('span', {class: `lf-side lf-side-${side}`}, side.toUpperCase());
}

/** The run (and host) of one side, as shown in headings. */
export function sideName(run: string, host: string): string {
  return host ? `${run} (${host})` : run;
}

export function regressionBanner(c: ComparisonAnswer, host: HostDiff | undefined): HTMLElement {
  if (c.regression) {
    return el(
      'div',
      {class: 'lf-regression', role: 'alert', 'data-regression': 'true'},
      el('strong', {}, 'Regression: B brings a leak that A does not have'),
      el('ul', {}, ...c.regressions.map((r) => el('li', {}, r))),
    );
  }
  const fixed = host?.allocators.flatMap((a) => a.families).filter((g) => g.status === 'fixed' && g.kind_a === 'growing').length ?? 0;
  const text =
    c.verdict_a === 'leak' && c.verdict_b !== 'leak'
      ? `No regression, and A's leak is gone in B${fixed ? ` (${countOf(fixed, 'growing family', 'growing families')} fixed)` : ''}.`
      : 'No regression: B has no growing family that A does not, and does not leak where A does not.';
  return el('div', {class: 'lf-compare-ok', role: 'status', 'data-regression': 'false'}, text);
}

function sideVerdict(side: 'a' | 'b', label: string, name: string, verdict: Verdict, reason: string): HTMLElement {
  const banner = verdictBanner(verdict, reason, [], el('span', {}, sideTag(side), ` ${label}: `, name));
  banner.dataset.side = side;
  return banner;
}

/** Both verdicts, each with its reason: the allocator's when both runs have it, else the host's. */
export function verdictsBanner(c: ComparisonAnswer, host: HostDiff | undefined, alloc: AllocatorDiff | undefined): HTMLElement {
  const verdict = (side: 'a' | 'b'): [Verdict, string] => {
    const v = side === 'a' ? alloc?.verdict_a : alloc?.verdict_b;
    const r = side === 'a' ? alloc?.reason_a : alloc?.reason_b;
    if (v && r) return [v, r];
    if (host) return side === 'a' ? [host.verdict_a, host.reason_a] : [host.verdict_b, host.reason_b];
    return side === 'a' ? [c.verdict_a, ''] : [c.verdict_b, ''];
  };
  return el(
    'div',
    {class: 'lf-compare-pair', 'data-panel': 'compare-verdicts'},
    sideVerdict('a', 'base', sideName(c.run_a, host?.host_a ?? ''), ...verdict('a')),
    sideVerdict('b', 'change', sideName(c.run_b, host?.host_b ?? ''), ...verdict('b')),
  );
}

/** Down is good for every figure here but the number of allocations, which is neutral; up is bad only when `rise` is. */
function deltaCard(label: string, d: Delta, value: (n: number) => string, delta: (n: number) => string, judged = true, help?: string, rise: 'bad' | null = 'bad'): HTMLElement {
  const tone = !judged || d.delta === 0 ? null : d.delta > 0 ? rise : 'good';
  const node = card(label, delta(d.delta), el('span', {}, sideTag('a'), ` ${value(d.a)} → `, sideTag('b'), ` ${value(d.b)}`), tone, help);
  node.dataset.delta = label;
  return node;
}

export function deltasPanel(a: AllocatorDiff): Panel {
  const perStep = (n: number) => `${formatBytesDelta(n)} / step`;
  // Beside B's "No leak" a rise is not red. The heap's trend is no leak rate: beside the verdicts' rates it would be a
  // second one, so it is the peak's tooltip, not a figure of its own.
  const rise = a.verdict_b === 'leak' ? 'bad' : null;
  const g = a.growth_bytes_per_step;
  const trend = `The heap’s trend at step ends: A ${perStep(g.a)}, B ${perStep(g.b)}; ${HEAP_TREND}`;
  const peak = deltaCard('Peak heap in use', a.peak_bytes_in_use, formatBytes, formatBytesDelta, true, trend, rise);
  peak.dataset.trend = String(g.delta);
  return staticPanel(el(
    'div',
    {class: 'lf-cards', 'aria-label': 'Changes from A to B'},
    peak,
    deltaCard('Never freed', a.never_freed_requested_bytes, formatBytes, formatBytesDelta, true, 'tensor bytes of the buffers never freed', rise),
    deltaCard('Allocations', a.num_allocations, formatCount, formatCountDelta, false),
  ));
}

function kinds(a: LeakKind | null, b: LeakKind | null): Child {
  return el('span', {class: 'lf-kinds'}, a ? kindPill(a) : '—', ' → ', b ? kindPill(b) : '—');
}

/** B's onset, and A's beside it when the family grew in A from another step. */
function onsetCell(g: FamilyDiff): Child {
  const b = onsetText(g.onset_step_b);
  if (g.onset_step_a === null || g.onset_step_a === g.onset_step_b) return b;
  return el('span', {title: `in A ${onsetText(g.onset_step_a)}`}, b || '—');
}

/** `where`: the CLI's compare_families.csv columns (run_a, run_b, host_a, host_b, allocator_a, allocator_b). */
export function familyChangesPanel(families: FamilyDiff[], where: CsvWhere): Panel {
  // By status, then in server order: the default sort. Kept beside the rows, so that their CSV is the server's keys.
  const rank = new Map(families.map((g, i) => [g, STATUS_ORDER.indexOf(g.status) * 1e6 + i]));
  const sortValue = (g: FamilyDiff, sort: string) => (sort === 'rank' ? (rank.get(g) ?? null) : byField(g, sort));
  const table = new DataTable<FamilyDiff>({
    caption: 'Families of A and B',
    pageSize: 20,
    sort: 'rank',
    order: 'asc',
    filterLabel: 'Filter by op, shape, status…',
    emptyText: 'Neither run has a family that outlives a step.',
    rowKey: (g) => [g.op, g.shape, g.dtype, g.region].join('\u0000'),
    rowClass: (g) => `lf-status-row lf-status-row-${g.status}`,
    where,
    columns: [
      {key: 'status', label: 'Status', sort: 'rank', cell: (g) => statusPill(g.status)},
      {key: 'label', label: 'Family', sort: 'label', wrap: true, title: "as B's report words it (A's when only A has it)", cell: familyCell},
      {key: 'dtype', label: 'Dtype', sort: 'dtype', cell: (g) => g.dtype},
      {key: 'kind', label: 'Kind A → B', cell: (g) => kinds(g.kind_a, g.kind_b)},
      // "—" where the family is absent from that run.
      {key: 'requested_bytes_a', label: 'Never freed A', sort: 'requested_bytes_a', numeric: true, title: 'tensor bytes of its never-freed buffers in A', cell: (g) => (g.kind_a ? formatBytes(g.requested_bytes_a) : '—')},
      {key: 'requested_bytes_b', label: 'Never freed B', sort: 'requested_bytes_b', numeric: true, title: 'tensor bytes of its never-freed buffers in B', cell: (g) => (g.kind_b ? formatBytes(g.requested_bytes_b) : '—')},
      {key: 'bytes_per_step_a', label: 'Per step A', sort: 'bytes_per_step_a', numeric: true, cell: (g) => (g.kind_a ? formatBytesDelta(g.bytes_per_step_a) : '—')},
      {key: 'bytes_per_step_b', label: 'Per step B', sort: 'bytes_per_step_b', numeric: true, cell: (g) => (g.kind_b ? formatBytesDelta(g.bytes_per_step_b) : '—')},
      {key: 'onset_step_b', label: 'Onset B', sort: 'onset_step_b', title: 'the step from which the family grows in B', cell: onsetCell},
      {
        key: 'new_leak',
        label: 'New leak',
        title: 'growing in B and not in A',
        cell: (g) => (g.new_leak ? el('span', {class: 'lf-new-leak', 'data-new-leak': 'true'}, 'new leak') : ''),
      },
    ],
    source: memorySource(families, sortValue, (g) => [g.status, g.label, g.op, g.shape, g.dtype, g.region, g.kind_a ?? '', g.kind_b ?? ''].join(' ')),
  });
  void table.load();
  return staticPanel(el(
    'div',
    {'data-table': 'compare-families'},
    el(
      'p',
      {class: 'lf-muted'},
      'Families of each run, matched by op, shape pattern, dtype and region. ',
      info(
        'Numeric suffixes such as Mul_1 are removed from ops before matching. Growing families compare the growth of their live bytes per step, others the tensor bytes of their never-freed buffers; changes within 5% count as unchanged.',
      ),
    ),
    table.element,
  ));
}

function bufferList(buffers: ListedWholeProgramBuffer[]): Child {
  if (!buffers.length) return '—';
  return el(
    'ul',
    {class: 'lf-plain-list'},
    ...buffers.map((w) => el('li', {}, `${REASON_LABEL[w.reason] ?? w.reason}: ${w.instruction || w.op_name} ${w.shape} (${formatBytes(w.bytes)})`)),
  );
}

function moduleName(m: ModuleDiff): Child {
  const only = m.name_a === null ? ' (only in B)' : m.name_b === null ? ' (only in A)' : '';
  return el('span', {title: `A: ${m.name_a ?? '—'}; B: ${m.name_b ?? '—'}`}, m.name + only);
}

function deltaCell(d: Delta): Child {
  return el('span', {class: d.delta > 0 ? 'lf-up' : d.delta < 0 ? 'lf-down' : ''}, formatBytesDelta(d.delta));
}

/** `where`: the runs and hosts compared (run_a, run_b, host_a, host_b). */
export function moduleChangesPanel(modules: ModuleDiff[], where: CsvWhere): Panel {
  type Row = ModuleDiff & {peak_delta: number; live_out_delta: number};
  const rows: Row[] = modules.map((m) => ({...m, peak_delta: m.peak_heap_bytes.delta, live_out_delta: m.live_out_bytes.delta}));
  const table = new DataTable<Row>({
    caption: 'Compiled programs of A and B',
    pageSize: 10,
    sort: 'peak_delta',
    order: 'desc',
    filterLabel: 'Filter by program or buffer…',
    rowKey: (m) => m.name,
    where,
    columns: [
      {key: 'name', label: 'Program', sort: 'name', wrap: true, cell: moduleName},
      // "—" where the program is absent from that run.
      {key: 'peak_a', label: 'Peak heap A', numeric: true, cell: (m) => (m.name_a === null ? '—' : formatBytes(m.peak_heap_bytes.a))},
      {key: 'peak_b', label: 'Peak heap B', numeric: true, cell: (m) => (m.name_b === null ? '—' : formatBytes(m.peak_heap_bytes.b))},
      {key: 'peak_delta', label: 'Δ peak', sort: 'peak_delta', numeric: true, cell: (m) => deltaCell(m.peak_heap_bytes)},
      {key: 'live_out_a', label: 'Live-out A', numeric: true, cell: (m) => (m.name_a === null ? '—' : formatBytes(m.live_out_bytes.a))},
      {key: 'live_out_b', label: 'Live-out B', numeric: true, cell: (m) => (m.name_b === null ? '—' : formatBytes(m.live_out_bytes.b))},
      {key: 'live_out_delta', label: 'Δ live-out', sort: 'live_out_delta', numeric: true, cell: (m) => deltaCell(m.live_out_bytes)},
      {key: 'added', label: 'Whole-program buffers added in B', wrap: true, cell: (m) => bufferList(m.whole_program_buffers_added)},
      {key: 'removed', label: 'removed in B', wrap: true, cell: (m) => bufferList(m.whole_program_buffers_removed)},
    ],
    source: memorySource(rows, byField, (m) =>
      [m.name, ...[...m.whole_program_buffers_added, ...m.whole_program_buffers_removed].map((w) => `${w.instruction} ${w.op_name} ${w.shape}`)].join(' '),
    ),
  });
  void table.load();
  return staticPanel(el(
    'div',
    {'data-table': 'compare-modules'},
    el('p', {class: 'lf-muted'}, 'Programs are matched by name without their program id (jit_step(10) and jit_step(31) match); whole-program buffers by instruction, shape and reason.'),
    table.element,
  ));
}
