// Run history: the captures of one TensorBoard run (its sessions, taken
// minutes or hours apart) as one history, from `GET history`. The verdict and
// reason of the worst allocator, then one allocator's captures over
// wall-clock time: what outlives every step (a profile's heap floor, a
// snapshot's live bytes: what the trend follows) and the heap's peak, each
// capture a point that opens it; and the families that grew across them.
// Shown when the selected session's run holds two or more captures.

import uPlot from 'uplot';
import {allocatorKey} from '../allocators';
import type {HistoryAnswer, HistoryCapture, HistoryFamily, HistorySeries, Selection, UnreadableFile} from '../api';
import {axisStyle, byteAxis, SizedPlot, Tooltip} from '../chart';
import type {DataCache} from '../data';
import {cssVar, el, errorMessage, notice, section} from '../dom';
import {clockTicks, countOf, formatBytes, formatBytesDelta, formatCount, formatDateTime} from '../format';
import {OwningPanel, STALE} from '../panel';
import {NO_SITE, whereCell} from '../sites';
import {byField, DataTable, memorySource} from '../table';
import {VERDICT_LABEL, verdictBanner} from './verdict';

const HEIGHT = 240;
/** How far (CSS pixels, along x) from a capture's point a click or hover still takes it. */
const HIT_PX = 14;

/** A session named by its time, as XProf's Capture button and `watch` name them (engine/history.py's _SESSION). */
const SESSION_NAME = /^[0-9]{4}(?:_[0-9]{2}){5}(?:_[0-9]+)?$/;

/**
 * The TensorBoard run of a session as `runs` lists it: "job" of "job/2027_01_15_00_00_03"; "" for a session at
 * the logdir's top named by its time; any other name without "/" is a run of its own (engine/history.py's tensorboard_run).
 */
export function tensorboardRun(name: string): string {
  const slash = name.lastIndexOf('/');
  if (slash >= 0) return name.slice(0, slash);
  return SESSION_NAME.test(name) ? '' : name;
}

/** How many sessions (captures) of `runs` belong to the TensorBoard run of session `name`. */
export function captureCount(runs: readonly {run: string}[], name: string): number {
  const tbRun = tensorboardRun(name);
  return runs.filter((r) => tensorboardRun(r.run) === tbRun).length;
}

/** The label of what the trend follows, by the captures' kinds and what the series' rates are fitted to. */
export function measureLabel(captures: readonly Pick<HistoryCapture, 'kind'>[], basis: HistorySeries['rate_basis'] = 'between_captures'): string {
  if (basis === 'within_captures') return 'kept within its window';
  const kinds = new Set(captures.map((c) => c.kind));
  if (kinds.size === 1 && kinds.has('profile')) return 'heap floor (outlives every step)';
  if (kinds.size === 1 && kinds.has('one_moment')) return 'live bytes (one moment)';
  return 'outlives every step';
}

function stepsText(c: HistoryCapture): string {
  if (c.first_step === null || c.last_step === null) return '—';
  return c.first_step === c.last_step ? `step ${c.first_step}` : `steps ${formatCount(c.first_step)}–${formatCount(c.last_step)}`;
}

/** The captures' files that could not be read, each with its capture, host and reason: the history is the others'. */
function unreadableList(errors: UnreadableFile[]): HTMLElement {
  const files = countOf(errors.length, 'file');
  return el(
    'div',
    {class: 'lf-unreadable', 'data-unreadable': 'history'},
    el('strong', {}, `Could not read ${files} of its captures (left out of the history):`),
    el('ul', {}, ...errors.map((e) => el('li', {'data-capture': e.run}, el('code', {}, e.run), ` (${e.host}): ${e.file}: ${e.reason}`))),
  );
}

/** Where the chart places each capture along x: its time, or, when the captures' times say nothing of the job's pace, its step (else its position). */
export interface HistoryAxis {
  kind: 'time' | 'step' | 'capture';
  xs: number[];
}

export function historyAxis(s: Pick<HistorySeries, 'bytes_per_hour' | 'captures'>): HistoryAxis {
  if (s.bytes_per_hour !== null) return {kind: 'time', xs: s.captures.map((c) => c.time_s)};
  const steps = s.captures.map((c) => (c.kind === 'one_moment' ? c.last_step : c.first_step));
  if (steps.every((x): x is number => x !== null)) return {kind: 'step', xs: steps};
  return {kind: 'capture', xs: s.captures.map((_c, i) => i + 1)};
}

/** Where a capture's time came from, when not from itself. */
const TIME_SOURCE: Record<HistoryCapture['time_source'], string> = {
  profile: '',
  session_name: ' (its session folder’s name)',
  file_mtime: ' (its file’s modification time)',
};

/** What a point opens: that session, on the series' host and allocator (its key, see allocatorKey). */
export interface CaptureTarget {
  capture: string;
  host: string;
  allocator: string;
}

export interface HistoryOptions {
  cache: Pick<DataCache, 'history'>;
  /** The TensorBoard run. */
  tbRun: string;
  /** How many sessions `runs` lists for it. */
  captures: number;
  /** The selection shown: its session is marked, its host and allocator's series drawn first. */
  shown: Pick<Selection, 'run' | 'host' | 'allocator'>;
  /** Opens another capture of the run (a point clicked, or chosen with the keys). */
  onOpen(target: CaptureTarget): void;
}

export class HistoryPanel extends OwningPanel {
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  private readonly chartBox: HTMLElement;
  private readonly chartNote: HTMLElement;
  private readonly seriesBox: HTMLElement;
  private readonly chart: SizedPlot;
  private readonly tooltip: Tooltip;
  private readonly request = this.owned.latest();
  private history: HistoryAnswer | null = null;
  private series: HistorySeries | null = null;
  private axis: HistoryAxis = {kind: 'time', xs: []};
  /** The capture under the cursor, or moved to with the arrow keys. */
  private hovered: number | null = null;

  /** The session shown, marked on the chart. */
  private readonly current: string;

  constructor(private readonly options: HistoryOptions) {
    super();
    const {tbRun, captures, shown} = options;
    this.current = shown.run;
    this.chartBox = el('div', {
      class: 'lf-chart lf-history-chart',
      'data-chart': 'history',
      tabindex: 0,
      role: 'group',
      'aria-label': 'The run’s captures over time: what outlives every step and the heap’s peak in each. A point opens its capture: click it, or move with the arrow keys and press Enter.',
    });
    this.chart = this.owned.own(new SizedPlot(this.chartBox, HEIGHT));
    this.tooltip = new Tooltip(this.chartBox);
    this.chartBox.addEventListener('keydown', (event) => this.onKey(event));
    this.chartNote = el('div', {class: 'lf-chart-note', role: 'status'});
    this.seriesBox = el('div');
    const name = tbRun || '(the logdir’s top)';
    this.body = el('div', {}, notice('loading', `Loading the history of ${name} (${countOf(captures, 'capture')}; each is analysed once)…`));
    this.element = section(`Run history: ${name}, ${countOf(captures, 'capture')}`, 'history', this.body);
  }

  mount(): void {
    void this.load();
  }

  /** Redraws the chart with the current theme's colours. */
  update(): void {
    if (this.series) this.drawChart(this.series);
  }

  private async load(): Promise<void> {
    try {
      const history = await this.request.run((signal) => this.options.cache.history(this.options.tbRun, signal));
      if (history === STALE) return;
      this.history = history;
      this.render(history);
    } catch (err) {
      this.body.replaceChildren(notice('error', `Could not load the run’s history: ${errorMessage(err)}`));
    }
  }

  private render(h: HistoryAnswer): void {
    const banner = verdictBanner(h.verdict, h.reason, [], undefined, h.note ? el('div', {class: 'lf-verdict-steps', 'data-note': 'history'}, `Note: ${h.note}`) : null);
    banner.dataset.history = 'true';
    this.element.dataset.verdict = h.verdict;
    const unreadable = h.errors.length ? unreadableList(h.errors) : null;
    if (!h.series.length) {
      this.body.replaceChildren(banner, ...(unreadable ? [unreadable] : []));
      return;
    }
    const parts: HTMLElement[] = [banner, ...(unreadable ? [unreadable] : [])];
    // The series of the host and allocator shown, else the worst.
    const first = Math.max(0, h.series.findIndex((s) => s.host === this.options.shown.host && allocatorKey(s) === this.options.shown.allocator));
    if (h.series.length > 1) {
      const select = el('select', {'aria-label': 'Allocator of the history', 'data-select': 'history-series'});
      h.series.forEach((s, i) => {
        const o = el('option', {value: String(i)}, `${s.allocator} on ${s.host} (${VERDICT_LABEL[s.verdict].toLowerCase()})`);
        o.selected = i === first;
        select.append(o);
      });
      select.addEventListener('change', () => this.showSeries(h.series[Number(select.value)]));
      parts.push(el('div', {class: 'lf-table-tools'}, el('label', {class: 'lf-muted'}, 'Allocator ', select), el('span', {class: 'lf-muted'}, 'worst first')));
    }
    parts.push(this.chartBox, this.chartNote, this.seriesBox);
    this.body.replaceChildren(...parts);
    this.showSeries(h.series[first]);
  }

  private showSeries(s: HistorySeries): void {
    this.series = s;
    this.axis = historyAxis(s);
    this.hovered = null;
    this.chartBox.dataset.host = s.host;
    this.chartBox.dataset.allocator = s.memory_id;
    this.chartBox.dataset.axis = this.axis.kind;
    this.drawChart(s);
    const first = s.captures[0];
    const last = s.captures[s.captures.length - 1];
    const span = this.axis.kind === 'time' ? `, ${formatDateTime(first?.time_s)} to ${formatDateTime(last?.time_s)}` : `, in ${this.axis.kind === 'step' ? 'step' : 'capture'} order`;
    this.chartNote.textContent =
      `${countOf(s.captures.length, 'capture')} of ${s.allocator} on ${s.host}${span}: ` +
      // No rate here: the verdict above gives the one rate, a second sentence with another would contradict it.
      (s.rate_basis === 'within_captures'
        ? 'each point is what that capture kept within its window: its heap counts only what the capture saw allocated, so the captures are not chained. '
        : `what outlives every step moved ${formatBytesDelta(s.rise_bytes)}. `) +
      'Click a point (or focus the chart, move with ← → and press Enter) to open that capture.';
    const reason = (this.history?.series.length ?? 0) > 1 ? el('p', {class: 'lf-muted', 'data-series-reason': 'true'}, `${s.allocator} on ${s.host}: ${s.reason}`) : null;
    const times = s.time_note ? el('p', {class: 'lf-muted', 'data-time-note': 'true'}, `Times: ${s.time_note}.`) : null;
    // Said once: the history's banner ends with it when this series is the one it judges.
    const said = this.history?.reason.includes(s.unexplained ?? '\u0000') ?? false;
    const unexplained = s.unexplained && !said ? el('p', {'data-unexplained': 'true'}, `${s.unexplained[0].toUpperCase()}${s.unexplained.slice(1)}.`) : null;
    const heading = s.verdict === 'leak' && s.families[0]?.agrees ? `Growing families (${formatCount(s.families.length)}; the first accounts for the growth)` : `Growing families (${formatCount(s.families.length)})`;
    const notes: HTMLElement[] = [reason, times, unexplained].filter((p): p is HTMLParagraphElement => p !== null);
    this.seriesBox.replaceChildren(...notes, el('h3', {}, heading), this.familiesTable(s));
  }

  private drawChart(s: HistorySeries): void {
    const captures = s.captures;
    const {kind, xs} = this.axis;
    const axes = axisStyle();
    const measure = cssVar(s.verdict === 'leak' ? '--lf-leak' : '--lf-heap');
    const peak = cssVar('--lf-muted');
    const bytes = (_u: uPlot, v: number | null) => (v === null ? '—' : formatBytes(v));
    const opts: Omit<uPlot.Options, 'width' | 'height'> = {
      cursor: {drag: {x: false, y: false, setScale: false}, points: {size: 12}},
      scales: {
        x: {time: kind === 'time', range: (_u, min, max) => padded(min, max, kind === 'time' ? 60 : 1)},
        bytes: {range: (_u, min, max) => bytesRange(min, max)},
      },
      axes: [
        kind === 'time'
          ? {...axes, size: 50, space: 70, values: (_u, v) => clockTicks(v)}
          : {...axes, size: 50, space: 70, label: kind === 'step' ? 'step (the captures carry no time)' : 'capture (the captures carry no time)', values: (_u, v) => v.map((x) => (Number.isInteger(x) ? formatCount(x) : ''))},
        byteAxis('bytes'),
      ],
      series: [
        {label: kind === 'time' ? 'time' : kind, value: (_u, v) => (kind === 'time' ? formatDateTime(v) : formatCount(v))},
        {label: measureLabel(captures, s.rate_basis), scale: 'bytes', stroke: measure, width: 2, points: {show: true, size: 9, stroke: measure, fill: measure}, value: bytes},
        {label: 'heap peak', scale: 'bytes', stroke: peak, width: 1.5, dash: [5, 4], points: {show: true, size: 7, stroke: peak}, value: bytes},
      ],
      hooks: {
        draw: [(u) => this.paintCurrent(u)],
        setCursor: [(u) => this.hover(u)],
      },
    };
    const plot = this.chart.create(opts, [xs, captures.map((c) => c.measure_bytes), captures.map((c) => c.peak_heap_bytes)]);
    plot.over.addEventListener('click', () => {
      const i = this.pointAt(plot, plot.cursor.left);
      if (i !== null) this.open(i);
    });
    plot.over.addEventListener('mouseleave', () => this.tooltip.hide());
    this.chartBox.dataset.points = String(captures.length);
    const current = captures.findIndex((c) => c.capture === this.current);
    this.chartBox.dataset.current = String(current);
  }

  /** The capture whose point is within HIT_PX of `left` (CSS pixels in the plot), nearest first. */
  private pointAt(u: uPlot, left: number | undefined): number | null {
    if (left === undefined || left < 0 || !this.series) return null;
    let best: number | null = null;
    let distance = HIT_PX;
    this.axis.xs.forEach((x, i) => {
      const d = Math.abs(u.valToPos(x, 'x') - left);
      if (d <= distance) {
        best = i;
        distance = d;
      }
    });
    return best;
  }

  private open(i: number): void {
    const s = this.series;
    const c = s?.captures[i];
    if (!s || !c || c.capture === this.current) return;
    this.options.onOpen({capture: c.capture, host: s.host, allocator: allocatorKey(s)});
  }

  /** A ring around the shown capture's point; the points' positions for the tests (CSS pixels in the plot). */
  private paintCurrent(u: uPlot): void {
    const s = this.series;
    if (!s) return;
    const xs = this.axis.xs.map((x) => Math.round(u.valToPos(x, 'x')));
    const ys = s.captures.map((c) => Math.round(u.valToPos(c.measure_bytes, 'bytes')));
    this.chartBox.dataset.pointsX = xs.join(',');
    this.chartBox.dataset.pointsY = ys.join(',');
    const i = s.captures.findIndex((c) => c.capture === this.current);
    if (i < 0) return;
    const dpr = devicePixelRatio;
    const ctx = u.ctx;
    ctx.save();
    ctx.strokeStyle = cssVar('--lf-highlight');
    ctx.lineWidth = 3 * dpr;
    ctx.beginPath();
    ctx.arc(u.valToPos(this.axis.xs[i], 'x', true), u.valToPos(s.captures[i].measure_bytes, 'bytes', true), 9 * dpr, 0, 2 * Math.PI);
    ctx.stroke();
    ctx.restore();
  }

  private hover(u: uPlot): void {
    const i = this.pointAt(u, u.cursor.left);
    this.hovered = i;
    u.over.style.cursor = i !== null && this.series?.captures[i]?.capture !== this.current ? 'pointer' : '';
    if (i === null || !this.series || u.cursor.top === undefined) {
      this.tooltip.hide();
      return;
    }
    this.showTooltip(u, i, u.cursor.left ?? 0, u.cursor.top);
  }

  private showTooltip(u: uPlot, i: number, left: number, top: number): void {
    const c = this.series?.captures[i];
    if (!c) return;
    const rows: [string, string][] = [
      ['when', formatDateTime(c.time_s) + TIME_SOURCE[c.time_source]],
      ['steps', stepsText(c)],
      [measureLabel([c], this.series?.rate_basis), formatBytes(c.measure_bytes)],
      ['heap peak', formatBytes(c.peak_heap_bytes)],
      ['never freed', formatBytes(c.never_freed_bytes)],
      ['verdict', VERDICT_LABEL[c.verdict] ?? c.verdict],
      ['', c.capture === this.current ? 'the capture shown' : 'click to open this capture'],
    ];
    this.tooltip.show(left + u.over.offsetLeft, Math.max(0, top) + u.over.offsetTop, rows, c.capture);
  }

  /** ← → move between the captures, Enter opens the one reached. */
  private onKey(event: KeyboardEvent): void {
    const u = this.chart.plot;
    const captures = this.series?.captures ?? [];
    if (!u || !captures.length) return;
    let i = this.hovered;
    if (event.key === 'ArrowRight') i = i === null ? 0 : Math.min(captures.length - 1, i + 1);
    else if (event.key === 'ArrowLeft') i = i === null ? captures.length - 1 : Math.max(0, i - 1);
    else if (event.key === 'Home') i = 0;
    else if (event.key === 'End') i = captures.length - 1;
    else if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      if (i !== null) this.open(i);
      return;
    } else return;
    event.preventDefault();
    const c = captures[i];
    const left = u.valToPos(this.axis.xs[i], 'x');
    const top = u.valToPos(c.measure_bytes, 'bytes');
    u.setCursor({left, top});
    this.hovered = i;
    this.showTooltip(u, i, left, top);
  }

  private familiesTable(s: HistorySeries): HTMLElement {
    const n = s.captures.length;
    const table = new DataTable<HistoryFamily>({
      caption: `Growing families of ${s.allocator} on ${s.host} over the captures`,
      pageSize: 10,
      sort: 'growing_captures',
      order: 'desc',
      emptyText: 'No family grew in these captures.',
      rowKey: (f) => f.key,
      where: {run: this.options.tbRun, host: s.host, allocator: s.allocator},
      columns: [
        {
          key: 'label',
          label: 'Family',
          sort: 'label',
          wrap: true,
          title: 'op, shape and region, as the latest capture names it; marked when what it kept within the windows accounts for the growth between captures',
          cell: (f) =>
            el(
              'span',
              {'data-family': 'true', 'data-agrees': f.agrees ? 'true' : null, title: f.key},
              f.label,
              f.agrees && s.verdict === 'leak' ? el('span', {class: 'lf-muted'}, ' (accounts for the growth)') : null,
            ),
        },
        {
          key: 'where',
          label: 'Where',
          sort: 'where',
          wrap: true,
          title: 'the line of code its buffers were made at; hover for the Python stack',
          cell: (f) => whereCell(f.where || (f.stack[0] ?? ''), {...NO_SITE, stack: f.stack}, null),
        },
        {
          key: 'growing_captures',
          label: 'Growing captures',
          sort: 'growing_captures',
          numeric: true,
          title: 'captures in which the family grew (within a profile), or snapshots after which it held more',
          cell: (f) => `${formatCount(f.growing_captures)} of ${formatCount(n)}`,
        },
        {
          key: 'bytes_per_step',
          label: 'Per step',
          sort: 'bytes_per_step',
          numeric: true,
          title: 'tensor bytes it grows per step: the median over the profiles that saw it grow, or fitted across snapshots',
          cell: (f) => formatBytesDelta(f.bytes_per_step),
        },
      ],
      source: memorySource(s.families, byField, (f) => [f.label, f.where, ...f.stack].join(' ')),
    });
    void table.load();
    return table.element;
  }
}

/** [min, max] widened on both sides by a share of its span (`empty` when it has none), so that the edge points stay clear of the frame. */
function padded(min: number, max: number, empty: number): uPlot.Range.MinMax {
  const span = max > min ? max - min : empty;
  return [min - span * 0.05, max + span * 0.05];
}

/** A byte range around the values, never below 0: the rise shows, not the base it sits on. */
function bytesRange(min: number, max: number): uPlot.Range.MinMax {
  const span = max > min ? max - min : Math.max(1024, max * 0.1);
  return [Math.max(0, min - span * 0.15), max + span * 0.15];
}
