// The verdict banner: leak, no leak or inconclusive with the report's reason,
// where the steps came from, the forecast to out-of-memory, and every
// allocator of the host that leaks.

import {allocatorKey, allocatorLabel} from '../allocators';
import type {AllocatorReport, HostReport, Verdict} from '../api';
import {breakableChild, type Child, el} from '../dom';
import {formatBytesDelta} from '../format';

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
 * Every leaking allocator of the host, each a button that shows it: when
 * several leak, or when the one shown is not the one that does.
 */
function leakingList(host: HostReport, shown: AllocatorReport | null, onPick: (key: string) => void): HTMLElement | null {
  const leaking = host.allocators.filter((a) => a.verdict === 'leak');
  const shownLeaks = shown !== null && leaking.some((a) => allocatorKey(a) === allocatorKey(shown));
  if (leaking.length === 0 || (leaking.length === 1 && shownLeaks)) return null;
  const item = (a: AllocatorReport) => {
    const key = allocatorKey(a);
    const current = shown !== null && allocatorKey(shown) === key;
    const button = el('button', {type: 'button', class: 'lf-link-button', 'data-allocator': key, 'aria-current': current ? 'true' : null}, allocatorLabel(a));
    button.addEventListener('click', () => onPick(key));
    // The growing families' rate, as the verdict sums it: the heap's trend counts every allocation.
    const rate = a.families.filter((g) => g.kind === 'growing').reduce((sum, g) => sum + g.bytes_per_step, 0);
    return el('li', {}, button, rate ? ` ${formatBytesDelta(rate)}/step` : '');
  };
  const title = leaking.length === 1 ? 'An allocator of this host leaks:' : `${leaking.length} allocators of this host leak:`;
  return el('div', {class: 'lf-verdict-allocators', 'data-list': 'leaking-allocators'}, title, el('ul', {}, ...leaking.map(item)));
}

/** The banner of one capture; `title` (a capture of a run with a history) says whose verdict it is. */
export function renderVerdict(host: HostReport, allocator: AllocatorReport | null, onPick: (key: string) => void, title?: string): HTMLElement {
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
    allocator?.forecast ? el('div', {class: 'lf-verdict-forecast', 'data-forecast': 'true'}, allocator.forecast.description) : null,
    steps ? el('div', {class: 'lf-verdict-steps', 'data-step-source': source.kind}, `Steps: ${steps}`) : null,
    leakingList(host, allocator, onPick),
  );
  if (title) banner.dataset.capture = 'true';
  return banner;
}
