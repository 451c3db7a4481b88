// What held the memory at an out-of-memory error (the allocator's
// `out_of_memory`): the failed request and what was free then, then one row
// per place the held buffers were made, by the frame that tells them apart,
// each opening onto its whole stack.

import type {OutOfMemory} from '../api';
import {el} from '../dom';
import {countOf, formatBytes, formatFraction} from '../format';
import {type Panel, staticPanel} from '../panel';

/** The figures of the error itself: what was asked, what the device had free, what the allocator cached unused. */
function figures(oom: OutOfMemory): HTMLElement {
  const items: [string, string][] = [['Held', `${formatBytes(oom.held_bytes)} of ${formatBytes(oom.capacity_bytes)} reserved`]];
  if (oom.request_bytes) items.push(['Failed request', formatBytes(oom.request_bytes)]);
  if (oom.device_free_bytes !== null && oom.device_free_bytes !== undefined) items.push(['Free on the device', formatBytes(oom.device_free_bytes)]);
  items.push(['Reserved but free', oom.reserved_free_bytes ? `${formatBytes(oom.reserved_free_bytes)} (cached or fragmented)` : '0 B (every segment full)']);
  return el('dl', {class: 'lf-oom-figures'}, ...items.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

export function outOfMemoryPanel(oom: OutOfMemory): Panel {
  const rows = oom.held_at_error.map((h) => {
    const share = oom.held_bytes ? formatFraction(h.bytes / oom.held_bytes) : '—';
    const what = h.count ? countOf(h.count, 'buffer') : 'not listed';
    const head = el('summary', {}, el('span', {class: 'lf-oom-where'}, h.where), el('span', {class: 'lf-oom-bytes'}, `${formatBytes(h.bytes)} · ${share} · ${what}`));
    // The whole stack of its largest buffer, innermost first: the helper above the line that tells it apart.
    const stack = (h.stack ?? []).length
      ? el('ol', {class: 'lf-oom-stack'}, ...(h.stack ?? []).map((frame) => el('li', {class: frame === h.where ? 'lf-oom-telling' : ''}, frame)))
      : el('p', {class: 'lf-muted'}, 'No Python frames recorded for these buffers.');
    return el('details', {class: 'lf-oom-holder', 'data-holder': h.where}, head, stack);
  });
  return staticPanel(el(
    'div',
    {class: 'lf-oom', 'data-out-of-memory-rows': String(oom.held_at_error.length)},
    figures(oom),
    el('p', {class: 'lf-muted'}, `Taken at an out-of-memory error: ${oom.cause}. Where the held memory was made, largest first, by the line that tells its buffers apart (below a helper many allocations share); open a row for its whole stack.`),
    ...rows,
  ));
}
