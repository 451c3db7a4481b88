// Number formatting: sizes in binary units (KiB, MiB, GiB), times from picoseconds, wall-clock times.

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/**
 * `value` to `digits` decimals as Python's format writes it (analyses/words.py): the nearest, and an exact tie
 * to the even digit, where toFixed takes the one away from zero (2.5 -> "2", 1.25 -> "1.2").
 */
function fixed(value: number, digits: number): string {
  const rounded = value.toFixed(digits);
  // A double's binary fraction ends within 100 decimals (it has at most 52 bits below 1), so this is exact.
  const exact = value.toFixed(100);
  const point = exact.indexOf('.');
  if (point < 0 || !/^50*$/.test(exact.slice(point + 1 + digits))) return rounded;
  const truncated = exact.slice(0, digits ? point + 1 + digits : point);
  return Number(truncated[truncated.length - 1]) % 2 === 0 ? truncated : rounded;
}

/** 1536 -> "1.5 KiB"; 524288 -> "512 KiB"; as the server's words.format_bytes. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  const sign = bytes < 0 ? '-' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 || value >= 100 || Number.isInteger(value) ? 0 : 1;
  return `${sign}${fixed(value, digits)} ${BYTE_UNITS[unit]}`;
}

/** The capacity a peak is shown of, 0 when unknown: one no larger than the peak means no free memory was reported
 * or none was left (analyses/capacity.py's known_capacity; tests/cases/format.json holds both). */
export function knownCapacity(capacity: number, peak: number): number {
  return capacity > peak ? capacity : 0;
}

/** Bytes of a capacity: "20 GiB of 31.3 GiB (64%)", or the bytes alone when the capacity is unknown, as the CLI. */
export function formatBytesOf(bytes: number | null | undefined, capacity: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return formatBytes(bytes);
  const known = knownCapacity(capacity ?? 0, bytes);
  if (!known) return formatBytes(bytes);
  return `${formatBytes(bytes)} of ${formatBytes(known)} (${formatFraction(bytes / known)})`;
}

/**
 * Tensor bytes, the basis of every byte figure, and the allocator's chunks when they read differently:
 * ["12.5 MiB", "12.6 MiB"], or ["512 KiB", null] when the chunks say the same.
 */
export function tensorAndChunks(tensor: number, chunks: number): [string, string | null] {
  const shown = formatBytes(tensor);
  const allocated = formatBytes(chunks);
  return [shown, allocated === shown ? null : allocated];
}

/** A change in bytes, always signed: "+512 KiB". */
export function formatBytesDelta(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  return bytes > 0 ? `+${formatBytes(bytes)}` : formatBytes(bytes);
}

const TIME_UNITS: [number, string][] = [
  [1e12, 's'],
  [1e9, 'ms'],
  [1e6, 'µs'],
  [1e3, 'ns'],
];

/** Picoseconds -> "12.5 ms". */
export function formatPs(ps: number | null | undefined): string {
  if (ps === null || ps === undefined || !Number.isFinite(ps)) return '—';
  const abs = Math.abs(ps);
  for (const [scale, unit] of TIME_UNITS) {
    if (abs >= scale) {
      const v = ps / scale;
      return `${v.toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2)} ${unit}`;
    }
  }
  return `${ps} ps`;
}

/** Seconds since the epoch -> "2027-01-15 08:40:00", in the browser's time zone (as TensorBoard shows wall times). */
export function formatDateTime(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const d = new Date(Math.round(seconds) * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/**
 * Axis ticks for wall-clock times (seconds since the epoch): "08:40", the date below the first tick and
 * wherever the day changes; with seconds when ticks are under a minute apart.
 */
export function clockTicks(values: number[]): string[] {
  const finite = values.filter((v) => Number.isFinite(v));
  const gaps = finite.slice(1).map((v, i) => v - finite[i]).filter((g) => g > 0);
  const seconds = gaps.length > 0 && Math.min(...gaps) < 60;
  let day = '';
  return values.map((v) => {
    if (!Number.isFinite(v)) return '';
    const [date, time] = formatDateTime(v).split(' ');
    const clock = seconds ? time : time.slice(0, 5);
    const label = date === day ? clock : `${clock}\n${date}`;
    day = date;
    return label;
  });
}

export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return n.toLocaleString('en-US');
}

/** English plural of a noun, as the server's words.plural: "family" -> "families", "process" -> "processes". */
export function plural(word: string): string {
  if (word.length > 1 && word.endsWith('y') && !'aeiou'.includes(word[word.length - 2])) return `${word.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(word)) return `${word}es`;
  return `${word}s`;
}

/**
 * A count and its noun, singular for exactly one: "1 buffer", "1,024 buffers", "0 families"; `many` for a plural
 * the rule does not make. The one way the tab words a count (the server's words.count_of).
 */
export function countOf(n: number, word: string, many?: string): string {
  return `${formatCount(n)} ${n === 1 ? word : (many ?? plural(word))}`;
}

/** A change in a count, always signed: "+25", "0", "-3". */
export function formatCountDelta(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return n > 0 ? `+${formatCount(n)}` : formatCount(n);
}

export function formatFraction(f: number | null | undefined): string {
  if (f === null || f === undefined || !Number.isFinite(f)) return '—';
  if (f > 0 && f < 0.0005) return '< 0.1%';
  return `${fixed(f * 100, f < 0.1 ? 1 : 0)}%`;
}

export function formatStep(step: number | null | undefined): string {
  return step === null || step === undefined ? '—' : `step ${step}`;
}

/** Axis ticks for byte scales: "0", "512 KiB", "1 MiB". */
export function byteTicks(values: number[]): string[] {
  return values.map((v) => (v === 0 ? '0' : formatBytes(v)));
}

/**
 * Axis ticks for time scales, all in the unit of the largest and with the digits their spacing needs: a 10 ms
 * window 9.72 s into a profile reads "9.720 s", "9.722 s", never "9.72 s" at every tick.
 */
export function timeTicks(values: number[]): string[] {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length < 2) return values.map((v) => (v === 0 ? '0' : formatPs(v)));
  const largest = Math.max(...finite.map((v) => Math.abs(v)));
  const [scale, unit] = TIME_UNITS.find(([s]) => largest >= s) ?? [1, 'ps'];
  const gaps = finite.slice(1).map((v, i) => Math.abs(v - finite[i])).filter((g) => g > 0);
  const step = gaps.length ? Math.min(...gaps) : largest;
  // Enough decimals to write one step exactly (2.5 ms apart: "2.5 ms", not "3 ms"), and no more than a picosecond's.
  let exact = Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9));
  while (exact < 3 && Math.abs(Math.round((step / scale) * 10 ** exact) - (step / scale) * 10 ** exact) > 1e-6) exact++;
  const decimals = Math.min(exact, Math.round(Math.log10(scale)));
  return values.map((v) => (v === 0 ? '0' : `${(v / scale).toFixed(decimals)} ${unit}`));
}

/**
 * A TPU program's id is a 64-bit fingerprint: in a label, its last digits tell same-name programs apart. The name
 * before it may be any word characters (Python's \w), its digits are ASCII.
 */
const LONG_PROGRAM_ID = /(?<=[\p{L}\p{N}_.-])\((-?[0-9]{7,})\)/gu;
const SHORT_ID_DIGITS = 4;

/** A label with each long program id cut to its last digits, as the server's labels (analyses/words.py). */
export function shortProgram(text: string): string {
  return text.replace(LONG_PROGRAM_ID, (_m, id: string) => `(…${id.slice(-SHORT_ID_DIGITS)})`);
}

/**
 * How one host's times and steps read. `eventPs`: its clock counts allocations, not time (a PyTorch memory snapshot
 * without time_us), this many ps an allocation; `moment`: it holds the buffers live at one moment, no times at all
 * (a JAX device memory profile, a snapshot without history); `steps`: false when its steps are time windows or
 * there are none.
 */
export interface HostClock {
  eventPs: number | null;
  steps: boolean;
  moment?: boolean;
}

export function hostClock(host: {event_clock_ps?: number | null; step_source?: {kind: string}; one_moment?: boolean} | undefined): HostClock {
  const kind = host?.step_source?.kind;
  return {eventPs: host?.event_clock_ps || null, steps: kind !== 'time_windows' && kind !== 'none', moment: !!host?.one_moment};
}

/** Whether the host's clock tells time: not one moment, not an order of allocations. */
export function tellsTime(clock: HostClock): boolean {
  return !clock.moment && !clock.eventPs;
}

/** What the x axis of a host's charts counts: "time", or "allocation #" when the file records an order, no times. */
export function axisLabel(clock: HostClock): string {
  return clock.eventPs ? 'allocation # (the file records their order, no times)' : 'time';
}

/**
 * A moment: "12.5 ms"; on an allocation clock "allocation #98", or "after allocation #98" for what came between it
 * and the next (a free); "the moment the file was written" for one moment.
 */
export function formatWhen(ps: number | null | undefined, clock: HostClock): string {
  if (clock.moment) return 'the moment the file was written';
  if (!clock.eventPs || ps === null || ps === undefined || !Number.isFinite(ps)) return formatPs(ps);
  const n = Math.floor(ps / clock.eventPs);
  return ps % clock.eventPs === 0 ? `allocation #${formatCount(n)}` : `after allocation #${formatCount(n)}`;
}

/** Axis ticks: timeTicks, or whole allocation numbers ("#98") on an allocation clock, fractions left blank. */
export function whenTicks(values: number[], clock: HostClock): string[] {
  const per = clock.eventPs;
  if (!per) return timeTicks(values);
  return values.map((v) => (Number.isFinite(v) && Math.abs(v / per - Math.round(v / per)) < 1e-6 ? `#${formatCount(Math.round(v / per))}` : ''));
}

/** Tick steps of an allocation axis: whole allocations, 1, 2, 5, 10, ... of them. */
export function allocationIncrs(clock: HostClock): number[] | undefined {
  const per = clock.eventPs;
  if (!per) return undefined;
  const steps: number[] = [];
  for (let scale = 1; scale <= 1e12; scale *= 10) steps.push(per * scale, per * 2 * scale, per * 5 * scale);
  return steps;
}

/** A step, or "no steps" when the host's steps are time windows (or none): a window's number is no step. */
export function formatStepIn(step: number | null | undefined, clock: HostClock): string {
  return clock.steps ? formatStep(step) : 'no steps';
}
