// Both runs' memory timelines on one uPlot chart: the same byte scale, and x
// as the time from each window's start, over the longer of the two windows.
// Each side's heap in use (solid) and bytes never freed (dashed, filled).

import uPlot from 'uplot';
import type {Limits, Selection, TimelineAnswer} from '../api';
import {axisStyle, byteAxis, chartWidth, clipped, paintPeak, peakMarker, SizedPlot, steppedPath, takeSelection} from '../chart';
import type {DataCache} from '../data';
import {clear, cssVar, el, errorMessage, isAbort, notice} from '../dom';
import {formatBytes, formatCount, formatPs, timeTicks} from '../format';

const HEIGHT = 300;

export type Side = 'a' | 'b';
export type SideSelection = Pick<Selection, 'run' | 'host' | 'allocator'>;

/** The last value at or before `idx` that is not null: a joined series holds nulls where the other run has a point. */
function heldValue(data: (number | null | undefined)[], idx: number): number | null {
  for (let i = idx; i >= 0; i--) {
    const v = data[i];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

export class CompareTimeline {
  readonly element: HTMLElement;
  private readonly chartBox: HTMLElement;
  private readonly note: HTMLElement;
  private readonly chart: SizedPlot;
  private controller: AbortController | null = null;
  private data: Partial<Record<Side, TimelineAnswer>> = {};
  private errors: Partial<Record<Side, string>> = {};
  private zoom: [number, number] | null = null;

  /** A side is null when that run has no allocator to draw. */
  constructor(
    private readonly cache: Pick<DataCache, 'timeline'>,
    private readonly sides: Record<Side, SideSelection | null>,
    private readonly limits: Limits,
  ) {
    this.chartBox = el('div', {
      class: 'lf-chart',
      'data-chart': 'compare-timeline',
      role: 'img',
      'aria-label': 'Memory timelines of runs A and B on the same axes: heap in use and bytes never freed, over the time from each window start',
    });
    this.chart = new SizedPlot(this.chartBox, HEIGHT);
    this.note = el('div', {class: 'lf-chart-note', role: 'status'});
    this.element = el(
      'div',
      {},
      el('p', {class: 'lf-muted'}, 'Both runs on the same axes, each from the start of its own profile window. Drag to zoom; double-click to see everything.'),
      this.chartBox,
      this.note,
    );
  }

  async load(): Promise<void> {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.data = {};
    this.errors = {};
    this.chartBox.replaceChildren(notice('loading', 'Loading both timelines…'));
    // About two points per pixel, as many as the server gives.
    const points = Math.min(this.limits.max_points, chartWidth(this.chartBox) * 2);
    const fetchSide = async (side: Side) => {
      const sel = this.sides[side];
      if (!sel) return;
      try {
        this.data[side] = await this.cache.timeline(sel, points, null, null, controller.signal);
      } catch (err) {
        if (!isAbort(err)) this.errors[side] = errorMessage(err);
      }
    };
    await Promise.all([fetchSide('a'), fetchSide('b')]);
    if (controller.signal.aborted) return;
    this.draw();
  }

  /** The time up to which both windows are drawn: the later last event or step end. */
  private end(): number {
    let end = 1;
    for (const t of Object.values(this.data)) {
      end = Math.max(end, t.time_ps[t.time_ps.length - 1] ?? 0, ...t.steps.map((s) => s.end_ps));
    }
    return end;
  }

  /** Builds the chart from the loaded timelines (again after a theme change). */
  draw(): void {
    this.chart.destroy();
    clear(this.chartBox);
    const {a, b} = this.data;
    const messages = (['a', 'b'] as const).flatMap((side) => {
      const name = side.toUpperCase();
      if (this.errors[side]) return [notice('error', `Could not load the timeline of ${name}: ${this.errors[side]}`)];
      if (!this.sides[side]) return [notice('empty', `${name} has no memory events: its line is left out.`)];
      return [];
    });
    this.chartBox.append(...messages);
    if (!a && !b) return;
    const empty: uPlot.AlignedData = [[], [], []];
    const table = (t: TimelineAnswer | undefined): uPlot.AlignedData => (t ? [t.time_ps, t.heap_bytes, t.never_freed_bytes] : empty);
    const joined = uPlot.join([table(a), table(b)]);
    const axes = axisStyle();
    const colorA = cssVar('--lf-run-a');
    const colorB = cssVar('--lf-run-b');
    const value = (_u: uPlot, v: number | null, si: number, idx: number | null) => {
      if (v !== null) return formatBytes(v);
      const held = idx === null ? null : heldValue(joined[si] as (number | null)[], idx);
      return held === null ? '—' : formatBytes(held);
    };
    const series = (label: string, stroke: string, dashed: boolean, fill?: string): uPlot.Series => ({
      label,
      scale: 'bytes',
      stroke,
      fill,
      width: dashed ? 1.5 : 2,
      dash: dashed ? [6, 4] : undefined,
      spanGaps: true,
      value,
      // Memory holds its value from one event to the next.
      paths: steppedPath(),
    });
    const opts: Omit<uPlot.Options, 'width' | 'height'> = {
      cursor: {drag: {x: true, y: false, setScale: false}, points: {size: 6}},
      scales: {
        x: {time: false, range: () => this.zoom ?? [0, this.end()]},
        bytes: {range: (_u, _min, max) => [0, Math.max(1, max) * 1.08]},
      },
      axes: [
        {...axes, label: 'time from the window start', values: (_u, v) => timeTicks(v), size: 50},
        byteAxis('bytes'),
      ],
      series: [
        {label: 'time', value: (_u, v) => formatPs(v)},
        series('A heap in use', colorA, false),
        series('A never freed', colorA, true, cssVar('--lf-run-a-fill')),
        series('B heap in use', colorB, false),
        series('B never freed', colorB, true, cssVar('--lf-run-b-fill')),
      ],
      hooks: {
        draw: [(u) => this.paintPeaks(u)],
        setSelect: [(u) => this.onSelect(u)],
      },
    };
    // uPlot.join lays out the series as [x, A heap, A never freed, B heap, B never freed].
    this.chart.create(opts, joined, () => this.setZoom(null));
    this.chartBox.dataset.drawn = [a ? 'a' : '', b ? 'b' : ''].join('');
    const describe = (name: string, t: TimelineAnswer | undefined) =>
      t
        ? `${name}: ${formatCount(t.total_events)} memory events (${formatCount(t.time_ps.length)} points), peak ${formatBytes(t.peak.bytes)} at ${formatPs(t.peak.time_ps)}.`
        : '';
    this.note.textContent = [describe('A', a), describe('B', b)].filter(Boolean).join(' ');
  }

  destroy(): void {
    this.controller?.abort();
    this.chart.destroy();
  }

  private setZoom(range: [number, number] | null): void {
    this.zoom = range;
    const [min, max] = range ?? [0, this.end()];
    this.chart.plot?.setScale('x', {min, max});
  }

  private onSelect(u: uPlot): void {
    const range = takeSelection(u);
    if (range) this.setZoom(range);
  }

  private paintPeaks(u: uPlot): void {
    clipped(u, (ctx) => {
      for (const side of ['a', 'b'] as const) {
        const t = this.data[side];
        if (!t) continue;
        const text = `peak ${side.toUpperCase()} ${formatBytes(t.peak.bytes)}`;
        paintPeak(ctx, peakMarker(u, ctx, t.peak, 'bytes', text), text, cssVar(`--lf-run-${side}`));
      }
    });
  }
}
