// The process's memory beside the allocator's (the capture helper's recording,
// the host's `process_memory`): its verdict as a banner line under the
// allocator's, never hidden by a green "No leak", and two series for the
// memory timeline: the training process's RSS and the workers' memory summed,
// each as its growth since the window's first step, held from each step's end
// to the next; each worker's own in the legend's value.

import type uPlot from 'uplot';
import type {HostReport, ProcessMemory} from '../api';
import {cssVar, el} from '../dom';
import {formatBytesDelta} from '../format';
import {reasonText, VERDICT_LABEL} from './verdict';

const NOT_RECORDED =
  'Process memory was not recorded: capture with tb_leakfinder.capture(...), which records the training process’s and its DataLoader workers’ memory beside the profile.';

/** The process-memory line under the allocator's verdict; the one line that says how to record it when it was not. */
export function processBanner(host: HostReport): HTMLElement | null {
  if (host.error) return null;
  const p = host.process_memory;
  if (!p) return el('p', {class: 'lf-muted', 'data-process-memory': 'not-recorded'}, NOT_RECORDED);
  const causes = p.causes.map((c) => el('li', {'data-cause': c.id}, `Likely: ${c.title}. `, el('span', {class: 'lf-muted'}, `Fix: ${c.fix} (${c.doc})`)));
  return el(
    'div',
    {class: `lf-verdict lf-verdict-${p.verdict}`, role: 'status', 'data-process-memory': p.verdict},
    el('span', {class: 'lf-verdict-label'}, `Process memory: ${VERDICT_LABEL[p.verdict]}`),
    el('span', {class: 'lf-verdict-reason'}, reasonText(p.verdict, p.reason)),
    causes.length ? el('ul', {'aria-label': 'Likely causes'}, ...causes) : null,
    p.warning ? el('p', {class: 'lf-muted'}, p.warning) : null,
  );
}

/** Each timeline sample's index into the process samples: the last step that ended at or before it (-1: none yet). */
function heldIndex(p: ProcessMemory, timePs: number[]): number[] {
  const ends = p.time_ps.map((t, i) => [t, i] as const).filter((e): e is readonly [number, number] => e[0] !== null);
  let k = -1;
  return timePs.map((t) => {
    while (k + 1 < ends.length && ends[k + 1][0] <= t) k++;
    return k < 0 ? -1 : ends[k][1];
  });
}

function growth(values: (number | null)[]): (number | null)[] {
  const first = values.find((v) => v !== null) ?? null;
  return values.map((v) => (v === null || first === null ? null : v - first));
}

/** The two process series for the timeline's chart, on its byte scale, and their columns at the chart's times. */
export function processSeries(p: ProcessMemory | undefined, timePs: number[]): {series: uPlot.Series[]; columns: (number | null)[][]} {
  if (!p || !p.steps.length) return {series: [], columns: []};
  const at = heldIndex(p, timePs);
  const pick = (values: (number | null)[]) => at.map((i) => (i < 0 ? null : values[i]));
  const main = growth(p.main_bytes);
  const series: uPlot.Series[] = [
    {label: 'training process (RSS, since the first step)', scale: 'bytes', stroke: cssVar('--lf-text'), width: 1.5, dash: [6, 3], value: (_u, v) => (v === null ? '—' : formatBytesDelta(v))},
  ];
  const columns = [pick(main)];
  if (p.workers_bytes.length) {
    const workers = p.workers.map((w) => growth(w.bytes));
    const each = (idx: number | null) =>
      idx === null || at[idx] < 0
        ? ''
        : ` (${p.workers.map((w, k) => `pid ${w.pid}: ${formatBytesDelta(workers[k][at[idx]] ?? null)}`).join(', ')})`;
    series.push({
      label: `workers (${p.workers[0]?.measure.toUpperCase() ?? 'USS'}, summed, since the first step)`,
      scale: 'bytes',
      stroke: cssVar('--lf-muted'),
      width: 1.5,
      dash: [2, 3],
      value: (_u, v, _si, idx) => (v === null ? '—' : `${formatBytesDelta(v)}${each(idx)}`),
    });
    columns.push(pick(growth(p.workers_bytes)));
  }
  return {series, columns};
}
