// Static panel: one compiled XLA program's buffer assignment. The heap in
// program order, its buffers as blocks (whole-program buffers highlighted
// with their reason), and the buffers live at the peak.

import uPlot from 'uplot';
import {api, type LogicalBuffer, type ModuleDetail, type ModuleSummary, type Selection} from '../api';
import {autoWidth, axisStyle, chartWidth, downsample, type Rect, RectChart, swatch} from '../chart';
import {clear, cssVar, el, errorMessage, isAbort, notice} from '../dom';
import {byteTicks, formatBytes, formatCount} from '../format';
import {byField, DataTable, memorySource} from '../table';

/** The chart draws at most this many logical buffers (the largest). */
const MAX_BLOCKS = 5000;
const HEAP_HEIGHT = 220;

interface BlockRect extends Rect {
  buffer: LogicalBuffer;
}

function label(b: LogicalBuffer): string {
  return b.op_name || b.instruction || '(unnamed)';
}

function bufferColumns(withReason: boolean) {
  return [
    {key: 'instruction', label: 'Instruction', sort: 'instruction', wrap: true, cell: (b: LogicalBuffer) => b.instruction},
    {key: 'op_name', label: 'Op name', sort: 'op_name', wrap: true, cell: (b: LogicalBuffer) => b.op_name},
    {key: 'opcode', label: 'Opcode', sort: 'opcode', cell: (b: LogicalBuffer) => b.opcode},
    {key: 'shape', label: 'Shape', sort: 'shape', wrap: true, cell: (b: LogicalBuffer) => b.shape},
    {key: 'size', label: 'Size', sort: 'size', numeric: true, cell: (b: LogicalBuffer) => formatBytes(b.size)},
    withReason
      ? {key: 'reason', label: 'Why whole-program', sort: 'reason', cell: (b: LogicalBuffer) => (b.reason ? el('span', {class: 'lf-reason'}, b.reason) : '')}
      : {key: 'source', label: 'Source', sort: 'source', wrap: true, cell: (b: LogicalBuffer) => b.source},
  ];
}

function bufferTable(caption: string, rows: LogicalBuffer[], withReason: boolean): HTMLElement {
  const table = new DataTable<LogicalBuffer>({
    caption,
    pageSize: 15,
    sort: 'size',
    order: 'desc',
    filterLabel: 'Filter by name, opcode, shape…',
    emptyText: 'None.',
    rowKey: (b) => `${b.id ?? ''}:${b.instruction}:${b.offset}`,
    columns: bufferColumns(withReason),
    source: memorySource(rows, byField, (b) => [b.instruction, b.op_name, b.opcode, b.shape, b.source, b.reason ?? ''].join(' ')),
  });
  void table.load();
  return table.element;
}

/** Numbers of the report's module summary, shown as small facts. */
function summaryFacts(summary: ModuleSummary | undefined): HTMLElement | null {
  if (!summary) return null;
  const facts = Object.entries(summary)
    .filter(([key, value]) => typeof value === 'number' && key !== 'program_id')
    .map(([key, value]) => {
      const name = key.replace(/_/g, ' ');
      const text = key.endsWith('bytes') ? formatBytes(value as number) : formatCount(value as number);
      return el('div', {class: 'lf-card'}, el('div', {class: 'lf-card-label'}, name), el('div', {class: 'lf-card-value'}, text));
    });
  return facts.length ? el('div', {class: 'lf-cards'}, ...facts) : null;
}

export class StaticPanel {
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  private heapPlot: uPlot | null = null;
  private disposeSize: (() => void) | null = null;
  private blocks: RectChart<BlockRect> | null = null;
  private detail: ModuleDetail | null = null;
  private controller: AbortController | null = null;

  constructor(
    private readonly sel: Selection,
    private readonly summary: ModuleSummary | undefined,
  ) {
    this.body = el('div', {});
    this.element = el('div', {'data-module': sel.module}, this.body);
  }

  async load(): Promise<void> {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    this.body.replaceChildren(notice('loading', 'Loading the program’s buffer assignment…'));
    try {
      const detail = await api.module(this.sel, controller.signal);
      if (controller.signal.aborted) return;
      this.detail = detail;
      this.draw();
    } catch (err) {
      if (isAbort(err) || controller.signal.aborted) return;
      this.body.replaceChildren(summaryFacts(this.summary) ?? '', notice('error', `Could not load module ${this.sel.module}: ${errorMessage(err)}`));
    }
  }

  /** Builds the panel from the loaded module (again after a theme change). */
  draw(): void {
    const d = this.detail;
    if (!d) return;
    this.destroyCharts();
    clear(this.body);
    const heapBox = el('div', {class: 'lf-chart', 'data-chart': 'static-heap'});
    const wholeProgram = d.whole_program ?? [];
    const peakBuffers = d.peak_buffers ?? [];
    this.body.append(
      summaryFacts(this.summary) ?? '',
      el('h3', {}, 'Heap in program order'),
      heapBox,
    );
    this.body.append(el('h3', {}, 'Buffer blocks'));
    const legend = el(
      'div',
      {class: 'lf-legend'},
      swatch(cssVar('--lf-buffer'), 'temporary buffer'),
      swatch(cssVar('--lf-highlight'), 'whole-program buffer (parameter, constant, live-out, …)'),
    );
    this.blocks = new RectChart<BlockRect>({
      height: 300,
      xLabel: 'program order',
      yLabel: 'offset',
      xValues: (v) => v.map((x) => formatCount(Math.round(x))),
      yValues: byteTicks,
      describe: (r) => ({
        title: label(r.buffer),
        rows: [
          ['instruction', r.buffer.instruction],
          ['opcode', r.buffer.opcode],
          ['shape', r.buffer.shape],
          ['size', formatBytes(r.buffer.size)],
          ['offset', formatBytes(r.buffer.offset)],
          ['live', `${formatCount(r.buffer.start)} – ${formatCount(r.buffer.end)}`],
          ['whole program', r.buffer.reason || 'no'],
          ['source', r.buffer.source || '—'],
        ],
      }),
    });
    this.blocks.element.dataset.chart = 'static-blocks';
    this.body.append(legend, this.blocks.element);
    const drawn = (d.buffers ?? []).slice().sort((a, b) => b.size - a.size).slice(0, MAX_BLOCKS);
    const normal = cssVar('--lf-buffer');
    const whole = cssVar('--lf-highlight');
    let xMax = Math.max(1, d.heap_bytes?.length ?? 0);
    let yMax = 1;
    const rects: BlockRect[] = drawn.map((b) => {
      xMax = Math.max(xMax, b.end + 1);
      yMax = Math.max(yMax, b.offset + b.size);
      return {buffer: b, x0: b.start, x1: Math.max(b.end, b.start + 1), y0: b.offset, y1: b.offset + Math.max(1, b.size), color: b.reason ? whole : normal, highlight: !!b.reason};
    });
    this.blocks.setData(rects, [0, xMax], [0, yMax * 1.02]);
    if ((d.buffers ?? []).length > drawn.length) {
      this.body.append(el('div', {class: 'lf-chart-note'}, `Drawing the ${formatCount(drawn.length)} largest of ${formatCount(d.buffers.length)} logical buffers.`));
    }
    this.body.append(
      el('h3', {}, `Whole-program buffers (${formatCount(wholeProgram.length)})`),
      el('div', {'data-table': 'whole-program'}, bufferTable('Whole-program buffers', wholeProgram, true)),
      el('h3', {}, `Buffers at the peak (${formatCount(peakBuffers.length)})`),
      el('div', {'data-table': 'peak-buffers'}, bufferTable('Buffers at the peak', peakBuffers, false)),
    );
    this.drawHeap(heapBox, d);
  }

  destroy(): void {
    this.controller?.abort();
    this.destroyCharts();
  }

  private destroyCharts(): void {
    this.disposeSize?.();
    this.disposeSize = null;
    this.heapPlot?.destroy();
    this.heapPlot = null;
    this.blocks?.destroy();
    this.blocks = null;
  }

  private drawHeap(box: HTMLElement, d: ModuleDetail): void {
    const heap = d.heap_bytes ?? [];
    if (!heap.length) {
      box.appendChild(notice('empty', 'This program has no heap-simulator trace.'));
      return;
    }
    const fullOrder = d.program_order && d.program_order.length === heap.length ? d.program_order : heap.map((_v, i) => i);
    const [order, values] = downsample(fullOrder, heap, chartWidth(box));
    const axes = axisStyle();
    const opts: uPlot.Options = {
      width: chartWidth(box),
      height: HEAP_HEIGHT,
      cursor: {drag: {x: true, y: false}},
      scales: {x: {time: false}, y: {range: (_u, _min, max) => [0, Math.max(1, max) * 1.05]}},
      axes: [
        {...axes, values: (_u, v) => v.map((x) => formatCount(Math.round(x))), size: 36},
        {...axes, values: (_u, v) => byteTicks(v), size: 76},
      ],
      series: [
        {label: 'program order', value: (_u, v) => formatCount(v)},
        {label: 'heap', stroke: cssVar('--lf-heap'), fill: cssVar('--lf-heap-fill'), width: 1.5, paths: uPlot.paths.stepped?.({align: 1}), value: (_u, v) => formatBytes(v)},
      ],
    };
    this.heapPlot = new uPlot(opts, [order, values], box);
    this.disposeSize = autoWidth(this.heapPlot, box, HEAP_HEIGHT);
  }
}
