// Summary cards: allocations and frees, peak, bytes never freed, growth per step.

import type {AllocatorReport} from '../api';
import {type Child, el} from '../dom';
import {formatBytes, formatBytesDelta, formatCount, formatFraction, formatPs, formatStep} from '../format';

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

export function renderSummary(a: AllocatorReport): HTMLElement {
  const growth = a.growth_bytes_per_step;
  return el(
    'div',
    {class: 'lf-cards', 'aria-label': 'Summary'},
    card(
      'Allocations / frees',
      `${formatCount(a.num_allocations)} / ${formatCount(a.num_deallocations)}`,
      `balance ${a.balance > 0 ? '+' : ''}${formatCount(a.balance)}` +
        (a.freed_before_window_count ? `; ${formatCount(a.freed_before_window_count)} freed from before the window` : ''),
      a.balance > 0 && a.verdict === 'leak' && 'bad',
    ),
    card(
      'Peak heap in use',
      formatBytes(a.peak_bytes_in_use),
      `at ${formatPs(a.peak_time_ps)}, ${formatStep(a.peak_step)}; fragmentation ${formatFraction(a.peak_fragmentation)}`,
    ),
    card(
      'Never freed',
      formatBytes(a.never_freed_bytes),
      `${formatCount(a.live_at_end_count)} buffers live at the end (${formatBytes(a.live_at_end_bytes)})`,
      a.verdict === 'leak' && 'bad',
    ),
    card(
      'Heap growth per step',
      growth === null || growth === undefined ? '—' : `${formatBytesDelta(growth)} / step`,
      'trend of the whole heap across steps; the suspects below say what grows',
      a.verdict === 'leak' && (growth ?? 0) > 0 && 'bad',
    ),
  );
}
