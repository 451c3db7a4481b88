// Memory timeline: the stack reservation as a band of its own with the heap
// in use above it, bytes held by never-freed buffers and fragmentation, with
// steps as bands, and the selected op family's live bytes (the server's
// family_bytes: what its buffers that outlive a step hold, freed ones
// subtracted, so a regrown buffer is followed as it grows). Dragging zooms; the server downsamples each range
// again (keeping every bucket's min and max, so the peak stays) and the chart
// draws the points it is given.

import uPlot from 'uplot';
import type {Limits, ProcessMemory, Selection, TimelineAnswer} from '../api';
import {axisStyle, type Box, byteAxis, chartWidth, clipped, cssBox, overlaps, paintPeak, type PeakMarker, peakMarker, STEP_LABEL_ROW, SizedPlot, takeSelection} from '../chart';
import type {DataCache} from '../data';
import {clear, cssVar, el, errorMessage, isAbort, notice} from '../dom';
import {formatBytes, formatCount, formatFraction, formatStepIn, formatWhen, type HostClock, whenTicks} from '../format';
import {processSeries} from './process_memory';

export interface TimeRange {
  start_ps: number;
  end_ps: number;
}

const HEIGHT = 280;

export class TimelinePanel {
  readonly element: HTMLElement;
  private readonly chartBox: HTMLElement;
  private readonly note: HTMLElement;
  private readonly resetButton: HTMLButtonElement;
  private readonly chart: SizedPlot;
  private data: TimelineAnswer | null = null;
  private range: TimeRange | null = null;
  /** The selected op family (its index in `families`), drawn as a series of its own. */
  private family: number | null = null;
  /** When the selected family's never-freed buffers were allocated: a tick at each. */
  private marks: number[] = [];
  /** The allocator reserves a stack: drawn as a band of its own, the heap above it. */
  private hasStack = false;
  private controller: AbortController | null = null;

  constructor(
    private readonly cache: Pick<DataCache, 'timeline'>,
    private readonly sel: Selection,
    private readonly limits: Limits,
    private readonly onRange: (range: TimeRange | null) => void,
    private readonly clock: HostClock,
    /** The capture helper's recording of the process's memory, drawn beside the heap when there is one. */
    private readonly process?: ProcessMemory,
  ) {
    this.chartBox = el('div', {
      class: 'lf-chart',
      'data-chart': 'timeline',
      'data-clock': clock.eventPs ? 'events' : 'time',
      role: 'img',
      'aria-label': 'Memory timeline: stack reserved, heap in use above it, bytes held by never-freed buffers, fragmentation and the selected op family’s live bytes over time, steps as bands',
    });
    this.chart = new SizedPlot(this.chartBox, HEIGHT);
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

  /** Loads the timeline of `range` (or the whole window). */
  async setRange(range: TimeRange | null, notify = false): Promise<void> {
    this.range = range;
    this.resetButton.disabled = range === null;
    if (notify) this.onRange(range);
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    if (!this.chart.plot) this.chartBox.replaceChildren(notice('loading', 'Loading the memory timeline…'));
    // About two points per pixel, as many as the server gives.
    const points = Math.min(this.limits.max_points, chartWidth(this.chartBox) * 2);
    try {
      const data = await this.cache.timeline(this.sel, points, range, this.family, controller.signal);
      if (controller.signal.aborted) return;
      this.data = data;
      this.draw();
    } catch (err) {
      if (isAbort(err) || controller.signal.aborted) return;
      this.destroyPlot();
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
  draw(): void {
    const data = this.data;
    if (!data) return;
    this.destroyPlot();
    clear(this.chartBox);
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
    const heapSeries: uPlot.Series = {label: 'heap in use', scale: 'bytes', stroke: heap, fill: cssVar('--lf-heap-fill'), width: 1.5, value: heapOnly};
    const stackSeries: uPlot.Series = {label: 'stack reserved', scale: 'bytes', stroke: cssVar('--lf-stack'), fill: cssVar('--lf-stack-fill'), width: 1.5, value: (_u, v) => formatBytes(v)};
    // With a stack, the heap's line is stack + heap; its legend still reads the heap alone.
    const inUse = this.hasStack ? [stackSeries, {...heapSeries, label: 'heap in use (above the stack)'}] : [heapSeries];
    const opts: Omit<uPlot.Options, 'width' | 'height'> = {
      cursor: {drag: {x: true, y: false, setScale: false}, points: {size: 6}},
      // Headroom above the highest point for the row of step labels, so that the peak's dot sits below it.
      scales: {x: {time: false}, bytes: {range: (u, _min, max) => [0, Math.max(1, max) * headroom(u, data.steps.length > 0)]}, frac: {range: [0, 1]}},
      // The heap fills from the top of the stack, not from zero.
      bands: this.hasStack ? [{series: [2, 1], fill: cssVar('--lf-heap-fill')}] : [],
      axes: [
        {...axes, values: (_u, v) => whenTicks(v, this.clock), size: 36, label: this.clock.eventPs ? 'event # (the snapshot records no times)' : undefined},
        byteAxis('bytes'),
        {...axes, scale: 'frac', side: 1, grid: {show: false}, values: (_u, v) => v.map((x) => formatFraction(x)), size: 50},
      ],
      series: [
        {label: this.clock.eventPs ? 'event' : 'time', value: (_u, v) => formatWhen(v, this.clock)},
        ...inUse,
        {label: 'never freed', scale: 'bytes', stroke: leak, fill: cssVar('--lf-leak-fill'), width: 1.5, value: (_u, v) => formatBytes(v)},
        {label: 'fragmentation', scale: 'frac', stroke: cssVar('--lf-frag'), width: 1, dash: [4, 3], value: (_u, v) => formatFraction(v)},
        {label: 'selected family (live bytes)', scale: 'bytes', stroke: cssVar('--lf-highlight'), width: 2.5, value: (_u, v) => (v === null ? '—' : formatBytes(v))},
        ...processSeries(this.process, data.time_ps).series,
      ],
      hooks: {
        drawClear: [(u) => this.drawSteps(u)],
        draw: [(u) => this.drawMarks(u)],
        setSelect: [(u) => this.onSelect(u)],
      },
    };
    this.chart.create(opts, this.aligned(data), () => this.setRange(null, true));
    const shown = data.time_ps.length;
    this.chartBox.dataset.stack = String(stack);
    this.note.textContent =
      `${formatCount(data.total_events)} memory events, drawn as ${formatCount(shown)} points (each bucket keeps its first, last, minimum and maximum). ` +
      `Peak ${formatBytes(data.peak.bytes)} at ${formatWhen(data.peak.time_ps, this.clock)}` +
      (data.peak.step === null ? '.' : `, ${formatStepIn(data.peak.step, this.clock)}.`);
  }

  destroy(): void {
    this.controller?.abort();
    this.destroyPlot();
  }

  private destroyPlot(): void {
    this.chart.destroy();
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
      const box = {x0: x0 + 3 * dpr, y0: top + 2 * dpr, x1: x0 + 3 * dpr + tw, y1: top + (STEP_LABEL_ROW - 2) * dpr};
      if (x1 - x0 > tw + 6 * dpr && !taken.some((t) => overlaps(t, box))) {
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

/** How far above the highest point the byte scale reaches: 5%, or more when steps label the top row. */
function headroom(u: uPlot, stepLabels: boolean): number {
  const height = u.bbox?.height ? u.bbox.height / devicePixelRatio : 0;
  if (!stepLabels || height <= 4 * STEP_LABEL_ROW) return 1.05;
  // The highest point's dot (radius 4) sits a little below the labels' row.
  return Math.max(1.05, height / (height - STEP_LABEL_ROW - 6));
}
