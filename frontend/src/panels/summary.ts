// Summary cards: which allocator, the steps and where they came from,
// allocations and frees, the peak against the memory's capacity, bytes never
// freed, the heap at the window's start and end; the fragmentation note when
// fragmentation at the peak is high. Each figure is said once: the leak rate
// is the verdict's, the heap's trend a tooltip (it is not the leak rate).

import type {AllocatorReport, FormatHints, StepSource} from '../api';
import {type Child, el, notice} from '../dom';
import {countOf, formatBytes, formatBytesDelta, formatBytesOf, formatCount, formatFraction, formatStepIn, formatWhen, type HostClock, tensorAndChunks} from '../format';
import {type Panel, staticPanel} from '../panel';

/** What `growth_bytes_per_step` measures, wherever it is shown: never as a figure beside the leak rate. */
export const HEAP_TREND =
  'the heap in use at each step’s end, fitted over every step: every allocation, in the allocator’s chunks. Not the leak rate, which is the growing families’ tensor bytes (the verdict’s).';

/** How many events XProf's Memory Profile samples for its timeline chart, and counts its #Allocation / #Deallocation over. */
export const XPROF_TIMELINE_EVENTS = 1000;

/**
 * An ⓘ that says `text` on hover and on focus (a tooltip in place of a paragraph); drawn by styles.css, so that the
 * text around it reads the same (a card's label is "Peak", not "Peaki").
 */
export function info(text: string): HTMLElement {
  return el('span', {class: 'lf-info', tabindex: 0, role: 'img', 'aria-label': text, title: text, 'data-info': 'true'});
}

/** A figure with its label and detail; `tone` colours the value (a leak's figures are bad); `help` goes in an ⓘ. */
export function card(label: string, value: Child, detail: Child, tone: 'bad' | 'good' | null | false = null, help?: string): HTMLElement {
  return el(
    'div',
    {class: `lf-card${tone ? ` lf-card-${tone}` : ''}`},
    el('div', {class: 'lf-card-label'}, label, help ? info(help) : null),
    el('div', {class: 'lf-card-value'}, value),
    el('div', {class: 'lf-card-detail'}, detail),
  );
}

/** The step count, and where the steps came from (the description without its count). */
function stepsCard(s: StepSource): HTMLElement {
  const node = card('Steps', formatCount(s.num_steps), s.description.replace(/^[\d,]+ steps? /, ''));
  node.dataset.stepSource = s.kind;
  return node;
}

/** Where the allocator's memory id comes from, as its format says (XProf's Memory Profile lists it, others name devices). */
function memoryIdText(a: AllocatorReport, hints: FormatHints): string {
  if (!a.memory_id) return 'no memory id on its events';
  return `memory id ${a.memory_id}${hints.memory_id_note}`;
}

/**
 * "balance +26: 27 never freed, less 1 free of a buffer from before the window": why allocations less frees
 * is not the never-freed count, when it is not (the CLI's text.balance_text).
 */
export function balanceText(a: Pick<AllocatorReport, 'balance' | 'never_freed_count' | 'freed_before_window_count'>): string {
  const {balance, never_freed_count: kept, freed_before_window_count: before} = a;
  const text = `balance ${balance > 0 ? '+' : ''}${formatCount(balance)}`;
  if (balance === kept) return text;
  if (balance === kept - before) return `${text}: ${formatCount(kept)} never freed, less ${countOf(before, 'free')} of ${before === 1 ? 'a buffer' : 'buffers'} from before the window`;
  return `${text}; ${formatCount(kept)} never freed`;
}

function allocationsCard(a: AllocatorReport): HTMLElement {
  const node = card(
    'Allocations / frees',
    `${formatCount(a.num_allocations)} / ${formatCount(a.num_deallocations)}`,
    balanceText(a),
    null,
    'memory events of this allocator over the whole profile; the balance is allocations less frees',
  );
  node.dataset.card = 'allocations';
  return node;
}

/** The figures of a window of events after its peak: what was never freed, the heap at the window's ends. */
function windowCards(a: AllocatorReport, clock: HostClock): HTMLElement[] {
  const [tensor, chunks] = tensorAndChunks(a.never_freed_requested_bytes, a.never_freed_bytes);
  const kept = card(
    'Never freed',
    tensor,
    `${countOf(a.never_freed_count, 'buffer')} allocated in the window and never freed${chunks ? `; ${chunks} in the allocator’s chunks` : ''}`,
    a.verdict === 'leak' && 'bad',
    'tensor bytes of the buffers still live when the window ended; the allocator rounds each up to its chunk',
  );
  kept.dataset.card = 'never-freed';
  const growth = a.growth_bytes_per_step;
  const unit = clock.steps ? 'step' : 'window';
  const trend = growth === null || growth === undefined ? '' : ` Fitted: ${formatBytesDelta(growth)}/${unit}.`;
  // The heap's trend counts every allocation in chunks: beside the leak rate it would be a second rate. Neutral, in a tooltip.
  const heap = card(
    'Heap in use',
    `${formatBytes(a.heap_start_bytes)} → ${formatBytes(a.heap_end_bytes)}`,
    'at the window’s start and end',
    null,
    `Its trend: ${HEAP_TREND.replace('each step', `each ${unit}`)}${trend}`,
  );
  heap.dataset.card = 'heap';
  if (growth !== null && growth !== undefined) heap.dataset.trend = String(growth);
  return [kept, heap];
}

/** Why the counts differ from XProf's Memory Profile, when they do: it counts only the events it samples for its chart. */
function xprofCountsNote(a: AllocatorReport): HTMLElement | null {
  const events = a.num_allocations + a.num_deallocations;
  if (events <= XPROF_TIMELINE_EVENTS) return null;
  const node = el(
    'p',
    {class: 'lf-muted lf-note', 'data-note': 'xprof-counts'},
    `XProf’s Memory Profile shows lower counts for ${a.memory_id || a.allocator}: its #Allocation and #Deallocation count only the ${formatCount(XPROF_TIMELINE_EVENTS)} events it samples for its timeline chart. `,
    `These count all ${countOf(events, 'memory event')} of the allocator, over the whole profile.`,
  );
  return node;
}

/**
 * The summary cards; a `one_moment` (its buffers live at one moment) has no
 * allocations, frees or step ends to count: what is live then stands instead.
 */
export interface SummaryOptions {
  allocator: AllocatorReport;
  /** Where the host's steps came from. */
  steps: StepSource | undefined;
  hints: FormatHints;
  clock: HostClock;
  /** The buffers are live at one moment (a snapshot). */
  oneMoment?: boolean;
}

export function summaryPanel({allocator: a, steps, hints, clock, oneMoment = false}: SummaryOptions): Panel {
  const stack = a.peak_stack_reserved_bytes ? `heap ${formatBytes(a.peak_heap_bytes)} + stack ${formatBytes(a.peak_stack_reserved_bytes)}, ` : '';
  const when = a.peak_step === null ? `at ${formatWhen(a.peak_time_ps, clock)}` : `at ${formatWhen(a.peak_time_ps, clock)}, ${formatStepIn(a.peak_step, clock)}`;
  const [liveTensor, liveChunks] = tensorAndChunks(a.never_freed_requested_bytes, a.never_freed_bytes);
  const live = card('Live at this moment', liveTensor, `${countOf(a.never_freed_count, hints.live_entry)} when the snapshot was saved${liveChunks ? `; ${liveChunks} in chunks` : ''}`);
  const cards = el(
    'div',
    {class: 'lf-cards', 'aria-label': 'Summary'},
    card('Allocator', a.allocator, memoryIdText(a, hints)),
    steps ? stepsCard(steps) : null,
    oneMoment ? null : allocationsCard(a),
    card(
      'Peak',
      el('span', {'data-peak': 'true'}, formatBytesOf(a.peak_bytes_in_use, a.memory_capacity_bytes)),
      oneMoment ? 'the buffers live when it was saved' : `${stack}${when}; fragmentation ${formatFraction(a.peak_fragmentation)}`,
      null,
      'stack reserved and heap in use at the highest moment, as XProf’s peakBytesInUse; of the memory’s capacity when the profile says it',
    ),
    ...(oneMoment ? [live] : windowCards(a, clock)),
  );
  const notes = [oneMoment || !hints.xprof_tools ? null : xprofCountsNote(a)];
  if (a.fragmentation_note) {
    const note = notice('empty', a.fragmentation_note);
    note.dataset.note = 'fragmentation';
    notes.push(note);
  }
  const shown = notes.filter((n): n is HTMLElement => n !== null);
  return staticPanel(shown.length ? el('div', {}, cards, ...shown) : cards);
}
