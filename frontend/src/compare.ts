// The comparison view: run B (the change) against run A (the base), side by
// side. Built from one `compare` answer plus both runs' timelines.

import type {AllocatorReport, ComparisonAnswer, Limits} from './api';
import type {DataCache} from './data';
import {el, notice, section} from './dom';
import {renderDeltas, renderFamilies, renderModules, renderRegression, renderVerdicts, sideName, sideTag} from './panels/compare';
import {CompareTimeline, type SideSelection} from './panels/compare_timeline';

export interface CompareData {
  /** Where the timelines are fetched. */
  cache: Pick<DataCache, 'timeline'>;
  comparison: ComparisonAnswer;
  a: SideSelection;
  /** A's allocator chosen in the toolbar: the pair shown is matched by its label or memory id. */
  allocator: AllocatorReport | null;
  b: Pick<SideSelection, 'run' | 'host'>;
  limits: Limits;
}

export class CompareView {
  readonly element: HTMLElement;
  private timeline: CompareTimeline | null = null;

  constructor({cache, comparison: c, a, allocator, b, limits}: CompareData) {
    this.element = el('div', {class: 'lf-view lf-compare', 'data-run-a': c.run_a, 'data-run-b': c.run_b});
    // Hosts are asked for by name, so there is one pair at most.
    const host = c.hosts[0];
    // The allocator chosen in the toolbar (A's); else the first pair.
    const chosen = [a.allocator, allocator?.allocator];
    const alloc = host?.allocators.find((x) => x.allocator_a !== null && chosen.includes(x.allocator_a)) ?? host?.allocators[0];
    this.element.append(renderRegression(c, host), renderVerdicts(c, host, alloc));
    if (c.unmatched_hosts.length) {
      this.element.append(notice('empty', `Hosts in one run only, left out: ${c.unmatched_hosts.join(', ')}.`));
    }
    if (!host) {
      this.element.append(notice('empty', `No host of ${sideName(a.run, a.host)} matches one of ${sideName(b.run, b.host)}: pick the hosts to compare.`));
      return;
    }
    const runs = {run_a: c.run_a, run_b: c.run_b, host_a: host.host_a, host_b: host.host_b};
    if (alloc) {
      const name = alloc.allocator_a === alloc.allocator_b || !alloc.allocator_b ? (alloc.allocator_a ?? '') : `${alloc.allocator_a ?? '—'} / ${alloc.allocator_b}`;
      this.timeline = new CompareTimeline(
        cache,
        {
          a: alloc.allocator_a === null ? null : {run: a.run, host: host.host_a, allocator: alloc.allocator_a},
          b: alloc.allocator_b === null ? null : {run: b.run, host: host.host_b, allocator: alloc.allocator_b},
        },
        limits,
      );
      this.element.append(
        section(`Changes from A to B (allocator ${name})`, 'compare-deltas', renderDeltas(alloc)),
        section('Memory timelines', 'compare-timeline', el('div', {class: 'lf-legend'}, sideTag('a'), ` ${sideName(c.run_a, host.host_a)}`, sideTag('b'), ` ${sideName(c.run_b, host.host_b)}`), this.timeline.element),
        section(`Families, A → B (${alloc.families.length})`, 'compare-families', renderFamilies(alloc.families, {...runs, allocator_a: alloc.allocator_a, allocator_b: alloc.allocator_b})),
      );
    } else {
      this.element.append(notice('empty', 'Neither run has memory events (a BFC allocator), so only their compiled programs are compared.'));
    }
    if (host.modules.length) {
      this.element.append(section(`Compiled programs (${host.modules.length})`, 'compare-modules', renderModules(host.modules, runs)));
    }
  }

  /** Starts the timelines' requests; call once the element is in the page. */
  start(): void {
    void this.timeline?.load();
  }

  redraw(): void {
    this.timeline?.draw();
  }

  destroy(): void {
    this.timeline?.destroy();
  }
}
