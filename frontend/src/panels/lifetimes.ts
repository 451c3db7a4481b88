// Buffer lifetimes: x is time, y is address (unused address gaps removed),
// height is size, over the timeline's window (the server's: the charts span
// the same). Never-freed buffers reach to the end of the window in the
// warning colour. A file of one moment (no times) has no chart and no time
// columns: its table lists what was live. The never-freed buffers of the selected op family are
// highlighted (the buffers route's `family` is set on never-freed ones only), the others faded; a
// row of the table selects its buffer's family (click, Enter or Space). A program buffer
// picked in the static view has its allocations highlighted and listed alone. Below, every
// buffer, paged from the server, with where it was made (each page names its sites once).

import type {Buffer, BuffersAnswer, BufferStatus, Family, Limits, ProgramBuffer, Selection, Site} from '../api';
import {type Rect, RectChart, swatch} from '../chart';
import {type CsvWhere, siteColumns, withSite} from '../csv';
import type {DataCache} from '../data';
import {cssVar, el, errorMessage} from '../dom';
import {allocationIncrs, axisLabel, countOf, formatBytes, formatCount, formatPs, formatStepIn, formatWhen, type HostClock, shortProgram, tellsTime, whenTicks} from '../format';
import {OwningPanel, STALE} from '../panel';
import {hasProgramBuffer, NO_SITE, type SiteLinks, siteLines, whereCell, whereHelp} from '../sites';
import {DataTable} from '../table';
import {kindPill, labelWithoutWhere} from './families';
import type {TimeRange} from './timeline';

/** The allocator's families, which the table's rows name and select, and what this format's buffers tell. */
export interface BufferFamilies {
  families: readonly Family[];
  /** Selects a family everywhere (null: none); the panel's own `setFamily` follows. */
  onSelect(family: Family | null): void;
  /** "shape", or "input shapes" where the format names the op's inputs' shapes, not the buffer's own (PyTorch). */
  shapeLabel: string;
  /** The format has compiled programs, so a static view whose program buffers a bar can open. */
  programs: boolean;
}

export interface LifetimesOptions {
  cache: Pick<DataCache, 'buffers'>;
  sel: Selection;
  /** The CSV's columns naming the run, host and allocator. */
  where: CsvWhere;
  limits: Limits;
  sites: SiteLinks | null;
  /** The host's duration: the chart's span until the timeline's window is known. */
  durationPs: number;
  clock: HostClock;
  /** When the selected family's never-freed buffers were allocated (the timeline marks them). */
  onFamilyAllocations(times: number[]): void;
  /** The range dragged across the chart (null: reset), for the timeline to zoom to. */
  onZoom(range: TimeRange | null): void;
  families?: BufferFamilies;
  /** The program buffer picked in the static view when the view opens (a Where link was followed), null for none. */
  programBuffer?: ProgramBuffer | null;
}

interface BufferRect extends Rect {
  buffer: Buffer;
  address: number;
}

export function parseAddress(address: string): number {
  const text = address.trim();
  return /^0x/i.test(text) ? parseInt(text.slice(2), 16) : Number(text);
}

/**
 * Maps addresses onto a packed axis: address ranges in use keep their
 * relative layout, the unused gaps between them shrink to a small gap.
 */
export function packAddresses(spans: {address: number; size: number}[]): (address: number) => number {
  const sorted = spans.filter((s) => Number.isFinite(s.address)).sort((a, b) => a.address - b.address);
  const segments: {start: number; end: number; base: number}[] = [];
  for (const s of sorted) {
    const last = segments[segments.length - 1];
    if (last && s.address <= last.end) last.end = Math.max(last.end, s.address + s.size);
    else segments.push({start: s.address, end: s.address + s.size, base: 0});
  }
  // All gaps together take a tenth of the axis.
  const used = segments.reduce((sum, s) => sum + (s.end - s.start), 0);
  const gap = segments.length > 1 ? (0.1 * used) / (segments.length - 1) : 0;
  let base = 0;
  for (const s of segments) {
    s.base = base;
    base += s.end - s.start + gap;
  }
  return (address: number) => {
    let lo = 0;
    let hi = segments.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (segments[mid].start <= address) lo = mid;
      else hi = mid - 1;
    }
    const seg = segments[lo];
    return seg ? seg.base + (address - seg.start) : 0;
  };
}

export class LifetimesPanel extends OwningPanel {
  readonly element: HTMLElement;
  private readonly chart: RectChart<BufferRect>;
  private readonly note: HTMLElement;
  private readonly table: DataTable<Buffer>;
  private range: TimeRange | null = null;
  /** The timeline's window, which the chart spans; until it is known, the host's duration. */
  private window: TimeRange | null = null;
  private family: Family | null = null;
  private status: BufferStatus | '' = '';
  private largest: Buffer[] = [];
  private grouped: Buffer[] = [];
  /** The program buffer picked in the static view, and its allocations (up to a page). */
  private programBuffer: ProgramBuffer | null = null;
  private picked: Buffer[] = [];
  private readonly pickedNote: HTMLElement;
  private total = 0;
  /** The buffer row whose family is selected, so that another family selected elsewhere clears it. */
  private selectedBuffer: {id: string; family: number} | null = null;
  /** The legend's entries of what a selection draws, each shown while it is drawn: the legend lists what the chart shows. */
  private readonly fadedSwatch: HTMLElement;
  private readonly familySwatch = swatch('var(--lf-highlight)', 'never freed, of the selected family');
  /** Above the table: every buffer, or the selected family's never-freed ones that it then lists. */
  private readonly tableHeading = el('h3', {'data-heading': 'buffers'}, 'All buffers');
  private readonly pickedSwatch = swatch('var(--lf-accent)', 'allocations of the program buffer picked in the static view');
  private readonly largestRequest = this.owned.latest();
  private readonly groupRequest = this.owned.latest();
  private readonly pickRequest = this.owned.latest();
  /** Each loaded buffer's site, from the page it came in (its `site` indexes that page's `sites`). */
  private readonly siteOf = new WeakMap<Buffer, Site>();
  private readonly cache: LifetimesOptions['cache'];
  private readonly sel: Selection;
  private readonly limits: Limits;
  private readonly sites: SiteLinks | null;
  private readonly clock: HostClock;
  private readonly families: BufferFamilies;

  constructor(private readonly options: LifetimesOptions) {
    super();
    const {where, clock, families = {families: [], onSelect: () => undefined, shapeLabel: 'shape', programs: true}} = options;
    ({cache: this.cache, sel: this.sel, limits: this.limits, sites: this.sites, clock: this.clock} = options);
    this.families = families;
    this.programBuffer = options.programBuffer ?? null;
    const inputShapes = families.shapeLabel !== 'shape';
    this.fadedSwatch = swatch('var(--lf-buffer-faded)', `the other buffers, while a family${families.programs ? ' or program buffer' : ''} is highlighted`);
    this.chart = this.owned.own(new RectChart<BufferRect>({
      height: 320,
      xLabel: axisLabel(clock),
      xIncrs: allocationIncrs(clock),
      yLabel: 'address (unused gaps removed)',
      xValues: (values) => whenTicks(values, clock),
      describe: (r) => this.describe(r.buffer),
      onZoom: (r) => options.onZoom(r ? {start_ps: Math.max(0, r.min), end_ps: r.max} : null),
      // A buffer made for a program buffer opens it in the static view, as its Where link does.
      onPick: (r) => {
        const site = this.siteOf.get(r.buffer);
        if (hasProgramBuffer(site) && this.sites?.href(site)) this.sites.open(site);
      },
    }));
    this.chart.element.dataset.chart = 'lifetimes';
    // One moment has no time to draw its buffers over: the table alone lists them.
    this.chart.element.hidden = !!clock.moment;
    this.chart.element.setAttribute('role', 'group');
    this.chart.element.setAttribute('aria-roledescription', 'chart');
    this.chart.element.setAttribute(
      'aria-label',
      'Buffer lifetimes: each buffer from allocation to free, at its address; the table below lists them. The left and right arrow keys go from buffer to buffer in time, up and down in address; Home and End go to the first and last.',
    );
    this.note = el('div', {class: 'lf-chart-note', role: 'status'});
    const statusSelect = el(
      'select',
      {'aria-label': 'Buffer status'},
      el('option', {value: ''}, 'all buffers'),
      el('option', {value: 'never_freed'}, 'never freed'),
      el('option', {value: 'freed'}, 'freed'),
      el('option', {value: 'before_window'}, 'allocated before the window'),
    );
    statusSelect.addEventListener('change', () => {
      this.status = statusSelect.value as BufferStatus | '';
      void this.table.reset();
    });
    this.table = this.owned.own(new DataTable<Buffer>({
      caption: 'Buffers',
      pageSize: 10,
      sort: 'bytes',
      order: 'desc',
      // Every buffer of one moment is live: nothing to choose between.
      extraTools: clock.moment ? [] : [el('label', {class: 'lf-muted'}, 'Show ', statusSelect)],
      rowKey: (b) => String(b.id),
      rowClass: (b) => (b.status === 'never_freed' ? 'lf-never-freed' : '') + (this.programBuffer ? ' lf-selected-buffer' : ''),
      // A row selects its buffer's family, as a breakdown row does; a buffer of no family clears the selection.
      onSelect: (b) => {
        const family = b ? this.familyOf(b) : null;
        this.selectedBuffer = b && family ? {id: String(b.id), family: family.family} : null;
        this.families.onSelect(family);
      },
      where,
      // As the CLI's buffers.csv: the row's site (an index into its page's sites) as that site's columns.
      csvRow: (b) => withSite(b, siteColumns(this.siteOf.get(b) ?? NO_SITE)),
      columns: [
        {key: 'op', label: 'Op', sort: 'op', wrap: true, cell: (b) => b.op || '(unknown)'},
        {
          key: 'shape',
          label: inputShapes ? 'Input shapes' : 'Shape',
          wrap: true,
          title: inputShapes ? 'the shapes of the inputs of the op that made the buffer: the trace names no buffer’s own' : undefined,
          cell: (b) => b.shape,
        },
        {key: 'dtype', label: 'Dtype', cell: (b) => b.dtype},
        {key: 'region', label: 'Region', cell: (b) => b.region},
        {key: 'where', label: 'Where', wrap: true, title: whereHelp('it was'), cell: (b) => whereCell(b.where, this.siteOf.get(b), this.sites)},
        {key: 'bytes', label: 'Size', sort: 'bytes', numeric: true, cell: (b) => formatBytes(b.chunk_bytes)},
        ...(clock.moment
          ? []
          : [
              {key: 'alloc', label: 'Allocated', sort: 'alloc_time_ps', numeric: true, cell: (b: Buffer) => (b.alloc_time_ps === null ? 'before window' : formatWhen(b.alloc_time_ps, this.clock))},
              {key: 'free', label: 'Freed', sort: 'free_time_ps', numeric: true, cell: (b: Buffer) => (b.free_time_ps === null ? 'never' : formatWhen(b.free_time_ps, this.clock))},
              // A lifetime is a length of time: only a file that records times has one.
              ...(tellsTime(clock) ? [{key: 'life', label: 'Lifetime', sort: 'lifetime_ps', numeric: true, cell: (b: Buffer) => lifetime(b, this.windowStart(), this.windowEnd())}] : []),
              // Without step information a buffer's "step" is its time window's number: the column says so.
              {key: 'step', label: clock.steps ? 'Step' : 'Window', numeric: true, cell: (b: Buffer) => (b.alloc_step === null ? '—' : String(b.alloc_step))},
            ]),
        {key: 'family', label: 'Family', wrap: true, title: 'the family of a buffer that outlived its step; select the row to highlight the family', cell: (b) => this.familyCell(b)},
      ],
      source: async (q, signal) => {
        const page = await this.cache.buffers(
          this.sel,
          {
            offset: q.offset,
            limit: q.limit,
            sort: q.sort as never,
            order: q.order,
            family: this.family?.family ?? null,
            status: this.status,
            start_ps: this.range?.start_ps ?? null,
            end_ps: this.range?.end_ps ?? null,
            program: this.programBuffer?.program ?? null,
            allocation: this.programBuffer?.allocation ?? null,
          },
          signal,
        );
        return {rows: this.withSites(page), total: page.total};
      },
    }));
    const legend = el(
      'div',
      {class: 'lf-legend'},
      // CSS references, so that the legend follows a theme change by itself.
      swatch('var(--lf-buffer)', 'freed'),
      swatch('var(--lf-leak)', 'never freed (drawn to the end of the window)'),
      swatch('var(--lf-buffer-dim)', 'allocated before the window'),
      this.fadedSwatch,
      this.familySwatch,
      this.pickedSwatch,
    );
    this.pickedNote = el('div', {class: 'lf-picked', 'data-picked': '', hidden: true});
    const about = clock.moment
      ? 'The buffers live when the file was written, largest first. The file records no times: no buffer has an allocation time or a lifetime.'
      : `Each bar is one buffer: from its allocation to its free${clock.eventPs ? ' (in the order of allocations: the file records no times)' : ''}, at its address, as tall as its size. Hover for details (or focus the chart and move with the arrow keys); drag to zoom${families.programs ? '; click a buffer a program made to open its program buffer in the static view' : ''}.`;
    this.element = el(
      'div',
      {},
      el('p', {class: 'lf-muted'}, about),
      // One moment draws no bars: no legend of them.
      clock.moment ? null : legend,
      this.chart.element,
      this.note,
      this.tableHeading,
      this.pickedNote,
      this.table.element,
    );
  }

  /** The largest buffers of the time range, as many as one page holds: what the chart draws. */
  private async loadLargest(): Promise<void> {
    const range = {start_ps: this.range?.start_ps ?? null, end_ps: this.range?.end_ps ?? null};
    this.note.textContent = 'Loading buffers…';
    try {
      const page = await this.largestRequest.run((signal) => this.cache.buffers(this.sel, {limit: this.limits.page_size, sort: 'bytes', order: 'desc', ...range}, signal));
      if (page === STALE) return;
      this.largest = this.withSites(page);
      this.total = page.total;
      this.draw();
    } catch (err) {
      this.note.textContent = `Could not load buffers: ${errorMessage(err)}`;
    }
  }

  /** The never-freed buffers of the selected family (up to a page), drawn on top whatever their size. */
  private async loadFamily(): Promise<void> {
    const family = this.family;
    try {
      const page = await this.groupRequest.run(async (signal) =>
        family ? this.cache.buffers(this.sel, {limit: this.limits.page_size, sort: 'alloc_time_ps', order: 'asc', family: family.family}, signal) : null,
      );
      if (page === STALE) return;
      this.grouped = page ? this.withSites(page) : [];
      this.options.onFamilyAllocations(this.grouped.map((b) => b.alloc_time_ps).filter((t): t is number => t !== null));
      this.draw();
    } catch (err) {
      this.note.textContent = `Could not load the family's never-freed buffers: ${errorMessage(err)}`;
    }
  }

  /** The allocations of the picked program buffer (up to a page), drawn on top in the accent colour. */
  private async loadPicked(): Promise<void> {
    const picked = this.programBuffer;
    try {
      const page = await this.pickRequest.run(async (signal) =>
        picked ? this.cache.buffers(this.sel, {limit: this.limits.page_size, sort: 'alloc_time_ps', order: 'asc', ...picked}, signal) : null,
      );
      if (page === STALE) return;
      this.picked = page ? this.withSites(page) : [];
      this.describePicked(page?.total ?? 0);
      this.draw();
    } catch (err) {
      this.note.textContent = `Could not load the program buffer's allocations: ${errorMessage(err)}`;
    }
  }

  /** Above the table: which program buffer's allocations it lists, and a way back to every buffer. */
  private describePicked(total: number): void {
    const picked = this.programBuffer;
    this.pickedNote.hidden = picked === null;
    this.pickedNote.dataset.picked = picked ? `${picked.program}#${picked.allocation}` : '';
    this.pickedNote.dataset.total = String(total);
    if (!picked) {
      this.pickedNote.replaceChildren();
      return;
    }
    const all = el('button', {type: 'button'}, 'Show every buffer');
    all.addEventListener('click', () => void this.setProgramBuffer(null));
    const what = `allocation ${formatCount(picked.allocation)} of ${shortProgram(picked.program)}`;
    this.pickedNote.replaceChildren(
      el('span', {title: picked.program}, total ? `Only the ${countOf(total, 'allocation')} of ${what}, picked in the static view. ` : `No allocation of this allocator was tied to ${what}. `),
      all,
    );
  }

  /** The page's buffers, each with its site noted. A page without `sites` (an older standalone report) gives none. */
  private withSites(page: BuffersAnswer): Buffer[] {
    const sites = page.sites ?? [];
    for (const b of page.buffers) {
      const site = sites[b.site];
      if (site) this.siteOf.set(b, site);
    }
    return page.buffers;
  }

  /** The timeline's window: the chart spans it, never-freed buffers reach its end. */
  setWindow(window: TimeRange): void {
    this.window = window;
    this.chart.element.dataset.window = `${window.start_ps},${window.end_ps}`;
    this.draw();
    // The table's lifetimes of never-freed buffers run to the window's end: drawn again with it.
    if (tellsTime(this.clock)) void this.table.reset();
  }

  private windowStart(): number {
    return this.window?.start_ps ?? 0;
  }

  private windowEnd(): number {
    return this.window?.end_ps ?? this.options.durationPs;
  }

  /** First load: the chart and the first page of the table (and the allocations of a program buffer picked already). */
  mount(): void {
    if (this.programBuffer) void this.loadPicked();
    void this.loadLargest();
    void this.table.load();
  }

  /** Redraws with the current theme's colours. */
  update(): void {
    this.draw();
  }

  setFamily(family: Family | null): Promise<void> {
    this.family = family;
    // Selected elsewhere (the families, the verdict, the breakdown): no buffer row is the selection any more.
    if (this.selectedBuffer && this.selectedBuffer.family !== family?.family) this.selectedBuffer = null;
    this.table.setSelected(this.selectedBuffer?.id ?? null);
    this.tableHeading.textContent = family ? `Never-freed buffers of the selected family, ${family.label}: select it again to list every buffer` : 'All buffers';
    void this.table.reset();
    return this.loadFamily();
  }

  /** Highlights and lists the allocations tied to a program buffer of the static view (null: every buffer again). */
  setProgramBuffer(picked: ProgramBuffer | null): Promise<void> {
    this.programBuffer = picked;
    void this.table.reset();
    return this.loadPicked();
  }

  setRange(range: TimeRange | null): Promise<void> {
    this.range = range;
    void this.table.reset();
    this.chart.setXRange(range ? {min: range.start_ps, max: range.end_ps} : null);
    return this.loadLargest();
  }

  /** Rebuilds the rects from loaded buffers (after load or a theme change). */
  private draw(): void {
    const byId = new Map<number, Buffer>();
    for (const b of this.largest) byId.set(b.id, b);
    for (const b of this.grouped) byId.set(b.id, b);
    for (const b of this.picked) byId.set(b.id, b);
    const buffers = [...byId.values()];
    const pickedIds = new Set(this.picked.map((b) => b.id));
    const pack = packAddresses(buffers.map((b) => ({address: parseAddress(b.address), size: b.chunk_bytes})));
    const colors = {
      freed: cssVar('--lf-buffer'),
      live: cssVar('--lf-leak'),
      before: cssVar('--lf-buffer-dim'),
      // Not the before-the-window grey: the legend tells the two apart.
      faded: cssVar('--lf-buffer-faded'),
      highlight: cssVar('--lf-highlight'),
      accent: cssVar('--lf-accent'),
    };
    const selected = this.family?.family ?? null;
    let yMax = 1;
    let highlighted = 0;
    const rects: BufferRect[] = buffers.map((b) => {
      const address = parseAddress(b.address);
      const y0 = pack(address);
      const y1 = y0 + Math.max(1, b.chunk_bytes);
      yMax = Math.max(yMax, y1);
      const hit = selected !== null && b.family === selected;
      const picked = pickedIds.has(b.id);
      if (hit) highlighted++;
      let color = b.status === 'never_freed' ? colors.live : b.status === 'before_window' ? colors.before : colors.freed;
      if ((selected !== null && !hit) || (this.programBuffer && !picked)) color = colors.faded;
      if (hit) color = colors.highlight;
      if (picked) color = colors.accent;
      return {
        buffer: b,
        address,
        x0: b.alloc_time_ps ?? this.windowStart(),
        x1: b.free_time_ps ?? this.windowEnd(),
        y0,
        y1,
        color,
        highlight: hit || picked,
      };
    });
    this.fadedSwatch.hidden = selected === null && !this.programBuffer;
    this.familySwatch.hidden = selected === null;
    this.pickedSwatch.hidden = !this.programBuffer;
    this.chart.setData(rects, [this.windowStart(), Math.max(this.windowStart() + 1, this.windowEnd())], [0, yMax * 1.02]);
    if (this.range) this.chart.setXRange({min: this.range.start_ps, max: this.range.end_ps});
    const el_ = this.chart.element;
    el_.dataset.highlightFamily = selected === null ? '' : String(selected);
    el_.dataset.faded = colors.faded;
    el_.dataset.highlighted = String(highlighted);
    el_.dataset.picked = String(pickedIds.size);
    el_.dataset.drawn = String(rects.length);
    // Where the never-freed bars end: the window's end.
    const live = rects.filter((r) => r.buffer.status === 'never_freed');
    el_.dataset.neverFreedEnd = live.length ? String(Math.max(...live.map((r) => r.x1))) : '';
    const shown = this.largest.length < this.total ? `the ${formatCount(this.largest.length)} largest of ${countOf(this.total, 'buffer')}` : this.total === 1 ? 'the one buffer' : `all ${countOf(this.total, 'buffer')}`;
    const where = this.range ? ` between ${formatWhen(this.range.start_ps, this.clock)} and ${formatWhen(this.range.end_ps, this.clock)}` : '';
    const picked = this.programBuffer
      ? ` Highlighted: ${countOf(pickedIds.size, 'allocation')} of allocation ${formatCount(this.programBuffer.allocation)} of ${shortProgram(this.programBuffer.program)}.`
      : '';
    const hl = this.family
      ? ` Highlighted: ${countOf(highlighted, 'never-freed buffer')} of the family ${this.family.label}.`
      : picked || (this.clock.moment ? '' : ' Click an op family above to highlight its never-freed buffers.');
    this.note.textContent = `Showing ${shown}${where}.${hl}`;
  }

  /** The family a buffer belongs to, from the allocator's families; null when none. */
  private familyOf(b: Buffer): Family | null {
    return b.family === null ? null : (this.families.families.find((g) => g.family === b.family) ?? null);
  }

  /** The Family cell: the family's kind and label, as the peak breakdown shows them. */
  private familyCell(b: Buffer): HTMLElement | string {
    const g = this.familyOf(b);
    return g ? el('span', {class: 'lf-kinds', 'data-family-of': String(g.family)}, kindPill(g.kind), ' ', labelWithoutWhere(g.label, g.where)) : '';
  }

  private describe(b: Buffer): {title: string; rows: [string, string][]} {
    return {
      title: b.op || '(unknown op)',
      rows: [
        [this.families.shapeLabel === 'shape' ? 'shape' : 'input shapes', b.shape || '—'],
        ['dtype', b.dtype || '—'],
        ['region', b.region || '—'],
        ['size', `${formatBytes(b.chunk_bytes)} (requested ${formatBytes(b.requested_bytes)})`],
        ['address', b.address],
        ...(this.clock.moment
          ? []
          : ([
              ['allocated', b.alloc_time_ps === null ? 'before the window' : `${formatWhen(b.alloc_time_ps, this.clock)}, ${formatStepIn(b.alloc_step, this.clock)}`],
              ['freed', b.free_time_ps === null ? 'never (live at the end of the window)' : `${formatWhen(b.free_time_ps, this.clock)}, ${formatStepIn(b.free_step, this.clock)}`],
            ] as [string, string][])),
        ['family', this.familyOf(b)?.label ?? '—'],
        ...whereRows(b.where, this.siteOf.get(b)),
      ],
    };
  }
}

/** The tooltip's rows of where a buffer was made: the line, then the stack and program buffer, one per row. */
function whereRows(where: string, site: Site | undefined): [string, string][] {
  const lines = siteLines('', site);
  if (!where && !lines.length) return [];
  return [['where', where || '—'], ...lines.map((line): [string, string] => ['', line])];
}

function lifetime(b: Buffer, windowStart: number, windowEnd: number): string {
  const start = b.alloc_time_ps;
  const end = b.free_time_ps ?? windowEnd;
  // Allocated before the window: at least as long as it was seen.
  if (start === null) return `≥ ${formatPs(end - windowStart)}`;
  const text = formatPs(end - start);
  return b.free_time_ps === null ? `≥ ${text}` : text;
}
