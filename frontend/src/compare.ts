// The comparison view: run B (the change) against run A (the base), side by
// side. Built from one `compare` answer plus both runs' timelines.

import type {AllocatorDiff, AllocatorReport, ComparisonAnswer, HostReport, Limits} from './api';
import type {DataCache} from './data';
import {el, notice, section} from './dom';
import {type Panel, Panels} from './panel';
import {deltasPanel, familyChangesPanel, moduleChangesPanel, regressionBanner, sideName, sideTag, verdictsBanner} from './panels/compare';
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
  /** Each side's host, from its report when fetched: its clock says whether it has a timeline to draw. */
  hostOf?: (side: 'a' | 'b', host: string) => HostReport | undefined;
}

/**
 * A red banner when either run was captured at an out-of-memory error ("B ran out of memory"), with what held
 * the memory then; null when neither was. It stands in place of the green "No regression".
 */
function outOfMemoryBanner(alloc: AllocatorDiff | undefined): HTMLElement | null {
  const said = {a: alloc?.out_of_memory_a, b: alloc?.out_of_memory_b};
  const sides = (['a', 'b'] as const).filter((side) => said[side]);
  if (!sides.length) return null;
  const title = sides.length === 2 ? 'A and B both ran out of memory' : `${sides[0].toUpperCase()} ran out of memory`;
  return el(
    'div',
    {class: 'lf-regression', role: 'alert', 'data-out-of-memory': sides.join('')},
    el('strong', {}, title),
    el('ul', {}, ...sides.map((side) => el('li', {}, `${side.toUpperCase()}: ${said[side] ?? ''}`))),
  );
}

export class CompareView implements Panel {
  readonly element: HTMLElement;
  private readonly panels = new Panels();

  constructor({cache, comparison: c, a, allocator, b, limits, hostOf}: CompareData) {
    this.element = el('div', {class: 'lf-view lf-compare', 'data-run-a': c.run_a, 'data-run-b': c.run_b});
    // Hosts are asked for by name, so there is one pair at most.
    const host = c.hosts[0];
    // The allocator chosen in the toolbar (A's); else the first pair.
    const chosen = [a.allocator, allocator?.allocator];
    const alloc = host?.allocators.find((x) => x.allocator_a !== null && chosen.includes(x.allocator_a)) ?? host?.allocators[0];
    const oom = outOfMemoryBanner(alloc);
    // An out-of-memory error is never "no regression": its banner replaces the green one, and leads a red one.
    if (oom) this.element.append(oom);
    if (!oom || c.regression) this.element.append(regressionBanner(c, host));
    this.element.append(verdictsBanner(c, host, alloc));
    if (c.unmatched_hosts.length) {
      this.element.append(notice('empty', `Hosts in one run only, left out: ${c.unmatched_hosts.join(', ')}.`));
    }
    if (!host) {
      this.element.append(notice('empty', `No host of ${sideName(a.run, a.host)} matches one of ${sideName(b.run, b.host)}: pick the hosts to compare.`));
      return;
    }
    const runs = {run_a: c.run_a, run_b: c.run_b, host_a: host.host_a, host_b: host.host_b};
    // Times are only comparable when both files record them: one moment, or an order of allocations, has none.
    const untimed = (['a', 'b'] as const).filter((side) => {
      const h = hostOf?.(side, side === 'a' ? host.host_a : host.host_b);
      return h && (h.one_moment || h.event_clock_ps);
    });
    if (alloc && untimed.length) {
      const which = untimed.length === 2 ? 'Neither run records' : `${untimed[0].toUpperCase()} does not record`;
      const note = notice('empty', `${which} times (one moment, or only the order of its allocations): no timelines to draw on one time axis.`);
      note.dataset.note = 'untimed';
      this.element.append(note);
    }
    if (alloc) {
      const name = alloc.allocator_a === alloc.allocator_b || !alloc.allocator_b ? (alloc.allocator_a ?? '') : `${alloc.allocator_a ?? '—'} / ${alloc.allocator_b}`;
      const timeline = new CompareTimeline({
        cache,
        sides: {
          a: alloc.allocator_a === null ? null : {run: a.run, host: host.host_a, allocator: alloc.allocator_a},
          b: alloc.allocator_b === null ? null : {run: b.run, host: host.host_b, allocator: alloc.allocator_b},
        },
        limits,
      });
      // Not drawn when a side records no times (its section is left out).
      if (!untimed.length) this.panels.add(timeline);
      this.element.append(
        section(`Changes from A to B (allocator ${name})`, 'compare-deltas', this.panels.add(deltasPanel(alloc)).element),
        ...(untimed.length
          ? []
          : [section('Memory timelines', 'compare-timeline', el('div', {class: 'lf-legend'}, sideTag('a'), ` ${sideName(c.run_a, host.host_a)}`, sideTag('b'), ` ${sideName(c.run_b, host.host_b)}`), timeline.element)]),
        section(`Families, A → B (${alloc.families.length})`, 'compare-families', this.panels.add(familyChangesPanel(alloc.families, {...runs, allocator_a: alloc.allocator_a, allocator_b: alloc.allocator_b})).element),
      );
    } else {
      this.element.append(notice('empty', 'Neither run has memory events (a BFC allocator), so only their compiled programs are compared.'));
    }
    if (host.modules.length) {
      this.element.append(section(`Compiled programs (${host.modules.length})`, 'compare-modules', this.panels.add(moduleChangesPanel(host.modules, runs)).element));
    }
  }

  /** Starts the timelines' requests; call once the element is in the page. */
  mount(): void {
    this.panels.mount();
  }

  update(): void {
    this.panels.update();
  }

  destroy(): void {
    this.panels.destroy();
  }
}
