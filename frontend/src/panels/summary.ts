// Summary cards: which allocator, the steps and where they came from,
// allocations and frees, the peak against the memory's capacity, bytes never
// freed, the heap's trend at step ends; the fragmentation note when
// fragmentation at the peak is high.

import type {AllocatorReport, FormatHints, StepSource} from '../api';
import {type Child, el, notice} from '../dom';
import {formatBytes, formatBytesDelta, formatBytesOf, formatCount, formatFraction, formatStepIn, formatWhen, type HostClock} from '../format';

/** What `growth_bytes_per_step` measures, wherever it is shown. */
export const HEAP_TREND = 'heap in use at each step’s end, all allocations, fitted over every step: not a leak rate';

/** A figure with its label and detail; `tone` colours the value (a leak's figures are bad). */
export function card(label: string, value: Child, detail: Child, tone: 'bad' | 'good' | null | false = null): HTMLElement {
  return el(
    'div',
    {class: `lf-card${tone ? ` lf-card-${tone}` : ''}`},
    el('div', {class: 'lf-card-label'}, label),
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

function allocationsCard(a: AllocatorReport): HTMLElement {
  return card(
    'Allocations / frees',
    `${formatCount(a.num_allocations)} / ${formatCount(a.num_deallocations)}`,
    `balance ${a.balance > 0 ? '+' : ''}${formatCount(a.balance)}` +
      (a.freed_before_window_count ? `; ${formatCount(a.freed_before_window_count)} freed from before the window` : ''),
    a.balance > 0 && a.verdict === 'leak' && 'bad',
  );
}

/** The figures of a window of events after its peak: what was never freed, the heap's trend. */
function windowCards(a: AllocatorReport, clock: HostClock): HTMLElement[] {
  const growth = a.growth_bytes_per_step;
  return [
    card('Never freed', formatBytes(a.never_freed_bytes), `${formatCount(a.never_freed_count)} buffers allocated in the window and never freed`, a.verdict === 'leak' && 'bad'),
    // All allocations, not a leak rate: beside "every buffer was freed" it must say so, or it reads as a leak.
    card(
      clock.steps ? 'Heap at step ends' : 'Heap at window ends',
      growth === null || growth === undefined ? '—' : `${formatBytesDelta(growth)} / ${clock.steps ? 'step' : 'window'}`,
      `${HEAP_TREND}; the op families below say what grows`,
      a.verdict === 'leak' && (growth ?? 0) > 0 && 'bad',
    ),
  ];
}

/**
 * The summary cards; a `one_moment` (its buffers live at one moment) has no
 * allocations, frees or step ends to count: what is live then stands instead.
 */
export function renderSummary(a: AllocatorReport, steps: StepSource | undefined, hints: FormatHints, clock: HostClock, oneMoment = false): HTMLElement {
  const stack = a.peak_stack_reserved_bytes ? `heap ${formatBytes(a.peak_heap_bytes)} + stack ${formatBytes(a.peak_stack_reserved_bytes)}, ` : '';
  const when = a.peak_step === null ? `at ${formatWhen(a.peak_time_ps, clock)}` : `at ${formatWhen(a.peak_time_ps, clock)}, ${formatStepIn(a.peak_step, clock)}`;
  const live = card('Live at this moment', formatBytes(a.never_freed_bytes), `${formatCount(a.never_freed_count)} buffer groups when the snapshot was saved`);
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
    ),
    ...(oneMoment ? [live] : windowCards(a, clock)),
  );
  if (!a.fragmentation_note) return cards;
  const note = notice('empty', a.fragmentation_note);
  note.dataset.note = 'fragmentation';
  return el('div', {}, cards, note);
}
