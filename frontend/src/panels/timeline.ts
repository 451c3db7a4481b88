// Memory timeline: the stack reservation as a band of its own with the heap
// in use above it, bytes held by never-freed buffers and fragmentation, with
// steps as bands, and the selected op family's live bytes (the server's
// family_bytes: what its buffers that outlive a step hold, freed ones
// subtracted, so a regrown buffer is followed as it grows). Dragging zooms; the server downsamples each range
// again (keeping every bucket's min and max, so the peak stays) and the chart
// draws the points it is given, as steps: memory changes at events, it does
// not ramp between them. The x axis spans the server's window (the lifetimes
// chart spans the same); hovering shows the event under the cursor. The chart
// takes the keyboard's focus: the arrow keys move the cursor from sample to
// sample (Shift: ten at a time), Home and End to the first and last, and the
// tooltip says what the pointer's would.

import uPlot from 'uplot';
import type {Limits, ProcessMemory, Selection, TimelineAnswer} from '../api';
import {axisStyle, type Box, byteAxis, chartWidth, clipped, cssBox, overlaps, paintPeak, type PeakMarker, peakMarker, STEP_LABEL_ROW, SizedPlot, steppedPath, takeSelection, Tooltip} from '../chart';
import type {DataCache} from '../data';
import {clear, cssVar, el, errorMessage, notice} from '../dom';
import {allocationIncrs, axisLabel, countOf, formatBytes, formatBytesDelta, formatFraction, formatStep, formatStepIn, formatWhen, type HostClock, whenTicks} from '../format';
import {OwningPanel, STALE} from '../panel';
import {processSeries} from './process_memory';

export interface TimeRange {
  start_ps: number;
  end_ps: number;
}

const HEIGHT = 280;

export interface TimelineOptions {
  cache: Pick<DataCache, 'timeline'>;
  sel: Selection;
  limits: Limits;
  clock: HostClock;
  /** The range zoomed to (dragged, or reset: null), told to the buffer lifetimes. */
  onRange(range: TimeRange | null): void;
  /** The window both charts span, once the first answer came. */
  onWindow?(window: TimeRange): void;
  /** The capture helper's recording of the process's memory, drawn beside the heap when there is one. */
  process?: ProcessMemory;
}

export class TimelinePanel extends OwningPanel {
  readonly element: HTMLElement;
  private readonly chartBox: HTMLElement;
  private readonly note: HTMLElement;
  private readonly resetButton: HTMLButtonElement;
  private readonly chart: SizedPlot;
  private readonly tooltip: Tooltip;
  private data: TimelineAnswer | null = null;
  /** The window both charts span (the server's), once the first answer came. */
  window: TimeRange | null = null;
  private range: TimeRange | null = null;
  /** The selected op family (its index in `families`), drawn as a series of its own. */
  private family: number | null = null;
  /** When the selected family's never-freed buffers were allocated: a tick at each. */
  private marks: number[] = [];
  /** The allocator reserves a stack: drawn as a band of its own, the heap above it. */
  private hasStack = false;
  private readonly request = this.owned.latest();
  private readonly sel: Selection;
  private readonly limits: Limits;
  private readonly clock: HostClock;
  private readonly process: ProcessMemory | undefined;
  /** The sample the keyboard's cursor is on (null: the pointer's, or none). */
  private keyed: number | null = null;

  constructor(private readonly options: TimelineOptions) {
    super();
    const {clock} = options;
    ({sel: this.sel, limits: this.limits, clock: this.clock, process: this.process} = options);
    this.chartBox = el('div', {
      class: 'lf-chart',
      'data-chart': 'timeline',
      'data-clock': clock.eventPs ? 'allocations' : 'time',
      role: 'group',
      'aria-roledescription': 'chart',
      tabindex: '0',
      'aria-label': `Memory timeline: stack reserved, heap in use above it, bytes held by never-freed buffers, fragmentation and the selected op family’s live bytes over ${clock.eventPs ? 'the allocations, in their order' : 'time'}, steps as bands. The arrow keys move a cursor from event to event (Shift: ten at a time); Home and End go to the first and last.`,
    });
    this.chartBox.addEventListener('keydown', (e) => this.onKey(e));
    // Focused from the keyboard, the cursor shows where it was left (the first sample at first); from a click, the pointer leads.
    this.chartBox.addEventListener('focus', () => {
      if (this.chartBox.matches(':focus-visible')) this.moveCursor(this.keyed ?? 0);
    });
    this.chartBox.addEventListener('blur', () => this.leaveCursor());
    // The pointer takes the cursor back (in the capture phase: before uPlot reads the move).
    this.chartBox.addEventListener('mousemove', () => (this.keyed = null), true);
    this.chart = this.owned.own(new SizedPlot(this.chartBox, HEIGHT));
    this.tooltip = new Tooltip(this.chartBox);
    this.note = el('div', {class: 'lf-chart-note', role: 'status'});
    this.resetButton = el('button', {type: 'button', disabled: true}, 'Reset zoom');
    this.resetButton.addEventListener('click', () => this.setRange(null, true));
    this.element = el(
      'div',
      {},
      el('div', {class: 'lf-table-tools'}, el('span', {class: 'lf-muted'}, 'Drag across the chart to zoom; double-click or'), this.resetButton),
      this.chartBox,
      this.note,
    );
  }

  /** Loads the whole window; call once the element is in the page. */
  mount(): void {
    void this.setRange(null);
  }

  /** Redraws with the current theme's colours. */
  update(): void {
    this.draw();
  }

  /** Loads the timeline of `range` (or the whole window). */
  async setRange(range: TimeRange | null, notify = false): Promise<void> {
    this.range = range;
    this.resetButton.disabled = range === null;
    if (notify) this.options.onRange(range);
    if (!this.chart.plot) this.chartBox.replaceChildren(notice('loading', 'Loading the memory timeline…'));
    // About two points per pixel, as many as the server gives.
    const points = Math.min(this.limits.max_points, chartWidth(this.chartBox) * 2);
    try {
      const data = await this.request.run((signal) => this.options.cache.timeline(this.sel, points, range, this.family, signal));
      if (data === STALE) return;
      this.data = data;
      if (!this.window) {
        this.window = {start_ps: data.window_start_ps, end_ps: data.window_end_ps};
        this.chartBox.dataset.window = `${data.window_start_ps},${data.window_end_ps}`;
        this.options.onWindow?.(this.window);
      }
      this.draw();
    } catch (err) {
      this.chart.destroy();
      this.chartBox.replaceChildren(notice('error', `Could not load the timeline: ${errorMessage(err)}`));
    }
  }

  /** Shows an op family's live bytes over time (null: none), in the range shown. */
  setFamily(family: number | null): Promise<void> {
    this.family = family;
    return this.setRange(this.range);
  }

  /** Ticks at the allocations of the selected family's never-freed buffers. */
  setMarks(times: number[]): void {
    this.marks = times;
    this.chartBox.dataset.marks = String(times.length);
    this.chart.plot?.redraw(false, false);
  }

  /** Series: [stack reserved, stack + heap (the heap's band above the stack) | heap], never freed, fragmentation, the selected family. */
  private aligned(data: TimelineAnswer): uPlot.AlignedData {
    const held = data.family_bytes ?? data.time_ps.map(() => null);
    const rest = [data.never_freed_bytes, data.fragmentation, held, ...processSeries(this.process, data.time_ps).columns];
    if (!this.hasStack) return [data.time_ps, data.heap_bytes, ...rest];
    const inUse = data.heap_bytes.map((h, i) => h + (data.stack_bytes[i] ?? 0));
    return [data.time_ps, data.stack_bytes, inUse, ...rest];
  }

  /** Rebuilds the chart, e.g. after a theme change. */
  private draw(): void {
    const data = this.data;
    if (!data) return;
    this.chart.destroy();
    clear(this.chartBox);
    // The samples are new: the keyboard's cursor starts again from the first.
    this.keyed = null;
    if (!data.time_ps.length) {
      this.chartBox.appendChild(notice('empty', 'No memory events in this time range.'));
      return;
    }
    const axes = axisStyle();
    const heap = cssVar('--lf-heap');
    const leak = cssVar('--lf-leak');
    const stack = data.stack_bytes.reduce((m, v) => Math.max(m, v), 0);
    this.hasStack = stack > 0;
    const heapOnly = (_u: uPlot, _v: number | null, _si: number, idx: number | null) => (idx === null ? '—' : formatBytes(data.heap_bytes[idx]));
    // Memory changes at events and holds between them: every byte series is drawn as steps.
    const paths = steppedPath();
    const heapSeries: uPlot.Series = {label: 'heap in use', scale: 'bytes', stroke: heap, fill: cssVar('--lf-heap-fill'), width: 1.5, value: heapOnly, paths};
    const stackSeries: uPlot.Series = {label: 'stack reserved', scale: 'bytes', stroke: cssVar('--lf-stack'), fill: cssVar('--lf-stack-fill'), width: 1.5, value: (_u, v) => formatBytes(v), paths};
    // With a stack, the heap's line is stack + heap; its legend still reads the heap alone.
    const inUse = this.hasStack ? [stackSeries, {...heapSeries, label: 'heap in use (above the stack)'}] : [heapSeries];
    const opts: Omit<uPlot.Options, 'width' | 'height'> = {
      // The legend and the tooltip read the sample at or before the cursor: memory holds its value until the next event.
      cursor: {drag: {x: true, y: false, setScale: false}, points: {size: 6}, dataIdx: (_u, _si, closest, x) => (data.time_ps.length ? Math.max(0, lastAtOrBefore(data.time_ps, x)) : closest)},
      // Headroom above the highest point for the row of step labels, so that the peak's dot sits below it.
      // x spans the window (or the zoomed range), not merely the samples: the lifetimes chart spans the same.
      scales: {x: {time: false, range: (_u, min, max) => this.xRange(min, max)}, bytes: {range: (u, _min, max) => [0, Math.max(1, max) * headroom(u, data.steps.length > 0)]}, frac: {range: [0, 1]}},
      // The heap fills from the top of the stack, not from zero.
      bands: this.hasStack ? [{series: [2, 1], fill: cssVar('--lf-heap-fill')}] : [],
      axes: [
        {...axes, values: (_u, v) => whenTicks(v, this.clock), incrs: allocationIncrs(this.clock), size: this.clock.eventPs ? 50 : 36, label: this.clock.eventPs ? axisLabel(this.clock) : undefined},
        byteAxis('bytes'),
        {...axes, scale: 'frac', side: 1, grid: {show: false}, values: (_u, v) => v.map((x) => formatFraction(x)), size: 50},
      ],
      series: [
        {label: this.clock.eventPs ? 'allocation' : 'time', value: (_u, v) => formatWhen(v, this.clock)},
        ...inUse,
        {label: 'never freed', scale: 'bytes', stroke: leak, fill: cssVar('--lf-leak-fill'), width: 1.5, value: (_u, v) => formatBytes(v), paths},
        {label: 'fragmentation', scale: 'frac', stroke: cssVar('--lf-frag'), width: 1, dash: [4, 3], value: (_u, v) => formatFraction(v), paths},
        {label: 'selected family (live bytes)', scale: 'bytes', stroke: cssVar('--lf-highlight'), width: 2.5, value: (_u, v) => (v === null ? '—' : formatBytes(v)), paths},
        ...processSeries(this.process, data.time_ps).series,
      ],
      hooks: {
        drawClear: [(u) => this.drawSteps(u)],
        draw: [(u) => this.drawMarks(u)],
        setSelect: [(u) => this.onSelect(u)],
        setCursor: [(u) => this.hover(u)],
      },
    };
    const plot = this.chart.create(opts, this.aligned(data), () => this.setRange(null, true));
    plot.over.addEventListener('mouseleave', () => this.tooltip.hide());
    this.chartBox.append(this.tooltip.element);
    const shown = data.time_ps.length;
    this.chartBox.dataset.stack = String(stack);
    this.note.textContent =
      `${countOf(data.total_events, 'memory event')}, drawn as ${countOf(shown, 'point')} (each bucket keeps its first, last, minimum and maximum; memory holds its value from one event to the next). ` +
      `Peak ${formatBytes(data.peak.bytes)} at ${formatWhen(data.peak.time_ps, this.clock)}` +
      (data.peak.step === null ? '.' : `, ${formatStepIn(data.peak.step, this.clock)}.`);
  }

  /** The x range drawn: the zoomed range, else the window; the samples' own range before the window is known. */
  private xRange(min: number, max: number): uPlot.Range.MinMax {
    const shown = this.range ?? this.window;
    if (shown && shown.end_ps > shown.start_ps) return [shown.start_ps, shown.end_ps];
    return max > min ? [min, max] : [min, min + 1];
  }

  /** The tooltip: the memory at the cursor's time (held since the last sample at or before it) and that sample's event. */
  private hover(u: uPlot): void {
    const data = this.data;
    const {left, top} = u.cursor;
    if (!data || !data.time_ps.length || left === undefined || top === undefined || left < 0) {
      this.tooltip.hide();
      return;
    }
    const keyed = this.keyed !== null && this.keyed < data.time_ps.length ? this.keyed : null;
    const at = keyed === null ? u.posToVal(left, 'x') : data.time_ps[keyed];
    const idx = keyed ?? Math.max(0, lastAtOrBefore(data.time_ps, at));
    const t = data.time_ps[idx];
    const step = data.steps.find((s) => s.start_ps <= at && at <= s.end_ps);
    const bytes = data.event_bytes[idx] ?? 0;
    const where = data.event_where[idx];
    const rows: [string, string][] = [
      [this.clock.steps ? 'step' : 'window', step ? (this.clock.steps ? formatStep(step.step) : `window ${step.step}`) : '—'],
      ['heap in use', formatBytes(data.heap_bytes[idx])],
      ...(this.hasStack ? [['stack reserved', formatBytes(data.stack_bytes[idx])] as [string, string]] : []),
      ['never freed', formatBytes(data.never_freed_bytes[idx])],
      [`event at ${formatWhen(t, this.clock)}`, `${formatBytesDelta(bytes)} ${bytes >= 0 ? 'allocated' : 'freed'}`],
      ['op', data.event_op[idx] || '(not recorded)'],
      ...(where ? [['line', where] as [string, string]] : []),
    ];
    this.chartBox.dataset.hover = String(idx);
    this.tooltip.show(left + u.over.offsetLeft, top + u.over.offsetTop, rows, `At ${formatWhen(at, this.clock)}`);
  }

  /** The arrow keys, Home and End move the cursor through the samples; Escape hides it. */
  private onKey(event: KeyboardEvent): void {
    const n = this.data?.time_ps.length ?? 0;
    if (!n || !this.chart.plot) return;
    const by = event.shiftKey ? 10 : 1;
    const at = this.keyed;
    let next: number;
    if (event.key === 'ArrowRight') next = at === null ? 0 : at + by;
    else if (event.key === 'ArrowLeft') next = at === null ? n - 1 : at - by;
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = n - 1;
    else if (event.key === 'Escape') return this.leaveCursor();
    else return;
    event.preventDefault();
    this.moveCursor(Math.min(n - 1, Math.max(0, next)));
  }

  /** Puts the cursor on sample `idx`, at the heap's line; the setCursor hook fills the tooltip. */
  private moveCursor(idx: number): void {
    const u = this.chart.plot;
    const data = this.data;
    if (!u || !data || idx >= data.time_ps.length) return;
    this.keyed = idx;
    const inUse = data.heap_bytes[idx] + (this.hasStack ? (data.stack_bytes[idx] ?? 0) : 0);
    const left = Math.min(u.over.clientWidth - 1, Math.max(0, u.valToPos(data.time_ps[idx], 'x')));
    u.setCursor({left, top: Math.max(0, u.valToPos(inUse, 'bytes'))});
  }

  private leaveCursor(): void {
    this.keyed = null;
    this.tooltip.hide();
    this.chart.plot?.setCursor({left: -10, top: -10});
  }

  private onSelect(u: uPlot): void {
    const range = takeSelection(u);
    if (range) void this.setRange({start_ps: Math.max(0, range[0]), end_ps: range[1]}, true);
  }

  private drawSteps(u: uPlot): void {
    clipped(u, (ctx, box) => this.paintSteps(u, ctx, box));
  }

  /** The peak's marker on this chart, and its text. */
  private peak(u: uPlot, ctx: CanvasRenderingContext2D): {marker: PeakMarker | null; text: string} {
    const peak = this.data?.peak ?? {time_ps: null, bytes: 0};
    const text = `peak ${formatBytes(peak.bytes)}`;
    return {marker: peakMarker(u, ctx, peak, 'bytes', text), text};
  }

  /** Step bands, and each step's label where it fits and clears the peak's marker (the marker wins). */
  private paintSteps(u: uPlot, ctx: CanvasRenderingContext2D, {left, top, width, height}: uPlot.BBox): void {
    const steps = this.data?.steps ?? [];
    const labels = cssVar('--lf-muted');
    const dpr = devicePixelRatio;
    const {marker} = this.peak(u, ctx);
    const taken: Box[] = marker ? [marker.dot, marker.plate] : [];
    const drawn: Box[] = [];
    ctx.font = `${Math.round(10 * dpr)}px sans-serif`;
    steps.forEach((step, i) => {
      const x0 = u.valToPos(step.start_ps, 'x', true);
      const x1 = u.valToPos(step.end_ps, 'x', true);
      if (x1 < left || x0 > left + width) return;
      if (i % 2 === 0) {
        ctx.fillStyle = cssVar('--lf-step-band');
        ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
      }
      const text = `${this.clock.steps ? 'step' : 'window'} ${step.step}`;
      const tw = ctx.measureText(text).width;
      // The label goes in the visible part of its band: a step begun before the range shown is labelled at its left.
      const from = Math.max(x0, left);
      const to = Math.min(x1, left + width);
      const box = {x0: from + 3 * dpr, y0: top + 2 * dpr, x1: from + 3 * dpr + tw, y1: top + (STEP_LABEL_ROW - 2) * dpr};
      if (to - from > tw + 6 * dpr && !taken.some((t) => overlaps(t, box)) && !drawn.some((d) => overlaps(d, box))) {
        ctx.fillStyle = labels;
        ctx.fillText(text, box.x0, top + 12 * dpr);
        drawn.push(box);
      }
    });
    // What was drawn where, for the browser tests: the step labels and the peak's dot and plate.
    this.chartBox.dataset.stepLabels = JSON.stringify(drawn.map(cssBox));
    this.chartBox.dataset.peakMarker = JSON.stringify(taken.map(cssBox));
  }

  private drawMarks(u: uPlot): void {
    clipped(u, (ctx, box) => this.paintMarks(u, ctx, box));
    // The x range drawn, for the browser tests.
    this.chartBox.dataset.xRange = `${u.scales.x.min},${u.scales.x.max}`;
  }

  private paintMarks(u: uPlot, ctx: CanvasRenderingContext2D, {top, height}: uPlot.BBox): void {
    const data = this.data;
    if (!data) return;
    if (this.marks.length) {
      ctx.strokeStyle = cssVar('--lf-highlight');
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.beginPath();
      for (const t of this.marks) {
        const x = Math.round(u.valToPos(t, 'x', true));
        ctx.moveTo(x, top + height);
        ctx.lineTo(x, top + height - 14 * devicePixelRatio);
      }
      ctx.stroke();
    }
    const {marker, text} = this.peak(u, ctx);
    paintPeak(ctx, marker, text, cssVar('--lf-leak'));
  }
}

/** The index of the last time at or before `t` in sorted `times`; -1 when all are later. */
function lastAtOrBefore(times: number[], t: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** How far above the highest point the byte scale reaches: 5%, or more when steps label the top row. */
function headroom(u: uPlot, stepLabels: boolean): number {
  const height = u.bbox?.height ? u.bbox.height / devicePixelRatio : 0;
  if (!stepLabels || height <= 4 * STEP_LABEL_ROW) return 1.05;
  // The highest point's dot (radius 4) sits a little below the labels' row.
  return Math.max(1.05, height / (height - STEP_LABEL_ROW - 6));
}
