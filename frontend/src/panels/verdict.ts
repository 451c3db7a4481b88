// The verdict banner: leak, no leak or inconclusive with the report's reason,
// where the steps came from, the forecast to out-of-memory, and every
// allocator of the host that leaks.

import {allocatorKey, allocatorLabel, defaultAllocator} from '../allocators';
import type {AllocatorReport, Family, HostReport, Verdict} from '../api';
import {breakable, breakableChild, type Child, el} from '../dom';
import {countOf, formatBytesDelta, formatBytesOf} from '../format';
import {verdictCause, breakableWithCode} from '../holders';
import {type Panel, staticPanel} from '../panel';

export const VERDICT_LABEL: Record<Verdict, string> = {
  leak: 'Leak',
  no_leak: 'No leak',
  inconclusive: 'Inconclusive',
};

/** The reason without the verdict word it may start with, which the banner already shows. */
export function reasonText(verdict: Verdict, reason: string): string {
  const label = VERDICT_LABEL[verdict];
  if (!label) return reason;
  const lower = reason.toLowerCase();
  if (lower.startsWith(`${label.toLowerCase()}:`)) return reason.slice(label.length + 1).trimStart();
  // "No leak in PyTorch's CPU allocator: …" reads on from the banner's label: "in PyTorch's CPU allocator: …".
  if (lower.startsWith(`${label.toLowerCase()} in `)) return reason.slice(label.length).trimStart();
  return reason;
}

/** A verdict and its reason; `title` (e.g. which run) goes above them, `details` below. */
export function verdictBanner(verdict: Verdict, reason: string, warnings: string[] = [], title?: Child, ...details: Child[]): HTMLElement {
  return el(
    'div',
    {class: `lf-verdict lf-verdict-${verdict}`, role: 'status', 'data-verdict': verdict},
    title ? el('div', {class: 'lf-verdict-title'}, breakableChild(title)) : null,
    el('span', {class: 'lf-verdict-label'}, VERDICT_LABEL[verdict] ?? verdict),
    el('span', {class: 'lf-verdict-reason'}, reasonText(verdict, reason)),
    ...details,
    warnings.length ? el('ul', {'aria-label': 'Warnings'}, ...warnings.map((w) => el('li', {}, w))) : null,
  );
}

/**
 * Every allocator of a host of several: its verdict, peak and leak rate, each a button that shows it; and why the
 * one shown was opened on, when the tab chose it. Null for a host of one allocator.
 */
export function allocatorsOverview(host: HostReport, shown: AllocatorReport | null, onPick: (key: string) => void): HTMLElement | null {
  const all = host.allocators;
  if (all.length < 2) return null;
  const chosen = defaultAllocator(host);
  const row = (a: AllocatorReport) => {
    const key = allocatorKey(a);
    const current = shown !== null && allocatorKey(shown) === key;
    const button = el('button', {type: 'button', class: 'lf-link-button', 'data-allocator': key, 'aria-current': current ? 'true' : null}, allocatorLabel(a));
    button.addEventListener('click', () => onPick(key));
    return el(
      'tr',
      {'data-verdict': a.verdict, class: current ? 'lf-current' : null},
      el('td', {}, button),
      el('td', {}, el('span', {class: `lf-verdict-word lf-verdict-word-${a.verdict}`}, VERDICT_LABEL[a.verdict] ?? a.verdict)),
      // The growing families' rate, as the verdict gives it: the heap's trend counts every allocation.
      el('td', {class: 'lf-num'}, a.verdict === 'leak' ? `${formatBytesDelta(a.leak_bytes_per_step)}/step` : ''),
      el('td', {class: 'lf-num'}, formatBytesOf(a.peak_bytes_in_use, a.memory_capacity_bytes)),
    );
  };
  const leaking = all.filter((a) => a.verdict === 'leak').length;
  const why = shown && chosen && allocatorKey(shown) === allocatorKey(chosen) ? `; ${shown.allocator} is shown: ${host.default_allocator?.reason}` : '';
  return el(
    'details',
    {class: 'lf-verdict-allocators', 'data-list': 'allocators', open: leaking > 0 || all.length <= 8 ? true : null},
    el('summary', {}, `${countOf(all.length, 'allocator')} on this host, ${leaking ? `${formatCountWord(leaking)} leaking` : 'none leaking'}${why}`),
    el(
      'table',
      {class: 'lf-devices'},
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          ...(
            [
              ['Allocator', 'the allocator (its memory id): select one to show it'],
              ['Verdict', 'this allocator’s own verdict'],
              ['Leak', 'the growing families’ rate, tensor bytes per step, where the verdict is a leak'],
              ['Peak', 'peak bytes in use, of the memory capacity where the profile records it'],
            ] as const
          ).map(([h, title], i) => el('th', {scope: 'col', class: i > 1 ? 'lf-num' : null, title}, h)),
        ),
      ),
      el('tbody', {}, ...all.map(row)),
    ),
  );
}

function formatCountWord(n: number): string {
  return n === 1 ? 'one' : String(n);
}

/**
 * The reason's text with the label of each growing family it names as a button that selects that family (the
 * families table, the timeline and the lifetime chart follow).
 */
export function reasonNodes(text: string, families: Family[], onFamily: ((family: Family) => void) | null): (Node | string)[] {
  if (!onFamily) return breakableWithCode(text);
  const named = families.filter((g) => g.kind === 'growing' && g.label && text.includes(g.label));
  const g = named[0];
  if (!g) return breakableWithCode(text);
  const at = text.indexOf(g.label);
  const button = el('button', {type: 'button', class: 'lf-link-button lf-family-link', 'data-select-family': String(g.family), title: 'Select this family: its live bytes on the timeline, its buffers highlighted'}, breakable(g.label));
  button.addEventListener('click', () => onFamily(g));
  // The rest may quote the family's holder (`total`): as code.
  return [...breakableWithCode(text.slice(0, at)), button, ...breakableWithCode(text.slice(at + g.label.length))];
}

export interface VerdictOptions {
  host: HostReport;
  /** The allocator shown; null for a host without memory events. */
  allocator: AllocatorReport | null;
  /** Shows another allocator of the host (by its key), from the list of leaking ones. */
  onPick(key: string): void;
  /** A capture of a run with a history: whose verdict it is; the banner is then not coloured (the history's above it is the run's). */
  title?: string;
  /** Selects a family the reason names. */
  onFamily?: ((family: Family) => void) | null;
}

/** The banner of one capture. */
export function verdictPanel({host, allocator, onPick, title, onFamily = null}: VerdictOptions): Panel {
  const verdict: Verdict = allocator?.verdict ?? host.verdict ?? 'inconclusive';
  const reason = allocator?.reason ?? host.reason ?? 'This run has no memory events, so there is nothing to judge.';
  const source = host.step_source;
  // Where the steps came from, unless the reason says so already.
  const steps = source && !reason.includes(source.description) ? source.description : null;
  const oom = allocator?.out_of_memory ? el('div', {class: 'lf-verdict-oom', 'data-out-of-memory': 'true'}, allocator.out_of_memory.description) : null;
  const banner = verdictBanner(
    verdict,
    reason,
    [...(host.warnings ?? []), ...(allocator?.warnings ?? [])],
    // A capture taken at an out-of-memory error leads with what filled the memory, below whose verdict it is.
    oom && title ? el('span', {}, title, oom) : (oom ?? title),
    verdict === 'leak' ? verdictCause(allocator?.families ?? []) : null,
    allocator?.forecast ? el('div', {class: 'lf-verdict-forecast', 'data-forecast': 'true'}, allocator.forecast.description) : null,
    steps ? el('div', {class: 'lf-verdict-steps', 'data-step-source': source.kind}, `Steps: ${steps}`) : null,
    allocatorsOverview(host, allocator, onPick),
  );
  banner.querySelector('.lf-verdict-reason')?.replaceChildren(...reasonNodes(reasonText(verdict, reason), allocator?.families ?? [], onFamily));
  if (title) {
    banner.dataset.capture = 'true';
    banner.classList.add('lf-verdict-capture');
  }
  return staticPanel(banner);
}
