// Typed client for the plugin's routes (docs/http_api.md).
// Every URL is relative: the plugin iframe's <base href> is
// `<prefix>/data/plugin/leakfinder/`, so this works under --path_prefix.

import {inlineSource} from './inline';

export type Verdict = 'leak' | 'no_leak' | 'inconclusive';
export type LeakKind = 'growing' | 'persistent' | 'bounded' | 'window_end';
export type BufferStatus = 'freed' | 'never_freed' | 'before_window';
/** The format a host's file was read as: its name in the server's format registry ("xplane", "torch_trace", ...). */
export type ProfileFormat = string;

/**
 * What a host's format tells its users (`format_hints`, docs/http_api.md): the
 * tab shows these rather than knowing the formats.
 */
export interface FormatHints {
  /** One file's kind: "XProf profile", "PyTorch profiler trace". */
  name: string;
  /** Why a host of this format may hold no memory events and how to record them; `code` in backticks. */
  record_events: string;
  /** What follows "memory id <id>": where the format's memory ids come from. */
  memory_id_note: string;
  /** Its sessions hold compiled programs: the module selector and the static view. */
  static_modules: boolean;
  /** XProf's own tools (Memory Profile, Memory Viewer) open its files. */
  xprof_tools: boolean;
}

/**
 * A file that could not be read (truncated, corrupt, empty, a dangling or
 * looping link): its run and host, its path, and why (docs/http_api.md, "An
 * unreadable file"). The other files are still reported.
 */
export interface UnreadableFile {
  run: string;
  host: string;
  file: string;
  /** Its error message, less the path it opens with. */
  reason: string;
}

export interface RunEntry {
  run: string;
  hosts: string[];
  /** Its files found unreadable by an earlier request and unchanged since; [] for files not yet read. */
  errors: UnreadableFile[];
}
export interface RunsResponse {
  runs: RunEntry[];
}

export interface Step {
  step: number;
  start_ps: number;
  end_ps: number;
}

/** What the host was doing when buffers were made: running a compiled program, copying host data to the device, or neither; "" when the profile tells only the framework's op or frames. */
export type SiteContext = 'program' | 'transfer' | 'outside' | '';
/**
 * How an allocation made in a program was tied to one of the program's buffers: `exact` (one buffer has its
 * size, or allocation order and lifetime inside `Build buffer allocations` settle it), `ambiguous` (several do:
 * `candidates` names them, `buffer` is the one taken in order), `near` (none has it exactly and a temporaries
 * block a few KiB off is taken, or the program was found by time alone), `none` (no buffer comes close),
 * `no_hlo` (the program's HLO is not in the profile); "" outside a program. A transfer the next call takes as a
 * parameter has `program`, `buffer` ("parameter 0") and its match too.
 */
export type SiteMatch = 'exact' | 'ambiguous' | 'near' | 'none' | 'no_hlo' | '';

/** Where buffers were made, as far as the profile tells (tb_leakfinder/model/sites.py). */
export interface Site {
  context: SiteContext;
  /** The program's key as the static view lists it ("jit_dot(49)", a module's `name`); "" when none. */
  program: string;
  /** The program buffer: "output 0", "parameter 1", "temporaries (2 buffers)", "constant"; "" when none. */
  buffer: string;
  /** The program's buffer allocation index (the static view's `allocation`); -1 when none. */
  allocation: number;
  /** The HLO instruction's op ("dot_general"). */
  hlo_op: string;
  /** The framework's scope of it ("jit(dot)/dot_general"). */
  op_name: string;
  hlo_shape: string;
  /** The instruction's source file and line, the full path. */
  source: string;
  match: SiteMatch;
  /** The program buffers it could be, when more than one has its size. */
  candidates: string[];
  /** The user's Python frames around the allocation, innermost first: "train.py:42 in train_step". */
  stack: string[];
  /** The innermost frame of a model library below the user's line: "Owlv2Attention.forward (modeling_owlv2.py:410)"; "" when none. */
  model_frame: string;
}

/**
 * One op family of an allocator: the buffers of one (op, dtype, region) that
 * outlive a step or are never freed. `kind` is judged from the family's live
 * bytes at step boundaries; `count`, the bytes and the step figures describe
 * its never-freed buffers, the evidence shown.
 */
export interface Group {
  group: number;
  op: string;
  /** The family's shape pattern: "[128,1024]" when all agree, "[32,*]" when a dimension varies, "*" when ranks differ. */
  shape: string;
  dtype: string;
  region: string;
  /** The family in words, as every view of the report puts it: "Mean [32,*] output, 12 shapes", "one buffer regrown each step by ConcatV2, now [1920,1024]". */
  label: string;
  /** Distinct shapes among the family's never-freed and step-outliving buffers. */
  num_shapes: number;
  /** The shape of its newest never-freed buffer (of its newest buffer when none is never freed). */
  latest_shape: string;
  /** growing: its live bytes keep rising to the end (a leak); bounded: they stopped rising or fell back; persistent: made early and kept; window_end: made in the last step. */
  kind: LeakKind;
  /** Never-freed buffers. */
  count: number;
  /** Tensor bytes of the never-freed buffers (what the program asked for). */
  requested_bytes: number;
  /** The allocator's chunk bytes of the never-freed buffers. */
  bytes: number;
  /** Steps that left never-freed buffers behind, first and last by step number. */
  steps: number;
  first_step: number | null;
  last_step: number | null;
  /** The step number from which a growing family grows; null for the other kinds. */
  onset_step: number | null;
  /** Steps from the onset on in which its live bytes rose. */
  growth_steps: number;
  /** Grows by freeing one buffer and making it again larger, so few of its buffers are never freed. */
  regrown: boolean;
  /** Tensor bytes per step the family's live bytes grow, fitted from its onset on (0 unless growing). */
  bytes_per_step: number;
  allocated_bytes_per_step: number;
  score: number;
  /** The line of code its first buffer was made at ("generate_gemm_trace.py:37", "train.py:42 in train_step"); "" when unknown. */
  where: string;
  site: Site;
}

/** `buffers`: a group of buffers live at the peak; `stack`: the stack reservation; `before_window`: heap no buffer of the window explains. */
export type BreakdownCategory = 'buffers' | 'stack' | 'before_window';

export interface BreakdownRow {
  category: BreakdownCategory;
  op: string;
  shape: string;
  dtype: string;
  region: string;
  /** null on the stack and before-window rows, which are not buffers. */
  count: number | null;
  bytes: number;
  /** Where its first buffer was made ("" and an empty site on the stack and before-window rows). */
  where: string;
  site: Site;
}

/** When the allocator runs out at the measured growth, from its free memory at window end. */
export interface Forecast {
  bytes_available: number;
  growth_bytes_per_step: number;
  steps_to_oom: number;
  step_duration_ps: number | null;
  seconds_to_oom: number | null;
  /** "At +512 KiB/step the 15.2 GiB still free runs out in about 31,000 steps (about 52 min at 100 ms/step)." */
  description: string;
}

/** Where memory was held at an out-of-memory error: the user's line, else the op, else what the capture could not name. */
export interface Holder {
  where: string;
  bytes: number;
  /** Buffers; 0 for the memory held from before the trace began. */
  count: number;
}

/** What held an allocator's memory when the capture was taken at an out-of-memory error. */
export interface OutOfMemory {
  /** What says the capture was taken at one: "its trace records 1 oom entry", "every segment of its memory is full". */
  cause: string;
  held_bytes: number;
  /** What the allocator had reserved from the device (at least held_bytes). */
  capacity_bytes: number;
  /** Largest first, at most 10; a last row folds the rest. */
  holders: Holder[];
  /** "At the out-of-memory error 11.8 GiB of 11.8 GiB was held by: …" */
  description: string;
}

export interface AllocatorReport {
  /** The key XProf's Memory Profile lists the allocator under. */
  memory_id: string;
  /** A readable label: `TPU:2`, `GPU:0`, else the allocator's name. */
  name: string;
  num_allocations: number;
  num_deallocations: number;
  balance: number;
  /** Stack reserved + heap in use at the peak (XProf's peakBytesInUse). */
  peak_bytes_in_use: number;
  peak_heap_bytes: number;
  peak_stack_reserved_bytes: number;
  /** Reserved + in use + available at the peak; 0 when the profile does not say. */
  memory_capacity_bytes: number;
  peak_time_ps: number | null;
  peak_step: number | null;
  peak_fragmentation: number;
  /** Heap at the peak that no buffer allocated in the window explains. */
  peak_before_window_bytes: number;
  never_freed_count: number;
  never_freed_bytes: number;
  freed_before_window_count: number;
  /** Slope of the heap in use at step ends, fitted over all steps: every allocation, not a leak rate. */
  growth_bytes_per_step: number | null;
  /** The leak rate: the growing families' tensor bytes per step summed (what the forecast uses); 0 unless it leaks. */
  leak_bytes_per_step: number;
  /** The heap in use when the capture window began (before its first event) and when it ended. */
  heap_start_bytes: number;
  heap_end_bytes: number;
  /** The least it held at any moment of the window: what outlives every step (a run's history follows it). */
  heap_floor_bytes: number;
  verdict: Verdict;
  reason: string;
  groups: Group[];
  /** Rows add up to `peak_bytes_in_use`. */
  peak_breakdown: BreakdownRow[];
  forecast: Forecast | null;
  /** Null unless the capture was taken at an out-of-memory error (a PyTorch snapshot's). */
  out_of_memory: OutOfMemory | null;
  fragmentation_note: string | null;
  warnings: string[];
  /** How to get the Python frames, when none of the allocator's buffers has them; null when some have. */
  stack_hint: string | null;
}

export type StepSourceKind = 'step_num' | 'group_id' | 'root_events' | 'device_programs' | 'time_windows' | 'none';

/** Where the host's steps came from: "30 steps from the group_id stat". */
export interface StepSource {
  kind: StepSourceKind;
  name: string | null;
  num_steps: number;
  description: string;
}

/** What identifies a logical buffer of a compiled program, and where it came from. */
export interface HloBufferInfo {
  logical_buffer: number | null;
  instruction: string;
  opcode: string;
  op_name: string;
  shape: string;
  source: string;
  /** The user that runs last in the schedule ("" when the proto has no schedule). */
  last_user: string;
  bytes: number;
}

export type WholeProgramReason = 'parameter' | 'live_out' | 'constant' | 'thread_local' | 'never_freed';

export interface WholeProgramBuffer extends HloBufferInfo {
  reason: WholeProgramReason;
  why: string;
  allocation: number;
  parameter_number: number | null;
  live_out: boolean;
  aliases_parameter: boolean;
  actionable: boolean;
}

/** Buffers below `limits.small_buffer_bytes`, folded into one row of a list, so that its total stays whole. */
interface SmallBuffers extends HloBufferInfo {
  logical_buffer: null;
  /** "small (<16 KiB)". */
  label: string;
  count: number;
}

/** A whole-program buffer as a row of the report's and the comparison's lists, which count the buffers of each row. */
export interface ListedWholeProgramBuffer extends WholeProgramBuffer {
  count: 1;
}

/** A row of the report's whole-program buffers: one buffer, or the small ones folded. */
export type WholeProgramRow = ListedWholeProgramBuffer | (SmallBuffers & {reason: 'small'});

export interface Actionable {
  instruction: string;
  op_name: string;
  shape: string;
  source: string;
  bytes: number;
  reason: WholeProgramReason;
  message: string;
}

export interface PeakBuffer extends HloBufferInfo {
  /** `temporary`, or why it lives for the whole program. */
  kind: 'temporary' | WholeProgramReason;
  count: 1;
}

/** A row of `GET module`'s buffers at the peak: one buffer, or the small ones folded. */
export type PeakRow = PeakBuffer | (SmallBuffers & {kind: 'small'});

/** A freed temporary whose range covers at least half of the program. */
export interface LongLivedTemporary extends HloBufferInfo {
  start: number;
  end: number;
  /** The share of the program's positions it is live over. */
  fraction: number;
  why: string;
}

/** One logical buffer's live range in program order: [start, end). */
export interface LogicalBuffer extends HloBufferInfo {
  allocation: number | null;
  offset: number;
  start: number;
  end: number;
  /** `temporary`, or why it lives for the whole program. */
  kind: string;
  shares_with: number | null;
}

/** One compiled XLA program and memory space: what the report's `modules` and `GET module` both say of it. */
export interface ModuleFigures {
  name: string;
  module: string;
  program_id: number | null;
  memory_space: number;
  num_instructions: number;
  num_positions: number;
  peak_heap_bytes: number;
  peak_position: number | null;
  peak_instruction: string | null;
  peak_temporary_bytes: number;
  whole_program_bytes: number;
  live_out_bytes: number;
  parameter_bytes: number;
  constant_bytes: number;
  thread_local_bytes: number;
  actionable: Actionable[];
}

/** One program as summarised in the report (`modules`). */
export interface ModuleSummary extends ModuleFigures {
  whole_program_buffers: WholeProgramRow[];
  num_long_lived_temporaries: number;
  /** The first few, largest bytes x share of the program first; `num_long_lived_temporaries` counts them all. */
  long_lived_temporaries: LongLivedTemporary[];
}

/** `GET module`: one program in detail. */
export interface ModuleDetail extends ModuleFigures {
  run: string;
  host: string;
  memory_spaces: number[];
  curve: {position: number[]; heap_bytes: number[]; instruction: (string | null)[]};
  /** Their bytes add up to `peak_heap_bytes`. */
  peak_buffers: PeakRow[];
  /** Every one, none folded. */
  whole_program_buffers: WholeProgramBuffer[];
  long_lived_temporaries: LongLivedTemporary[];
  /** In program order: the largest ones when the program has more than the server sends. */
  buffers: LogicalBuffer[];
  /** How many logical buffers have a range; more than `buffers.length` when only the largest came. */
  num_buffers: number;
}

/** One device's compiled programs in a device memory profile. */
export interface CompiledPrograms {
  /** The allocator's key of that device ("device unknown" when the profile names none). */
  device: string;
  count: number;
  bytes: number;
}

export interface HostReport {
  host: string;
  format: ProfileFormat;
  format_hints: FormatHints;
  /** The host's verdict and reason: its worst allocator's, or why there is none. */
  verdict: Verdict;
  reason: string;
  /** Set, with no allocators, when its profile could not be analysed (a run's other hosts still are). */
  error?: string;
  /** With `error`: the path of the file that could not be read. */
  file?: string;
  warnings: string[];
  duration_ps: number;
  /** When the capture began (ns since the epoch), where its format records it (a device memory profile). */
  start_time_ns: number | null;
  /** Set when its clock counts events, not time (a PyTorch memory snapshot without time_us): this many ps an event. */
  event_clock_ps: number | null;
  /** The buffers live at one moment (a device memory profile), not events over a window. */
  snapshot: boolean;
  /** A device memory profile's compiled executables per device: code and constants, in no allocator. */
  compiled_programs: CompiledPrograms[];
  num_steps: number;
  step_source: StepSource;
  steps: Step[];
  allocators: AllocatorReport[];
  modules: ModuleSummary[];
}

export interface RunReport {
  run: string;
  verdict: Verdict;
  hosts: HostReport[];
}

/** What the server sends at most, so that the tab asks for no more. */
export interface Limits {
  /** Buffers below this size are folded into one row ("small"). */
  small_buffer_bytes: number;
  /** The most rows one `buffers` request returns. */
  page_size: number;
  /** The most points one `timeline` or `module` request returns. */
  max_points: number;
}

export interface Report {
  version: number;
  runs: RunReport[];
  limits: Limits;
  /** The histories of the TensorBoard runs among `runs` that hold several captures (not on a one-run report). */
  histories: History[];
  /** Every host of `runs` whose file could not be read (each also a host with `error`); [] when all were read. */
  errors: UnreadableFile[];
}

/** One capture of one allocator, as a run's history follows it. */
export interface HistoryCapture {
  /** The discovered session (a run as `runs` lists it): the tab opens it. */
  capture: string;
  /** "profile": memory events over a window; "snapshot": a device memory profile's live buffers. */
  kind: 'profile' | 'snapshot';
  /** When it began, seconds since the epoch. */
  time_s: number;
  /** Where `time_s` came from: the capture itself, its session folder's name, or its file's mtime (written or copied). */
  time_source: 'profile' | 'session_name' | 'file_mtime';
  duration_s: number;
  heap_start_bytes: number;
  heap_peak_bytes: number;
  heap_end_bytes: number;
  heap_floor_bytes: number;
  /** What the trend follows: a profile's heap floor, a snapshot's live bytes. */
  measure_bytes: number;
  never_freed_bytes: number;
  first_step: number | null;
  last_step: number | null;
  /** Its programs' names without ids, joined; "" when it ran none. */
  program: string;
  verdict: Verdict;
}

/** A family that grew over the captures. */
export interface HistoryFamily {
  key: string;
  label: string;
  where: string;
  stack: string[];
  bytes_first: number;
  bytes_last: number;
  growth_bytes: number;
  growing_captures: number;
  bytes_per_step: number;
  /** Its rate over wall-clock time: across snapshots, or its rate per step at the job's steps per hour; null: no clock. */
  bytes_per_hour: number | null;
  /** The captures it appears in. */
  captures: string[];
  /** What it kept within the windows (or held across snapshots) accounts for the growth between captures. */
  agrees: boolean;
}

/** One allocator of one host over a run's captures. */
export interface HistorySeries {
  host: string;
  memory_id: string;
  name: string;
  verdict: Verdict;
  reason: string;
  rise_bytes: number;
  /** Null when the captures' times say nothing of the job's pace (files copied together): `time_note` says why. */
  bytes_per_hour: number | null;
  bytes_per_step: number | null;
  bytes_per_capture: number;
  hours_to_oom: number | null;
  capacity_bytes: number;
  /** Where the captures' times came from, when not every one from itself. */
  time_note: string | null;
  /** A leak no family accounts for: that it grew before each window. */
  unexplained: string | null;
  /** In time order (step order when some carry only a file's mtime): the chart and table follow it. */
  captures: HistoryCapture[];
  /** The culprit first. */
  families: HistoryFamily[];
}

/** A TensorBoard run's captures as one history (the `history` route). */
export interface History {
  run: string;
  num_captures: number;
  verdict: Verdict;
  reason: string;
  /** Why captures are not one series (different hosts), or null. */
  note: string | null;
  /** The files of its captures that could not be read: the history is the others' (its reason says how many). */
  errors: UnreadableFile[];
  /** Worst first. */
  series: HistorySeries[];
}

export interface Timeline {
  run: string;
  host: string;
  /** The allocator's label and memory id, as in its report. */
  allocator: string;
  memory_id: string;
  total_events: number;
  time_ps: number[];
  heap_bytes: number[];
  stack_bytes: number[];
  fragmentation: number[];
  never_freed_bytes: number[];
  peak: {time_ps: number | null; bytes: number; step: number | null};
  steps: Step[];
  /** With the `group` argument: that family's index, and its live bytes at each sample: the allocator's chunks of its buffers that outlive a step, freed ones subtracted. */
  group?: number;
  group_bytes?: number[];
}

export interface Buffer {
  id: number;
  address: string;
  alloc_time_ps: number | null;
  free_time_ps: number | null;
  alloc_step: number | null;
  free_step: number | null;
  requested_bytes: number;
  allocation_bytes: number;
  op: string;
  shape: string;
  dtype: string;
  region: string;
  status: BufferStatus;
  group: number | null;
  /** The line of code it was made at; "" when unknown. */
  where: string;
  /** Its site: an index into its page's `sites`. */
  site: number;
}

export interface BuffersPage {
  run: string;
  host: string;
  /** The allocator's label and memory id, as in its report. */
  allocator: string;
  memory_id: string;
  total: number;
  offset: number;
  limit: number;
  buffers: Buffer[];
  /** The sites of the page's buffers, each once (a buffer's `site` indexes this list). */
  sites: Site[];
}

export type BufferSort = 'bytes' | 'alloc_time_ps' | 'free_time_ps' | 'lifetime_ps' | 'op';

export interface BufferQuery {
  offset?: number;
  limit?: number;
  sort?: BufferSort;
  order?: 'asc' | 'desc';
  group?: number | null;
  status?: BufferStatus | '';
  start_ps?: number | null;
  end_ps?: number | null;
  /** The buffers made in this program (a module's key), with `allocation` those of that buffer allocation of it. */
  program?: string | null;
  allocation?: number | null;
}

/** One program buffer of the static view: a program's buffer allocation. */
export interface ProgramBuffer {
  program: string;
  allocation: number;
}

// ---- compare (run B, the change, against run A, the base) -------------------

export type GroupStatus = 'new' | 'grown' | 'shrunk' | 'fixed' | 'unchanged';

/** A figure of both runs: `delta` is b - a. */
export interface Delta {
  a: number;
  b: number;
  delta: number;
}

/** A family matched across the runs by (op, shape pattern, dtype, region). */
export interface GroupDiff {
  op: string;
  shape: string;
  dtype: string;
  region: string;
  status: GroupStatus;
  /** The family's `label` in B's report, else in A's. */
  label: string;
  kind_a: LeakKind | null;
  kind_b: LeakKind | null;
  count_a: number;
  count_b: number;
  bytes_a: number;
  bytes_b: number;
  bytes_per_step_a: number;
  bytes_per_step_b: number;
  /** The earliest onset of the side's growing families (step numbers); null when none grows. */
  onset_step_a: number | null;
  onset_step_b: number | null;
  /** Growing in B and not in A. */
  new_leak: boolean;
}

export interface AllocatorDiff {
  /** null on the side that has no allocator of that name. */
  name_a: string | null;
  name_b: string | null;
  verdict_a: Verdict | null;
  verdict_b: Verdict | null;
  reason_a: string | null;
  reason_b: string | null;
  peak_bytes_in_use: Delta;
  never_freed_bytes: Delta;
  growth_bytes_per_step: Delta;
  num_allocations: Delta;
  num_deallocations: Delta;
  groups: GroupDiff[];
}

export interface ModuleDiff {
  /** The module's name without its program id. */
  name: string;
  name_a: string | null;
  name_b: string | null;
  peak_heap_bytes: Delta;
  live_out_bytes: Delta;
  /** One by one: buffers below `limits.small_buffer_bytes` are not compared. */
  whole_program_buffers_added: ListedWholeProgramBuffer[];
  whole_program_buffers_removed: ListedWholeProgramBuffer[];
}

export interface HostDiff {
  host_a: string;
  host_b: string;
  verdict_a: Verdict;
  verdict_b: Verdict;
  reason_a: string;
  reason_b: string;
  allocators: AllocatorDiff[];
  modules: ModuleDiff[];
}

/** `GET compare`. */
export interface Comparison {
  run_a: string;
  run_b: string;
  verdict_a: Verdict;
  verdict_b: Verdict;
  hosts: HostDiff[];
  unmatched_hosts: string[];
  regression: boolean;
  regressions: string[];
}

// ---- pod overview (a run of several hosts) ------------------------------------

/** One host and allocator of a pod; `error` is set (and the allocator fields null) for a host that could not be read. */
export interface OverviewRow {
  host: string;
  memory_id: string | null;
  name: string | null;
  verdict: Verdict;
  /** The allocator's `growth_bytes_per_step`: the heap at step ends, all allocations, fitted. */
  bytes_per_step: number | null;
  /** The allocator's `leak_bytes_per_step`; null for a host that could not be read. */
  leak_bytes_per_step: number | null;
  peak_bytes_in_use: number | null;
  memory_capacity_bytes: number | null;
  step_source: StepSource | null;
  error: string | null;
}

/** `GET overview`: rows worst first. */
export interface Overview {
  run: string;
  num_hosts: number;
  num_leaking_hosts: number;
  rows: OverviewRow[];
}

/** Where the plugin's routes live; identity of the view being shown. */
export interface Selection {
  run: string;
  host: string;
  allocator: string;
  /** The module's key in the selector: its name, with the memory space when not 0. */
  module: string;
}

export function moduleKey(m: Pick<ModuleSummary, 'name' | 'memory_space'>): string {
  return m.memory_space ? `${m.name} (memory space ${m.memory_space})` : m.name;
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export type Params = Record<string, string | number | null | undefined>;

export function routeUrl(route: string, params: Params = {}): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') query.set(key, String(value));
  }
  const qs = query.toString();
  return `./${route}${qs ? `?${qs}` : ''}`;
}

/** A 503 means "still being analysed": the analysis goes on, so ask again (for up to ~10 minutes). */
const RETRY_MS = 3000;
const MAX_RETRIES = 200;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new DOMException('Aborted', 'AbortError'));
    });
  });
}

/** What a route answered: its HTTP status and JSON body (null when it had none). */
export interface Answer {
  status: number;
  body: unknown;
}

/** Where answers come from: the plugin's routes, or a standalone report's inlined data (inline.ts). */
export interface DataSource {
  get(route: string, params: Params, signal?: AbortSignal): Promise<Answer>;
}

const httpSource: DataSource = {
  async get(route, params, signal) {
    let response = await fetch(routeUrl(route, params), {signal, headers: {Accept: 'application/json'}});
    for (let attempt = 0; response.status === 503 && attempt < MAX_RETRIES; attempt++) {
      await sleep(RETRY_MS, signal);
      response = await fetch(routeUrl(route, params), {signal, headers: {Accept: 'application/json'}});
    }
    let body: unknown = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    return {status: response.status, body};
  },
};

const source: DataSource = inlineSource() ?? httpSource;

async function getJson<T>(route: string, params: Params = {}, signal?: AbortSignal): Promise<T> {
  const {status, body} = await source.get(route, params, signal);
  if (status < 200 || status > 299) {
    const message =
      body && typeof body === 'object' && 'error' in body && typeof (body as {error: unknown}).error === 'string'
        ? (body as {error: string}).error
        : `${route} answered HTTP ${status}`;
    throw new ApiError(message, status);
  }
  return body as T;
}

export const api = {
  runs(signal?: AbortSignal): Promise<RunsResponse> {
    return getJson('runs', {}, signal);
  },
  report(run: string, host?: string, signal?: AbortSignal): Promise<Report> {
    return getJson('report', {run, host}, signal);
  },
  /** `run` is a TensorBoard run (the part of a session's name before its last "/"). */
  history(run: string, signal?: AbortSignal): Promise<History> {
    return getJson('history', {run}, signal);
  },
  /** With `group`, the answer has `group_bytes`: that family's live bytes at each sample. */
  timeline(
    sel: Pick<Selection, 'run' | 'host' | 'allocator'>,
    points: number,
    range: {start_ps: number; end_ps: number} | null,
    group: number | null = null,
    signal?: AbortSignal,
  ): Promise<Timeline> {
    return getJson(
      'timeline',
      {
        run: sel.run,
        host: sel.host,
        allocator: sel.allocator,
        points,
        start_ps: range ? Math.floor(range.start_ps) : null,
        end_ps: range ? Math.ceil(range.end_ps) : null,
        group,
      },
      signal,
    );
  },
  buffers(sel: Pick<Selection, 'run' | 'host' | 'allocator'>, query: BufferQuery, signal?: AbortSignal): Promise<BuffersPage> {
    return getJson(
      'buffers',
      {
        run: sel.run,
        host: sel.host,
        allocator: sel.allocator,
        ...query,
        start_ps: query.start_ps == null ? null : Math.floor(query.start_ps),
        end_ps: query.end_ps == null ? null : Math.ceil(query.end_ps),
      },
      signal,
    );
  },
  /** Every host of a multi-host run, one row per host and allocator, from the server's cache. */
  overview(run: string, signal?: AbortSignal): Promise<Overview> {
    return getJson('overview', {run}, signal);
  },
  /** Run B (the change) against run A (the base); a host is sent only when given. */
  compare(a: {run: string; host: string}, b: {run: string; host: string}, signal?: AbortSignal): Promise<Comparison> {
    return getJson('compare', {run_a: a.run, run_b: b.run, host_a: a.host, host_b: b.host}, signal);
  },
  /** `memory_space` is sent only when it is not 0 (the default). */
  module(run: string, host: string, module: Pick<ModuleSummary, 'name' | 'memory_space'>, points: number, signal?: AbortSignal): Promise<ModuleDetail> {
    const memory_space = module.memory_space ? module.memory_space : null;
    return getJson('module', {run, host, module: module.name, memory_space, points}, signal);
  },
};
