// Static panel: one compiled XLA program's buffer assignment, as XProf's
// Memory Viewer reads it. The heap in program order; its buffers as blocks,
// whole-program buffers highlighted with their reason; what to check; the
// whole-program buffers and the buffers at the peak. A buffer allocation may be
// selected (a Where cell's link): its buffers are listed first, drawn in the
// accent colour and their whole-program row marked. A buffer allocation's
// "show" button picks it in the dynamic view: its allocations highlighted
// there, in the buffer lifetimes.

import uPlot from 'uplot';
import type {HloBufferInfo, Limits, LogicalBuffer, ModuleAnswer, ModuleFigures, ModuleSummary, ProgramBuffer} from '../api';
import {axisStyle, byteAxis, chartWidth, clipped, type Rect, RectChart, SizedPlot, swatch} from '../chart';
import type {CsvWhere} from '../csv';
import type {DataCache} from '../data';
import {type Child, clear, cssVar, el, errorMessage, notice} from '../dom';
import {countOf, formatBytes, formatCount, shortProgram} from '../format';
import {Disposables, OwningPanel, STALE} from '../panel';
import {byField, type Column, DataTable, memorySource} from '../table';

const HEAP_HEIGHT = 220;

export const REASON_LABEL: Record<string, string> = {
  parameter: 'parameter',
  live_out: 'live-out',
  constant: 'constant',
  thread_local: 'thread-local',
  never_freed: 'never freed',
  temporary: 'temporary',
};

/** What a whole-program buffer counted both as a parameter and as live-out is. */
const ALIASED = 'parameters the program returns in place (an output reusing its input\'s buffer: donated)';

const KIND_HELP = 'what the buffer is to the program: a temporary, a parameter, an output (live-out), a constant or a thread-local';
const SOURCE_HELP = 'the source file and line of the instruction that defines it, as the compiled program records it';

/** Buffers below the server's small-buffer size are folded into one row. */
function smallLabel(limits: Limits): string {
  return `small (< ${formatBytes(limits.small_buffer_bytes)})`;
}

function reasonPill(reason: string, limits: Limits, title?: string): HTMLElement {
  return el('span', {class: `lf-reason lf-reason-${reason}`, title}, reason === 'small' ? smallLabel(limits) : (REASON_LABEL[reason] ?? reason));
}

/** Program positions are whole numbers: ticks at integer steps only. */
const POSITION_INCRS = Array.from({length: 16}, (_, i) => [1, 2, 5].map((m) => m * 10 ** i)).flat();
const positionTicks = (values: number[]) => values.map((x) => formatCount(x));

/** Live-out buffers are what a user most often keeps by mistake: the warning colour. */
function reasonColor(kind: string): string {
  if (kind === 'temporary') return cssVar('--lf-buffer');
  if (kind === 'live_out' || kind === 'never_freed') return cssVar('--lf-leak');
  if (kind === 'parameter') return cssVar('--lf-highlight');
  return cssVar('--lf-buffer-dim');
}

interface BlockRect extends Rect {
  buffer: LogicalBuffer;
}

/** A row of either table: a whole-program buffer, or a buffer (or the small ones folded) at the peak. */
type Row = HloBufferInfo & {reason?: string; kind?: string; why?: string; count?: number; label?: string; allocation?: number | null};

function nameOf(b: {instruction: string; label?: string; logical_buffer: number | null}): string {
  return b.label ?? (b.instruction || (b.logical_buffer === null ? '' : `logical buffer ${b.logical_buffer}`));
}

const COMMON_COLUMNS: Column<Row>[] = [
  {key: 'instruction', label: 'Instruction', sort: 'instruction', wrap: true, cell: (b) => nameOf(b)},
  {key: 'op_name', label: 'Op name', sort: 'op_name', wrap: true, cell: (b) => b.op_name},
  {key: 'opcode', label: 'Opcode', sort: 'opcode', cell: (b) => b.opcode},
  {key: 'shape', label: 'Shape', sort: 'shape', wrap: true, cell: (b) => b.shape},
  {key: 'bytes', label: 'Size', sort: 'bytes', numeric: true, cell: (b) => formatBytes(b.bytes) + (b.count && b.count > 1 ? ` (${formatCount(b.count)})` : '')},
];

function bufferTable(caption: string, rows: Row[], where: CsvWhere, last: Column<Row>[], rowClass?: (row: Row) => string): HTMLElement {
  const table = new DataTable<Row>({
    rowClass,
    caption,
    pageSize: 10,
    sort: 'bytes',
    order: 'desc',
    filterLabel: 'Filter by name, opcode, shape…',
    emptyText: 'None.',
    rowKey: (b) => `${b.logical_buffer ?? b.label ?? ''}:${b.instruction}:${b.reason ?? b.kind ?? ''}`,
    where,
    columns: [...COMMON_COLUMNS, ...last],
    source: memorySource(rows, byField, (b) => [nameOf(b), b.op_name, b.opcode, b.shape, b.source, b.reason ?? b.kind ?? ''].join(' ')),
  });
  void table.load();
  return table.element;
}

function fact(label: string, value: Child, detail?: Child): HTMLElement {
  return el('div', {class: 'lf-card'}, el('div', {class: 'lf-card-label'}, label), el('div', {class: 'lf-card-value'}, value), detail ? el('div', {class: 'lf-card-detail'}, detail) : null);
}

export function moduleFacts(m: ModuleFigures): HTMLElement {
  return el(
    'div',
    {class: 'lf-cards'},
    fact('Peak heap', formatBytes(m.peak_heap_bytes), m.peak_instruction ? `at ${m.peak_instruction} (position ${formatCount(m.peak_position)})` : null),
    fact(
      'Whole-program bytes',
      formatBytes(m.whole_program_bytes),
      // A parameter returned in place is both: the parts add up to more than the whole by it, said rather than left to puzzle.
      `live-out ${formatBytes(m.live_out_bytes)}, parameters ${formatBytes(m.parameter_bytes)}, constants ${formatBytes(m.constant_bytes)}${m.aliased_bytes ? `; ${formatBytes(m.aliased_bytes)} is both: ${ALIASED}` : ''}`,
    ),
    fact('Temporaries at the peak', formatBytes(m.peak_temporary_bytes), `${countOf(m.num_positions, 'position')}, ${countOf(m.num_instructions, 'instruction')}`),
  );
}

export interface StaticOptions {
  cache: Pick<DataCache, 'module'>;
  run: string;
  host: string;
  /** The program (module) shown. */
  module: ModuleSummary;
  limits: Limits;
  /** The buffer allocation to select (its index in the program's buffer assignment), null for none. */
  selected: number | null;
  /** Scroll to the selected allocation once drawn (a Where link was followed). */
  reveal: boolean;
  /** Picks a buffer allocation of this program in the dynamic view; null when there is none to show it in. */
  onShowAllocations: ((picked: ProgramBuffer) => void) | null;
}

export class StaticPanel extends OwningPanel {
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  /** The charts of the module drawn: replaced by each draw. */
  private charts = new Disposables();
  private readonly request = this.owned.latest();
  private detail: ModuleAnswer | null = null;
  private readonly run: string;
  private readonly host: string;
  private readonly summary: ModuleSummary;
  private readonly limits: Limits;
  private readonly selected: number | null;
  private reveal: boolean;
  private readonly onShowAllocations: StaticOptions['onShowAllocations'];

  constructor(private readonly options: StaticOptions) {
    super();
    ({run: this.run, host: this.host, module: this.summary, limits: this.limits, selected: this.selected, reveal: this.reveal, onShowAllocations: this.onShowAllocations} = options);
    this.owned.add(() => this.charts.dispose());
    this.body = el('div', {});
    this.element = el('div', {'data-module': this.summary.name, 'data-selected-allocation': this.selected === null ? null : String(this.selected)}, this.body);
  }

  mount(): void {
    void this.load();
  }

  /** Rebuilds the panel from the module loaded, with the current theme's colours. */
  update(): void {
    this.draw();
  }

  private async load(): Promise<void> {
    this.body.replaceChildren(notice('loading', 'Loading the program’s buffer assignment…'));
    try {
      // About two points per pixel, as many as the server gives.
      const points = Math.min(this.limits.max_points, chartWidth(this.element) * 2);
      const detail = await this.request.run((signal) => this.options.cache.module(this.run, this.host, this.summary, points, signal));
      if (detail === STALE) return;
      this.detail = detail;
      this.draw();
    } catch (err) {
      this.body.replaceChildren(moduleFacts(this.summary), notice('error', `Could not load module ${this.summary.name}: ${errorMessage(err)}`));
    }
  }

  /** The "show" button of a buffer allocation: its allocations in the dynamic view; nothing without one. */
  private showButton(allocation: number | null | undefined, text = 'show'): HTMLElement | '' {
    const show = this.onShowAllocations;
    if (show === null || allocation === null || allocation === undefined) return '';
    const program = this.summary.name;
    const button = el(
      'button',
      {type: 'button', class: 'lf-show-allocations', 'data-show-allocation': String(allocation), title: `Highlight the allocations of allocation ${allocation} of ${program} in the buffer lifetimes`},
      text,
    );
    button.addEventListener('click', (event) => {
      event.stopPropagation();
      show({program, allocation});
    });
    return button;
  }

  /** Builds the panel from the loaded module (again after a theme change). */
  private draw(): void {
    const d = this.detail;
    if (!d) return;
    this.charts.dispose();
    this.charts = new Disposables();
    clear(this.body);
    // As the CLI's static_buffers.csv: the module by its name (modules[].name).
    const where: CsvWhere = {run: this.run, host: this.host, module: this.summary.name};
    const heapBox = el('div', {class: 'lf-chart', 'data-chart': 'static-heap', role: 'img', 'aria-label': `Heap in program order; peak ${formatBytes(d.peak_heap_bytes)}`});
    this.body.append(moduleFacts(d));
    const selected = this.selected === null ? null : this.selectedBlock(d, this.selected, where);
    if (selected) this.body.append(selected);
    if (d.actionable.length) {
      this.body.append(
        el('h3', {}, 'Worth checking'),
        el('ul', {class: 'lf-actionable', 'data-list': 'actionable'}, ...d.actionable.map((a) => el('li', {}, reasonPill(a.reason, this.limits), ' ', a.message))),
      );
    }
    this.body.append(el('h3', {}, 'Heap in program order'), heapBox, el('h3', {}, 'Buffer blocks'));
    this.drawBlocks(d);
    this.body.append(
      el('h3', {}, `Whole-program buffers (${formatCount(d.whole_program_buffers.length)})`),
      el(
        'div',
        {'data-table': 'whole-program'},
        bufferTable(
          'Whole-program buffers',
          d.whole_program_buffers,
          where,
          [
            {key: 'reason', label: 'Why', sort: 'reason', title: 'why XLA keeps the buffer for the whole program: a parameter, an output (live out), a constant or a thread-local', cell: (b) => (b.reason ? reasonPill(b.reason, this.limits, b.why) : '')},
            {key: 'why', label: 'Detail', wrap: true, title: 'what the buffer assignment says of it', cell: (b) => b.why ?? ''},
            ...(this.onShowAllocations ? [{key: 'allocations', label: 'Allocations', title: 'the allocations the dynamic view tied to this buffer', cell: (b: Row) => this.showButton(b.allocation)}] : []),
          ],
          (b) => (this.selected !== null && b.allocation === this.selected ? 'lf-selected-buffer' : ''),
        ),
      ),
      el('h3', {}, `Buffers at the peak (${countOf(d.peak_buffers.length, 'row')}, no size cutoff; buffers under ${formatBytes(this.limits.small_buffer_bytes)} folded into one row)`),
      el(
        'div',
        {'data-table': 'peak-buffers'},
        bufferTable('Buffers at the peak', d.peak_buffers, where, [
          {key: 'kind', label: 'Kind', sort: 'kind', title: KIND_HELP, cell: (b) => (b.kind ? reasonPill(b.kind, this.limits) : '')},
          {key: 'source', label: 'Source', sort: 'source', wrap: true, title: SOURCE_HELP, cell: (b) => b.source},
        ]),
      ),
    );
    this.drawHeap(heapBox, d);
    if (this.reveal && selected) {
      this.reveal = false;
      selected.scrollIntoView({block: 'start'});
    }
  }

  /** The selected allocation's logical buffers (its whole-program entry when none has a range), or why there are none. */
  private selectedBlock(d: ModuleAnswer, allocation: number, where: CsvWhere): HTMLElement {
    const buffers: Row[] = d.buffers.filter((b) => b.allocation === allocation);
    const rows = buffers.length ? buffers : d.whole_program_buffers.filter((b) => b.allocation === allocation);
    const title = el('h3', {title: d.name}, `Selected: allocation ${formatCount(allocation)} of ${shortProgram(d.name)}`);
    if (!rows.length) {
      const shown = d.num_buffers > d.buffers.length ? ` (only the ${formatCount(d.buffers.length)} largest of its ${formatCount(d.num_buffers)} buffers were sent)` : '';
      return el(
        'div',
        {class: 'lf-selected', 'data-selected': 'missing'},
        title,
        notice('empty', `No buffer of memory space ${d.memory_space} of ${d.name} is in allocation ${formatCount(allocation)}${shown}.`),
      );
    }
    const largest = formatBytes(Math.max(...rows.map((b) => b.bytes)));
    const count = `${countOf(rows.length, 'logical buffer')}, ${rows.length === 1 ? '' : 'the largest '}${largest}`;
    return el(
      'div',
      {class: 'lf-selected', 'data-selected': String(allocation)},
      title,
      el('p', {class: 'lf-muted'}, `${count}; drawn in the accent colour in the buffer blocks below. `, this.showButton(allocation, 'Show its allocations in the buffer lifetimes')),
      el(
        'div',
        {'data-table': 'selected-buffer'},
        bufferTable(`Allocation ${allocation}`, rows, where, [
          {key: 'kind', label: 'Kind', sort: 'kind', title: KIND_HELP, cell: (b) => reasonPill(b.kind ?? b.reason ?? '', this.limits)},
          {key: 'source', label: 'Source', sort: 'source', wrap: true, title: SOURCE_HELP, cell: (b) => b.source},
        ]),
      ),
    );
  }

  /**
   * Temporaries at their offset in the heap; whole-program buffers (each in
   * an allocation of its own) stacked above them across the whole program.
   */
  private drawBlocks(d: ModuleAnswer): void {
    const legend = el(
      'div',
      {class: 'lf-legend'},
      swatch(reasonColor('temporary'), 'temporary (at its heap offset)'),
      swatch(reasonColor('live_out'), 'whole program: live-out or never freed'),
      swatch(reasonColor('parameter'), 'whole program: parameter'),
      swatch(reasonColor('constant'), 'whole program: constant, thread-local'),
      this.selected === null ? null : swatch('var(--lf-accent)', `selected: allocation ${formatCount(this.selected)}`),
    );
    const blocks = new RectChart<BlockRect>({
      height: 300,
      xLabel: 'program order',
      yLabel: 'offset',
      xValues: positionTicks,
      xIncrs: POSITION_INCRS,
      // A block of an allocation picks it in the dynamic view too.
      onPick: this.onShowAllocations
        ? (r) => {
            if (r.buffer.allocation !== null) this.onShowAllocations?.({program: this.summary.name, allocation: r.buffer.allocation});
          }
        : undefined,
      describe: (r) => ({
        title: r.buffer.op_name || nameOf(r.buffer) || '(unnamed)',
        rows: [
          ['instruction', r.buffer.instruction || '—'],
          ['opcode', r.buffer.opcode || '—'],
          ['shape', r.buffer.shape || '—'],
          ['size', formatBytes(r.buffer.bytes)],
          ['allocation', r.buffer.allocation === null ? '—' : `${formatCount(r.buffer.allocation)} (offset ${formatBytes(r.buffer.offset)})`],
          ['live', `positions ${formatCount(r.buffer.start)} – ${formatCount(r.buffer.end)}`],
          ['kind', REASON_LABEL[r.buffer.kind] ?? r.buffer.kind],
          ['last user', r.buffer.last_user || '—'],
          ['shares memory of', r.buffer.shares_with === null ? '—' : `logical buffer ${r.buffer.shares_with}`],
          ['source', r.buffer.source || '—'],
        ],
      }),
    });
    this.charts.own(blocks);
    blocks.element.dataset.chart = 'static-blocks';
    blocks.element.setAttribute('role', 'group');
    blocks.element.setAttribute('aria-roledescription', 'chart');
    blocks.element.setAttribute('aria-label', 'Buffer blocks in program order; the whole-program buffers are listed in the table below. The arrow keys go from block to block; Home and End go to the first and last.');
    const hint = this.onShowAllocations ? [el('p', {class: 'lf-muted'}, 'Hover a block for its buffer; click it to highlight its allocations in the buffer lifetimes.')] : [];
    this.body.append(legend, ...hint, blocks.element);
    // The server sends the largest buffers when a program has too many to draw.
    const drawn = d.buffers;
    const end = Math.max(1, d.num_positions);
    const temporaries = drawn.filter((b) => b.kind === 'temporary');
    const heapTop = temporaries.reduce((top, b) => Math.max(top, b.offset + b.bytes), 0);
    // One band per whole-program allocation, above the heap.
    const bandOf = new Map<string, number>();
    let stack = heapTop;
    const accent = cssVar('--lf-accent');
    let selected = 0;
    const rects: BlockRect[] = drawn.map((b) => {
      const temporary = b.kind === 'temporary';
      let y0 = b.offset;
      let first = false;
      if (!temporary) {
        const key = b.allocation === null ? `lb${b.logical_buffer}` : `a${b.allocation}`;
        if (!bandOf.has(key)) {
          bandOf.set(key, stack);
          stack += b.bytes;
          first = true;
        }
        y0 = (bandOf.get(key) ?? 0) + b.offset;
      }
      const picked = this.selected !== null && b.allocation === this.selected;
      if (picked) selected++;
      const label = `${picked ? 'selected, ' : ''}${REASON_LABEL[b.kind] ?? b.kind}: ${b.op_name || nameOf(b)} ${b.shape}`;
      return {
        buffer: b,
        x0: temporary ? b.start : Math.max(0, b.start),
        x1: Math.max(b.end, b.start + 1),
        y0,
        y1: y0 + Math.max(1, b.bytes),
        color: picked ? accent : reasonColor(b.kind),
        highlight: !temporary || picked,
        label: first || picked ? label : undefined,
      };
    });
    blocks.setData(rects, [0, end], [0, Math.max(1, stack) * 1.02]);
    blocks.element.dataset.drawn = String(rects.length);
    blocks.element.dataset.selected = String(selected);
    if (d.num_buffers > drawn.length) {
      this.body.append(el('div', {class: 'lf-chart-note'}, `Drawing the ${formatCount(drawn.length)} largest of ${formatCount(d.num_buffers)} logical buffers.`));
    }
  }

  private drawHeap(box: HTMLElement, d: ModuleAnswer): void {
    const heap = d.curve.heap_bytes;
    if (!heap.length) {
      box.appendChild(notice('empty', 'This program has no heap-simulator trace.'));
      return;
    }
    const axes = axisStyle();
    const peak = d.peak_position;
    const opts: Omit<uPlot.Options, 'width' | 'height'> = {
      cursor: {drag: {x: true, y: false}},
      scales: {x: {time: false}, y: {range: (_u, _min, max) => [0, Math.max(1, max) * 1.08]}},
      axes: [
        {
          ...axes,
          incrs: POSITION_INCRS,
          values: (_u, v) => {
            const ticks = positionTicks(v);
            box.dataset.ticks = ticks.join(' ');
            return ticks;
          },
          size: 36,
        },
        byteAxis(),
      ],
      series: [
        {label: 'program order', value: (_u, v) => formatCount(v)},
        {label: 'heap', stroke: cssVar('--lf-heap'), fill: cssVar('--lf-heap-fill'), width: 1.5, paths: uPlot.paths.stepped?.({align: 1}), value: (_u, v) => formatBytes(v)},
      ],
      hooks: {
        draw: [
          (u) =>
            clipped(u, (ctx) => {
              if (peak === null) return;
              const x = u.valToPos(peak, 'x', true);
              const y = u.valToPos(d.peak_heap_bytes, 'y', true);
              ctx.fillStyle = cssVar('--lf-leak');
              ctx.beginPath();
              ctx.arc(x, y, 4 * devicePixelRatio, 0, 2 * Math.PI);
              ctx.fill();
            }),
        ],
      },
    };
    this.charts.own(new SizedPlot(box, HEAP_HEIGHT)).create(opts, [d.curve.position, heap]);
  }
}
