// The verdict banner: leak, no leak or inconclusive, with the report's reason.

import type {AllocatorReport, HostReport, Verdict} from '../api';
import {type Child, el} from '../dom';

export const VERDICT_LABEL: Record<Verdict, string> = {
  leak: 'Leak',
  no_leak: 'No leak',
  inconclusive: 'Inconclusive',
};

/** A verdict and its reason; `title` (e.g. which run) goes above them. */
export function verdictBanner(verdict: Verdict, reason: string, warnings: string[] = [], title?: Child): HTMLElement {
  return el(
    'div',
    {class: `lf-verdict lf-verdict-${verdict}`, role: 'status', 'data-verdict': verdict},
    title ? el('div', {class: 'lf-verdict-title'}, title) : null,
    el('span', {class: 'lf-verdict-label'}, VERDICT_LABEL[verdict] ?? verdict),
    el('span', {class: 'lf-verdict-reason'}, reason),
    warnings.length ? el('ul', {'aria-label': 'Warnings'}, ...warnings.map((w) => el('li', {}, w))) : null,
  );
}

export function renderVerdict(host: HostReport, allocator: AllocatorReport | null): HTMLElement {
  const verdict: Verdict = allocator?.verdict ?? host.verdict ?? 'inconclusive';
  const reason = allocator?.reason ?? host.reason ?? 'This run has no memory events, so there is nothing to judge.';
  return verdictBanner(verdict, reason, [...(host.warnings ?? []), ...(allocator?.warnings ?? [])]);
}
