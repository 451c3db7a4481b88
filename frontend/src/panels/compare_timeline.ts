// Both runs' memory timelines on one uPlot chart: the same byte scale, and x
// as the time from each window's start, over the longer of the two windows.
// Each side's heap in use and bytes never freed (filled). A and B differ in
// their lines' dashes as well as their colours, so that they are told apart
// without colour; the legend draws each line's own dash.

import uPlot from 'uplot';
import type {Limits, Selection, TimelineAnswer} from '../api';
import {axisStyle, byteAxis, chartWidth, clipped, paintPeak, peakMarker, SizedPlot, steppedPath, takeSelection} from '../chart';
import type {DataCache} from '../data';
import {clear, cssVar, el, errorMessage, notice} from '../dom';
import {countOf, formatBytes, formatPs, timeTicks} from '../format';
import {OwningPanel, STALE} from '../panel';

const HEIGHT = 300;

/** Each line's dash (empty: solid) and width: A's lines solid and dashed, B's dotted and dash-dotted. */
export const LINES = {
  'A heap in use': {dash: [] as number[], width: 2},
  'A never freed': {dash: [6, 4], width: 1.5},
  'B heap in use': {dash: [2, 3], width: 2.5},
  'B never freed': {dash: [10, 3, 2, 3], width: 1.5},
} as const;
type Line = keyof typeof LINES;

/** A legend marker drawn as the line uPlot draws: its colour in its dash pattern (a CSS gradient), its width. */
function lineMarker(marker: HTMLElement, color: string, dash: readonly number[], width: number): void {
  let at = 0;
  const stops: string[] = [];
  dash.forEach((length, i) => {
    stops.push(`${i % 2 ? 'transparent' : color} ${at}px ${at + length}px`);
    at += length;
  });
  marker.style.border = 'none';
  marker.style.height = `${Math.max(2, Math.round(width))}px`;
  marker.style.width = '24px';
  marker.style.verticalAlign = 'middle';
  marker.style.background = dash.length ? `repeating-linear-gradient(to right, ${stops.join(', ')})` : color;
  marker.dataset.dash = dash.join(',') || 'solid';
}

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

export interface CompareTimelineOptions {
  cache: Pick<DataCache, 'timeline'>;
  /** A side is null when that run has no allocator to draw. */
  sides: Record<Side, SideSelection | null>;
  limits: Limits;
}

export class CompareTimeline extends OwningPanel {
  readonly element: HTMLElement;
  private readonly chartBox: HTMLElement;
  private readonly note: HTMLElement;
  private readonly chart: SizedPlot;
  private readonly request = this.owned.latest();
  private data: Partial<Record<Side, TimelineAnswer>> = {};
  private errors: Partial<Record<Side, string>> = {};
  private zoom: [number, number] | null = null;

  constructor(private readonly options: CompareTimelineOptions) {
    super();
    this.chartBox = el('div', {
      class: 'lf-chart',
      'data-chart': 'compare-timeline',
      role: 'img',
      'aria-label': 'Memory timelines of runs A and B on the same axes: heap in use and bytes never freed, over the time from each window start',
    });
    this.chart = this.owned.own(new SizedPlot(this.chartBox, HEIGHT));
    this.note = el('div', {class: 'lf-chart-note', role: 'status'});
    this.element = el(
      'div',
      {},
      el('p', {class: 'lf-muted'}, 'Both runs on the same axes, each from the start of its own profile window. Drag to zoom; double-click to see everything.'),
      this.chartBox,
      this.note,
    );
  }

  mount(): void {
    void this.load();
  }

  /** Redraws with the current theme's colours. */
  update(): void {
    this.draw();
  }

  private async load(): Promise<void> {
    this.data = {};
    this.errors = {};
    this.chartBox.replaceChildren(notice('loading', 'Loading both timelines…'));
    const {cache, sides, limits} = this.options;
    // About two points per pixel, as many as the server gives.
    const points = Math.min(limits.max_points, chartWidth(this.chartBox) * 2);
    const answers = await this.request.run(async (signal) => {
      const data: Partial<Record<Side, TimelineAnswer>> = {};
      const errors: Partial<Record<Side, string>> = {};
      const fetchSide = async (side: Side) => {
        const sel = sides[side];
        if (!sel) return;
        try {
          data[side] = await cache.timeline(sel, points, null, null, signal);
        } catch (err) {
          // One side's error is said beside the other side's timeline.
          errors[side] = errorMessage(err);
        }
      };
      await Promise.all([fetchSide('a'), fetchSide('b')]);
      return {data, errors};
    });
    if (answers === STALE) return;
    ({data: this.data, errors: this.errors} = answers);
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
  private draw(): void {
    this.chart.destroy();
    clear(this.chartBox);
    const {a, b} = this.data;
    const messages = (['a', 'b'] as const).flatMap((side) => {
      const name = side.toUpperCase();
      if (this.errors[side]) return [notice('error', `Could not load the timeline of ${name}: ${this.errors[side]}`)];
      if (!this.options.sides[side]) return [notice('empty', `${name} has no memory events: its line is left out.`)];
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
    const series = (label: Line, stroke: string, fill?: string): uPlot.Series => ({
      label,
      scale: 'bytes',
      stroke,
      fill,
      width: LINES[label].width,
      dash: LINES[label].dash.length ? [...LINES[label].dash] : undefined,
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
        series('A heap in use', colorA),
        series('A never freed', colorA, cssVar('--lf-run-a-fill')),
        series('B heap in use', colorB),
        series('B never freed', colorB, cssVar('--lf-run-b-fill')),
      ],
      hooks: {
        draw: [(u) => this.paintPeaks(u)],
        setSelect: [(u) => this.onSelect(u)],
      },
    };
    // uPlot.join lays out the series as [x, A heap, A never freed, B heap, B never freed].
    const plot = this.chart.create(opts, joined, () => this.setZoom(null));
    // uPlot's markers show a border's style (solid or dashed): each is redrawn as its line's own dash.
    plot.series.forEach((s, i) => {
      const marker = plot.root.querySelectorAll<HTMLElement>('.u-legend .u-series')[i]?.querySelector<HTMLElement>('.u-marker');
      const label = String(s.label);
      if (marker && label in LINES) lineMarker(marker, label.startsWith('A') ? colorA : colorB, s.dash ?? [], s.width ?? 1);
    });
    this.chartBox.dataset.drawn = [a ? 'a' : '', b ? 'b' : ''].join('');
    const describe = (name: string, t: TimelineAnswer | undefined) =>
      t
        ? `${name}: ${countOf(t.total_events, 'memory event')} (${countOf(t.time_ps.length, 'point')}), peak ${formatBytes(t.peak.bytes)} at ${formatPs(t.peak.time_ps)}.`
        : '';
    this.note.textContent = [describe('A', a), describe('B', b)].filter(Boolean).join(' ');
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
