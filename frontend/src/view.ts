// One run's view: the panels for a (run, host, allocator, module) selection.
// Panels take their data and a selection, so a later layout can place two
// views side by side.

import type {AllocatorReport, FormatHints, FormatListing, Family, HostReport, Limits, ModuleSummary, ProgramBuffer, RunReport, Selection} from './api';
import type {CsvWhere} from './csv';
import type {DataCache} from './data';
import {el, notice, section, withCode} from './dom';
import {countOf, formatBytes, formatCount, hostClock, shortProgram} from './format';
import {type Panel, Panels} from './panel';
import {breakdownPanel} from './panels/breakdown';
import {type FamiliesPanel, familiesPanel} from './panels/families';
import {type CaptureTarget, HistoryPanel} from './panels/history';
import {LifetimesPanel} from './panels/lifetimes';
import {outOfMemoryPanel} from './panels/out_of_memory';
import {StaticPanel} from './panels/static';
import {summaryPanel} from './panels/summary';
import {TimelinePanel, type TimeRange} from './panels/timeline';
import {verdictPanel} from './panels/verdict';
import {processBanner} from './panels/process_memory';
import type {SiteLinks} from './sites';

export interface ViewData {
  /** Where the panels fetch what they draw. */
  cache: Pick<DataCache, 'timeline' | 'buffers' | 'module' | 'history'>;
  sel: Selection;
  run: RunReport;
  host: HostReport;
  allocator: AllocatorReport | null;
  module: ModuleSummary | undefined;
  /** The buffer allocation to select in the static view's module, null for none. */
  allocation: number | null;
  /** Scroll to that buffer once it is drawn (a Where link was followed). */
  reveal: boolean;
  /** Where the Where cells' links lead: a program buffer in the static view. */
  sites: SiteLinks;
  limits: Limits;
  /** Shows another allocator of the host (by its key), e.g. from the banner's list of leaking ones. */
  onPickAllocator(key: string): void;
  /** The selected session's TensorBoard run and its number of captures, when it has several: the run history is shown. */
  history: {run: string; captures: number} | null;
  /** Opens another capture of the run (a point of the history). */
  onOpenCapture(target: CaptureTarget): void;
}

/** Why a host of its format may hold no memory events, and how to record them: the format's words. */
function howToRecord(hints: FormatHints): HTMLElement {
  return el('p', {}, ...withCode(hints.record_events));
}

/** A logdir with no profile: how to record one of each format read, and where its files go. */
export function noProfilesFound(formats: FormatListing[]): HTMLElement {
  return el(
    'div',
    {class: 'lf-notice lf-notice-empty', 'data-empty': 'no-runs'},
    el('p', {}, el('strong', {}, 'No profiles found in this logdir.')),
    ...formats.map((f) =>
      el('p', {'data-format': f.name}, el('strong', {}, `${f.name}s: `), ...withCode(f.capture), ' Its files go in ', el('code', {}, f.layout), '.'),
    ),
  );
}

export function noMemoryEvents(host: HostReport): HTMLElement {
  // Only a format whose sessions hold compiled XLA programs can say there are none.
  const programs = !host.format_hints.static_modules
    ? null
    : host.modules?.length
      ? el('p', {}, 'The static view below shows what the compiled XLA programs of this run allocate.')
      : el('p', {}, 'This run has no compiled XLA programs either, so there is nothing to show.');
  // How to record them, said once and folded: the banner above leads with what the run does show.
  return el(
    'div',
    {class: 'lf-notice lf-notice-empty', 'data-empty': 'no-memory-events'},
    programs,
    el('details', {'data-how': 'record-events'}, el('summary', {}, 'How to record memory events'), howToRecord(host.format_hints)),
  );
}

/**
 * How to get the line of Python that made each buffer, shown once above the
 * families when the profile has no Python frames and no family or peak row
 * shows a line of code (beside rows that show one, "no Python frames" reads as
 * wrong: the CLI's text.hint_for); null otherwise.
 */
export function stackHint(a: AllocatorReport): string | null {
  if (!a.stack_hint) return null;
  const rows = [...a.families, ...a.peak_breakdown.filter((r) => r.category === 'buffers')];
  if (!rows.length || rows.some((r) => r.where || r.site.model_frame)) return null;
  return a.stack_hint;
}

/** A device memory profile's compiled programs, apart from its buffers; null when it has none. */
export function compiledPrograms(host: HostReport): HTMLElement | null {
  if (!host.compiled_programs.length) return null;
  const each = host.compiled_programs.map((c) => `${formatBytes(c.bytes)} in ${countOf(c.count, 'program')} on ${c.device}`).join('; ');
  const node = notice('empty', `Compiled programs (their code and constants, not buffers): ${each}.`);
  node.dataset.note = 'compiled-programs';
  return node;
}

/** In place of a timeline for a file of one moment: it records what was live, not when. */
function oneMomentNote(a: AllocatorReport): HTMLElement {
  const node = notice(
    'empty',
    `This file records what was live at one moment (${formatBytes(a.peak_bytes_in_use)}) and no times, so there is no timeline: what was live is grouped below, by family and in the breakdown.`,
  );
  node.dataset.note = 'one-moment';
  return node;
}

export class RunView implements Panel {
  readonly element: HTMLElement;
  private readonly panels = new Panels();
  private timeline: TimelinePanel | null = null;
  private lifetimes: LifetimesPanel | null = null;
  private families: FamiliesPanel | null = null;

  constructor(data: ViewData) {
    const {cache, sel, run, host, allocator, limits, sites} = data;
    const {panels} = this;
    this.element = el('div', {class: 'lf-view', 'data-run': sel.run});
    // A run of several captures: its history's verdict leads the page, this capture's own below it.
    if (data.history) {
      const {run: tbRun, captures} = data.history;
      this.element.append(panels.add(new HistoryPanel({cache, tbRun, captures, shown: sel, onOpen: data.onOpenCapture})).element);
    }
    const title = data.history ? `This capture (${sel.run}), on its own:` : undefined;
    this.element.append(panels.add(verdictPanel({host, allocator, onPick: data.onPickAllocator, title, onFamily: (family) => this.selectFamily(family, true)})).element);
    const process = processBanner(host);
    if (process) this.element.append(process);
    if (allocator) {
      // The CLI's CSV names the allocator by its `name`; the selection may hold its memory id.
      const where: CsvWhere = {run: run.run, host: host.host, allocator: allocator.allocator};
      if (allocator.out_of_memory) this.element.append(section('Held at the out-of-memory error', 'out-of-memory', panels.add(outOfMemoryPanel(allocator.out_of_memory)).element));
      const clock = hostClock(host);
      const oneMoment = host.one_moment;
      this.element.append(panels.add(summaryPanel({allocator, steps: host.step_source, hints: host.format_hints, clock, oneMoment})).element);
      // One moment has no time axis to draw: what was live is grouped in the families and the breakdown.
      const shapeLabel = host.format_hints.shape_label;
      const timeline = oneMoment
        ? null
        : panels.add(
            new TimelinePanel({
              cache,
              sel,
              limits,
              clock,
              onRange: (range) => this.onRange(range),
              onWindow: (w) => this.lifetimes?.setWindow(w),
              process: host.process_memory,
            }),
          );
      const lifetimes = new LifetimesPanel({
        cache,
        sel,
        where,
        limits,
        sites,
        durationPs: host.duration_ps,
        clock,
        onFamilyAllocations: (times) => this.timeline?.setMarks(times),
        onZoom: (range) => {
          void this.timeline?.setRange(range);
          this.onRange(range);
        },
        families: {families: allocator.families, onSelect: (family) => this.selectFamily(family, true), shapeLabel, programs: host.format_hints.static_modules},
        // Followed from an allocation's Where link: that program buffer's allocations are the ones shown.
        programBuffer: data.module && host.format_hints.static_modules && data.allocation !== null ? {program: data.module.name, allocation: data.allocation} : null,
      });
      this.timeline = timeline;
      const growing = allocator.families.filter((g) => g.kind === 'growing').length;
      this.families = panels.add(
        familiesPanel({
          families: allocator.families,
          where,
          onSelect: (family) => this.selectFamily(family),
          sites,
          stackHint: stackHint(allocator),
          oneMoment,
          shapeLabel,
          search: host.holder_search,
        }),
      );
      this.lifetimes = panels.add(lifetimes);
      const breakdown = panels.add(breakdownPanel({allocator, where, sites, clock, onFamily: (family) => this.selectFamily(family, true), shapeLabel}));
      this.element.append(
        timeline ? section('Memory timeline', 'timeline', timeline.element) : section('Live buffers', 'timeline', oneMomentNote(allocator)),
        section(`Families (${formatCount(allocator.families.length)}; ${formatCount(growing)} growing)`, 'families', this.families.element),
        section(oneMoment ? 'Buffers live at that moment' : 'Buffer lifetimes', 'lifetimes', lifetimes.element),
        section('Peak breakdown', 'breakdown', breakdown.element),
      );
    } else {
      this.element.append(noMemoryEvents(host));
    }
    const programs = compiledPrograms(host);
    if (programs) this.element.append(programs);
    if (data.module && host.format_hints.static_modules) {
      const lifetimes = this.lifetimes;
      // The static view's program buffer, picked, is picked in the dynamic view too: its allocations highlighted.
      const onShowAllocations = lifetimes
        ? (picked: ProgramBuffer) => {
            void lifetimes.setProgramBuffer(picked);
            lifetimes.element.scrollIntoView({block: 'start'});
          }
        : null;
      const staticPanel = panels.add(
        new StaticPanel({cache, run: sel.run, host: sel.host, module: data.module, limits, selected: data.allocation, reveal: data.reveal, onShowAllocations}),
      );
      this.element.append(section(`Static view: ${shortProgram(sel.module)}`, 'static', staticPanel.element));
    }
  }

  /** Starts the panels' own requests; call once the element is in the page. */
  mount(): void {
    this.panels.mount();
  }

  /** Redraws the charts with the current theme's colours. */
  update(): void {
    this.panels.update();
  }

  destroy(): void {
    this.panels.destroy();
  }

  private onRange(range: TimeRange | null): void {
    void this.lifetimes?.setRange(range);
  }

  /** Selects a family everywhere; `fromElsewhere` (the verdict, the peak breakdown): the families table marks it too. */
  private selectFamily(family: Family | null, fromElsewhere = false): void {
    if (fromElsewhere) this.families?.setSelected(family?.family ?? null);
    void this.timeline?.setFamily(family?.family ?? null);
    void this.lifetimes?.setFamily(family);
  }
}
