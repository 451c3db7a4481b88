// Shared uPlot plumbing: theme colours, resizing, tooltips and a rectangle
// chart (buffer lifetimes, static buffer blocks) drawn through uPlot hooks.

import uPlot from 'uplot';
import {breakableChild, type Child, cssVar, el} from './dom';
import {byteTicks} from './format';
import {Disposables, live} from './panel';

/** Runs `paint` with the canvas clipped to the plotting area (canvas pixels). */
export function clipped(u: uPlot, paint: (ctx: CanvasRenderingContext2D, box: uPlot.BBox) => void): void {
  const ctx = u.ctx;
  const box = u.bbox;
  ctx.save();
  ctx.beginPath();
  ctx.rect(box.left, box.top, box.width, box.height);
  ctx.clip();
  // uPlot leaves its axis text settings on the context.
  ctx.textAlign = 'left';
  ctx.textBaseline = 'alphabetic';
  try {
    paint(ctx, box);
  } finally {
    ctx.restore();
  }
}

/** A box on the canvas (canvas pixels): x0 < x1, y0 < y1. */
export interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export function overlaps(a: Box, b: Box): boolean {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/** The row the step labels take at the top of the plot (CSS pixels): the peak marker stays below it. */
export const STEP_LABEL_ROW = 16;
const PEAK_FONT = 11;
const DOT_RADIUS = 4;

/** Where a peak's marker goes: its dot and its text's plate (canvas pixels); null outside the x range. */
export interface PeakMarker {
  x: number;
  y: number;
  dot: Box;
  plate: Box;
  tx: number;
  ty: number;
}

/**
 * The marker of a peak with `text` beside it: inside the plot, below the
 * step labels' row. `ctx` measures the text; nothing is drawn.
 */
export function peakMarker(
  u: uPlot,
  ctx: CanvasRenderingContext2D,
  peak: {time_ps: number | null; bytes: number},
  scale: string,
  text: string,
): PeakMarker | null {
  if (peak.time_ps === null) return null;
  const {left, top, width} = u.bbox;
  const dpr = devicePixelRatio;
  const x = u.valToPos(peak.time_ps, 'x', true);
  const y = u.valToPos(peak.bytes, scale, true);
  if (x < left || x > left + width) return null;
  ctx.font = `${Math.round(PEAK_FONT * dpr)}px sans-serif`;
  const tw = ctx.measureText(text).width;
  const tx = x + 6 * dpr + tw < left + width ? x + 6 * dpr : x - 6 * dpr - tw;
  const ty = Math.max(top + (STEP_LABEL_ROW + 12) * dpr, y + 4 * dpr);
  const r = DOT_RADIUS * dpr;
  return {
    x,
    y,
    dot: {x0: x - r, y0: y - r, x1: x + r, y1: y + r},
    plate: {x0: tx - 3 * dpr, y0: ty - 11 * dpr, x1: tx + tw + 3 * dpr, y1: ty + 4 * dpr},
    tx,
    ty,
  };
}

/** Paints a peak's marker (`peakMarker`): a dot, and its text on a plate. Call from `clipped`. */
export function paintPeak(ctx: CanvasRenderingContext2D, marker: PeakMarker | null, text: string, color: string): void {
  if (!marker) return;
  const dpr = devicePixelRatio;
  ctx.fillStyle = color;
  ctx.beginPath();
  ctx.arc(marker.x, marker.y, DOT_RADIUS * dpr, 0, 2 * Math.PI);
  ctx.fill();
  ctx.font = `${Math.round(PEAK_FONT * dpr)}px sans-serif`;
  // On a plate of the page's background, so that it reads over the lines.
  const {plate} = marker;
  ctx.fillStyle = cssVar('--lf-bg');
  ctx.globalAlpha = 0.85;
  ctx.fillRect(plate.x0, plate.y0, plate.x1 - plate.x0, plate.y1 - plate.y0);
  ctx.globalAlpha = 1;
  ctx.fillStyle = cssVar('--lf-text');
  ctx.fillText(text, marker.tx, marker.ty);
}

/** A box in CSS pixels relative to the chart, rounded, as the browser tests read it from a data attribute. */
export function cssBox(b: Box): number[] {
  const dpr = devicePixelRatio;
  return [b.x0, b.y0, b.x1, b.y1].map((v) => Math.round((v / dpr) * 10) / 10);
}

/** Tick steps of a byte axis: powers of two, so that ticks read 4 MiB, 8 MiB, not 4.77 MiB. */
const BYTE_INCRS = Array.from({length: 51}, (_, i) => 2 ** i);

/** A byte axis on `scale`: binary steps, labelled in binary units. */
export function byteAxis(scale = 'y'): Partial<uPlot.Axis> {
  return {...axisStyle(), scale, incrs: BYTE_INCRS, values: (_u, v) => byteTicks(v), size: 76};
}

export function axisStyle(): Partial<uPlot.Axis> {
  return {
    stroke: cssVar('--lf-muted'),
    grid: {stroke: cssVar('--lf-grid'), width: 1},
    ticks: {stroke: cssVar('--lf-grid'), width: 1},
  };
}

/** Paths of a series that holds its value until its next point: memory changes at events, it does not ramp. */
export function steppedPath(): uPlot.Series.PathBuilder {
  // uPlot's bundle always has its path builders; its types mark them optional.
  const stepped = uPlot.paths.stepped as NonNullable<typeof uPlot.paths.stepped>;
  return stepped({align: 1});
}

/** A uPlot chart in `target`, counted in `live.plots` until destroyed. */
function newPlot(opts: uPlot.Options, data: uPlot.AlignedData, target: HTMLElement): uPlot {
  live.plots++;
  const hooks = opts.hooks ?? {};
  return new uPlot({...opts, hooks: {...hooks, destroy: [...(hooks.destroy ?? []), () => void live.plots--]}}, data, target);
}

/** Keeps a chart as wide as its container, until the observer returned is disconnected. */
function autoWidth(chart: uPlot, container: HTMLElement, height: number): ResizeObserver {
  let last = 0;
  const observer = new ResizeObserver(() => {
    const width = Math.max(200, Math.floor(container.clientWidth));
    if (width !== last) {
      last = width;
      chart.setSize({width, height});
    }
  });
  observer.observe(container);
  return observer;
}

export function chartWidth(container: HTMLElement): number {
  return Math.max(200, Math.floor(container.clientWidth || container.getBoundingClientRect().width || 800));
}

/** The x range dragged across `u`, clearing the selection; null for a mere click. */
export function takeSelection(u: uPlot): [number, number] | null {
  const {left, width} = u.select;
  if (width < 3) return null;
  const range: [number, number] = [u.posToVal(left, 'x'), u.posToVal(left + width, 'x')];
  u.setSelect({left: 0, top: 0, width: 0, height: 0}, false);
  return range;
}

/** One uPlot chart at a time in `container`, kept as wide as it. */
export class SizedPlot {
  plot: uPlot | null = null;
  /** The chart shown and its observer. */
  private owned = new Disposables();

  constructor(
    private readonly container: HTMLElement,
    private readonly height: number,
  ) {}

  /** Replaces the chart; `onDoubleClick` typically resets the zoom. */
  create(opts: Omit<uPlot.Options, 'width' | 'height'>, data: uPlot.AlignedData, onDoubleClick?: () => void): uPlot {
    this.destroy();
    this.owned = new Disposables();
    const plot = this.owned.own(newPlot({...opts, width: chartWidth(this.container), height: this.height}, data, this.container));
    if (onDoubleClick) plot.over.addEventListener('dblclick', onDoubleClick);
    this.owned.observe(autoWidth(plot, this.container, this.height));
    this.plot = plot;
    return plot;
  }

  destroy(): void {
    this.owned.dispose();
    this.plot = null;
  }
}

/** A tooltip placed inside `container` near the cursor. */
export class Tooltip {
  readonly element = el('div', {class: 'lf-tooltip', role: 'tooltip', hidden: true});
  constructor(private readonly container: HTMLElement) {
    container.appendChild(this.element);
  }
  show(left: number, top: number, rows: [string, Child][], title?: string): void {
    const dl = el('dl');
    for (const [label, value] of rows) dl.append(el('dt', {}, label), el('dd', {}, breakableChild(value)));
    this.element.replaceChildren(...(title ? [el('strong', {}, title)] : []), dl);
    this.element.hidden = false;
    const width = this.container.clientWidth;
    const box = this.element.getBoundingClientRect();
    this.element.style.left = `${Math.max(0, Math.min(left + 14, width - box.width - 4))}px`;
    this.element.style.top = `${top + 14}px`;
  }
  hide(): void {
    this.element.hidden = true;
  }
}

export function swatch(color: string, label: string): HTMLElement {
  const box = el('span', {class: 'lf-swatch'});
  box.style.background = color;
  return el('span', {}, box, label);
}

// ---- rectangle chart -----------------------------------------------------

export interface Rect {
  x0: number;
  x1: number;
  y0: number;
  y1: number;
  /** Fill colour; highlighted rects are drawn last, with an outline. */
  color: string;
  highlight?: boolean;
  /** Written inside the rect when it is large enough. */
  label?: string;
}

export interface RectChartOptions<R extends Rect> {
  height: number;
  xLabel: string;
  /** The y axis is in bytes (an address or an offset). */
  yLabel: string;
  xValues(values: number[]): string[];
  /** Tick steps of the x axis (uPlot's own when unset). */
  xIncrs?: number[];
  /** Title and rows of the tooltip for a rect. */
  describe(rect: R): {title: string; rows: [string, Child][]};
  /** Takes over zooming: a dragged range, or null on double-click. */
  onZoom?(range: {min: number; max: number} | null): void;
  /** A click (not a drag) on a rect. */
  onPick?(rect: R): void;
}

/**
 * Rectangles on uPlot axes. uPlot owns the scales, axes, cursor and zoom; a
 * `draw` hook paints the rects and a `setCursor` hook hit-tests them. The
 * chart takes the keyboard's focus: the arrow keys go from rect to rect (left
 * and right in time, up and down in y), Home and End to the first and last in
 * time, Enter picks; the rect is outlined in the focus colour and the tooltip
 * describes it, as hovering does.
 */
export class RectChart<R extends Rect> {
  readonly element: HTMLElement;
  private readonly plot: uPlot;
  private readonly tooltip: Tooltip;
  private rects: R[] = [];
  private xRange: [number, number] = [0, 1];
  private yRange: [number, number] = [0, 1];
  private readonly owned = new Disposables();
  hovered: R | null = null;
  /** The rect the keyboard is on; null for none. */
  private keyed: R | null = null;

  constructor(private readonly options: RectChartOptions<R>) {
    this.element = el('div', {class: 'lf-chart', tabindex: '0'});
    this.element.addEventListener('keydown', (e) => this.onKey(e));
    this.element.addEventListener('focus', () => {
      if (this.element.matches(':focus-visible')) this.moveTo(this.keyed ?? this.inTime()[0] ?? null);
    });
    this.element.addEventListener('blur', () => this.moveTo(null));
    this.tooltip = new Tooltip(this.element);
    const axes = axisStyle();
    const self = this;
    const opts: uPlot.Options = {
      width: 800,
      height: options.height,
      legend: {show: false},
      cursor: {drag: {x: true, y: false, setScale: false}, points: {show: false}},
      scales: {
        x: {time: false, range: (_u, min, max) => (max > min ? [min, max] : self.xRange)},
        y: {range: () => self.yRange},
      },
      axes: [
        {...axes, ...(options.xIncrs ? {incrs: options.xIncrs} : {}), label: options.xLabel, values: (_u, v) => options.xValues(v), size: 40},
        {...byteAxis('y'), label: options.yLabel, size: 80},
      ],
      series: [{}, {show: false}],
      hooks: {
        draw: [(u) => this.draw(u)],
        setCursor: [(u) => this.hover(u)],
        setSelect: [
          (u) => {
            const range = takeSelection(u);
            if (range) this.zoom({min: range[0], max: range[1]});
          },
        ],
      },
    };
    this.plot = this.owned.own(newPlot(opts, [[], []], this.element));
    this.plot.over.addEventListener('mouseleave', () => this.tooltip.hide());
    this.plot.over.addEventListener('dblclick', () => this.zoom(null));
    const pick = options.onPick;
    if (pick) {
      // A click picks the rect under the cursor; the end of a drag (a zoom) does not.
      let down = {x: 0, y: 0};
      this.plot.over.addEventListener('mousedown', (e) => (down = {x: e.clientX, y: e.clientY}));
      this.plot.over.addEventListener('click', (e) => {
        if (this.hovered && Math.hypot(e.clientX - down.x, e.clientY - down.y) < 4) pick(this.hovered);
      });
    }
    this.owned.observe(autoWidth(this.plot, this.element, options.height));
  }

  setData(rects: R[], xRange: [number, number], yRange: [number, number]): void {
    this.rects = rects.slice().sort((a, b) => Number(!!a.highlight) - Number(!!b.highlight));
    this.keyed = null;
    this.xRange = xRange[1] > xRange[0] ? xRange : [xRange[0], xRange[0] + 1];
    this.yRange = yRange[1] > yRange[0] ? yRange : [yRange[0], yRange[0] + 1];
    this.plot.setData([[this.xRange[0], this.xRange[1]], [null, null]] as uPlot.AlignedData, true);
  }

  /** Shows the x range [min, max] (or everything). */
  setXRange(range: {min: number; max: number} | null): void {
    const {min, max} = range ?? {min: this.xRange[0], max: this.xRange[1]};
    this.plot.batch(() => this.plot.setScale('x', {min, max}));
  }

  redraw(): void {
    this.plot.redraw(false, false);
  }

  destroy(): void {
    this.owned.dispose();
  }

  /** The rects in the x range shown, by their start (then their y): the keyboard's order. */
  private inTime(): R[] {
    const {min = this.xRange[0], max = this.xRange[1]} = this.plot.scales.x;
    return this.rects.filter((r) => Math.max(r.x0, r.x1) >= min && Math.min(r.x0, r.x1) <= max).sort((a, b) => Math.min(a.x0, a.x1) - Math.min(b.x0, b.x1) || a.y0 - b.y0);
  }

  private onKey(event: KeyboardEvent): void {
    const shown = this.inTime();
    if (!shown.length) return;
    const at = this.keyed ? shown.indexOf(this.keyed) : -1;
    let next: R | null | undefined;
    if (event.key === 'ArrowRight') next = shown[at < 0 ? 0 : Math.min(shown.length - 1, at + (event.shiftKey ? 10 : 1))];
    else if (event.key === 'ArrowLeft') next = shown[at < 0 ? shown.length - 1 : Math.max(0, at - (event.shiftKey ? 10 : 1))];
    else if (event.key === 'Home') next = shown[0];
    else if (event.key === 'End') next = shown[shown.length - 1];
    else if (event.key === 'ArrowUp' || event.key === 'ArrowDown') {
      // The nearest rect above (or below) in y, among those that overlap the current one's time, else any.
      const from = this.keyed ?? shown[0];
      const up = event.key === 'ArrowUp';
      const side = shown.filter((r) => (up ? r.y0 >= from.y1 : r.y1 <= from.y0) && r !== from);
      const near = (r: R) => Math.abs(r.y0 - from.y0) + (Math.max(r.x0, r.x1) < Math.min(from.x0, from.x1) || Math.min(r.x0, r.x1) > Math.max(from.x0, from.x1) ? Number.MAX_SAFE_INTEGER / 4 : 0);
      next = side.sort((a, b) => near(a) - near(b))[0] ?? from;
    } else if (event.key === 'Enter' && this.keyed) {
      this.options.onPick?.(this.keyed);
      return;
    } else if (event.key === 'Escape') next = null;
    else return;
    event.preventDefault();
    this.moveTo(next ?? null);
  }

  /** Puts the keyboard on `rect` (null: off): outlined, and described in the tooltip. */
  private moveTo(rect: R | null): void {
    this.keyed = rect;
    this.hovered = rect;
    this.element.dataset.keyed = rect ? String(this.rects.indexOf(rect)) : '';
    this.plot.redraw(false, false);
    if (!rect) {
      this.tooltip.hide();
      return;
    }
    const u = this.plot;
    const {min = this.xRange[0], max = this.xRange[1]} = u.scales.x;
    const x = u.valToPos(Math.max(min, Math.min(max, (Math.max(min, Math.min(rect.x0, rect.x1)) + Math.min(max, Math.max(rect.x0, rect.x1))) / 2)), 'x');
    const y = u.valToPos((rect.y0 + rect.y1) / 2, 'y');
    const {title, rows} = this.options.describe(rect);
    this.tooltip.show(x + u.over.offsetLeft, y + u.over.offsetTop, rows, title);
  }

  private zoom(range: {min: number; max: number} | null): void {
    if (this.options.onZoom) this.options.onZoom(range);
    else this.setXRange(range);
  }

  private draw(u: uPlot): void {
    clipped(u, (ctx) => this.paint(u, ctx));
    // The x range drawn, for the browser tests.
    this.element.dataset.xRange = `${u.scales.x.min},${u.scales.x.max}`;
  }

  private paint(u: uPlot, ctx: CanvasRenderingContext2D): void {
    const outline = cssVar('--lf-text');
    const plate = cssVar('--lf-bg');
    const dpr = devicePixelRatio;
    const labels: [string, number, number, number, number][] = [];
    for (const rect of this.rects) {
      const x0 = u.valToPos(rect.x0, 'x', true);
      const x1 = u.valToPos(rect.x1, 'x', true);
      const y0 = u.valToPos(rect.y0, 'y', true);
      const y1 = u.valToPos(rect.y1, 'y', true);
      const x = Math.min(x0, x1);
      const y = Math.min(y0, y1);
      const w = Math.max(1, Math.abs(x1 - x0));
      // Highlighted rects stay visible however small they are.
      const h = Math.max(rect.highlight ? 3 * dpr : 1, Math.abs(y1 - y0));
      ctx.fillStyle = rect.color;
      ctx.fillRect(x, y, w, h);
      if (rect.highlight && h >= 6 * dpr) {
        ctx.strokeStyle = outline;
        ctx.lineWidth = Math.max(1, dpr);
        ctx.strokeRect(x, y, w, h);
      }
      if (rect.label && h >= 14 * dpr && w >= 80 * dpr) labels.push([rect.label, x, y, w, h]);
    }
    // The keyboard's rect, outlined in the focus ring's colour, at least a few pixels whatever its size.
    const keyed = this.keyed;
    if (keyed) {
      const x0 = u.valToPos(Math.min(keyed.x0, keyed.x1), 'x', true);
      const x1 = u.valToPos(Math.max(keyed.x0, keyed.x1), 'x', true);
      const y0 = u.valToPos(keyed.y1, 'y', true);
      const y1 = u.valToPos(keyed.y0, 'y', true);
      const pad = 2 * dpr;
      ctx.strokeStyle = cssVar('--lf-focus');
      ctx.lineWidth = 2 * dpr;
      ctx.strokeRect(x0 - pad, y0 - pad, Math.max(1, x1 - x0) + 2 * pad, Math.max(1, y1 - y0) + 2 * pad);
    }
    // Labels last, so no later fill covers them; each on a plate of the page's
    // background, so it reads on any fill in either theme.
    ctx.font = `${Math.round(11 * dpr)}px sans-serif`;
    for (const [label, x, y, w, h] of labels) {
      const tw = Math.min(ctx.measureText(label).width, w - 12 * dpr);
      ctx.fillStyle = plate;
      ctx.globalAlpha = 0.85;
      ctx.fillRect(x + 3 * dpr, y + h / 2 - 7 * dpr, tw + 6 * dpr, 14 * dpr);
      ctx.globalAlpha = 1;
      ctx.fillStyle = outline;
      ctx.fillText(label, x + 6 * dpr, y + h / 2 + 4 * dpr, tw);
    }
  }

  private hover(u: uPlot): void {
    // The keyboard's rect keeps the tooltip until the pointer moves over the chart.
    if (this.keyed && document.activeElement === this.element && !this.element.matches(':hover')) return;
    const {left, top} = u.cursor;
    if (left === undefined || top === undefined || left < 0 || top < 0) {
      this.hovered = null;
      this.tooltip.hide();
      return;
    }
    const x = u.posToVal(left, 'x');
    const y = u.posToVal(top, 'y');
    const xTol = Math.abs(u.posToVal(left + 2, 'x') - x);
    const yTol = Math.abs(u.posToVal(top + 2, 'y') - y);
    let hit: R | null = null;
    for (let i = this.rects.length - 1; i >= 0; i--) {
      const r = this.rects[i];
      if (x >= Math.min(r.x0, r.x1) - xTol && x <= Math.max(r.x0, r.x1) + xTol && y >= r.y0 - yTol && y <= r.y1 + yTol) {
        hit = r;
        break;
      }
    }
    this.hovered = hit;
    if (!hit) {
      this.tooltip.hide();
      return;
    }
    const {title, rows} = this.options.describe(hit);
    this.tooltip.show(left + u.over.offsetLeft, top + u.over.offsetTop, rows, title);
  }
}
