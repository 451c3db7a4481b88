"""What grows outside the framework's allocator: the training process's memory and its child processes' (DataLoader
workers), recorded by the capture helper at each step's end (model.recordings), judged beside the allocators' heap.

The training process is followed by its RSS: the pages it has resident, which a worker's copy-on-write never changes.
Its rate less the growth of the host-memory allocators' heap (a CPU allocator's buffers are in that RSS too) is what
grows outside them, so an allocator's own leak is not counted twice. A child is followed by its USS (its private
pages: what a per-worker cache or a copy-on-read of the Dataset's Python objects adds, which its RSS does not show,
since a forked worker's RSS already counts the pages it shares with its parent), else its PSS, else its RSS.

Process memory on two layers: capture/process_memory.py records it in the training process; here what was recorded
is judged.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from tb_leakfinder.analyses.verdict import FRAMEWORK_NAMES, INCONCLUSIVE, LEAK, NO_LEAK
from tb_leakfinder.analyses.words import count_of, format_bytes
from tb_leakfinder.model.memory import Steps
from tb_leakfinder.model.recordings import ProcessMemoryRecord, ProcessReading, ProcessSample

# A process grows when its fitted rate reaches this. The clean runs of tests/integration/test_process_memory.py (a
# 2-worker DataLoader over a preallocated array, PyTorch's profiler recording every op with its stack) stay under
# 0.3 MiB per step in the training process and 0.05 MiB in a worker: see docs/process_memory.md.
THRESHOLD_BYTES_PER_STEP = 1 << 20
# Fewer samples fit no rate worth a verdict (the allocator's verdict needs as many steps).
MIN_SAMPLES = 4
# Growth must go on through the window: no rise between two readings makes more than this share of the whole rise,
# so that a one-time rise (a buffer made once, an arena grown once) is not read as a leak.
STEADY_SHARE = 0.6
# The allocators' heap growth is always taken off; a sentence names it from this rate on.
MENTIONED_BYTES_PER_STEP = 64 << 10
# Workers whose rates are within this share of their mean are said to grow "each" by that mean.
ALIKE_SHARE = 0.25
RSS, USS, PSS = "rss", "uss", "pss"
MEASURE_WORDS = {RSS: "RSS", USS: "USS", PSS: "PSS"}


@dataclass
class ProcessCauseResult:
    """A likely reason for memory that grows outside the allocator, with what to do about it."""

    id: str
    title: str
    fix: str
    doc: str  # a docs/ page and anchor


CAUSES = {
    "worker_cache": ProcessCauseResult(
        "worker_cache",
        "a per-worker cache, or copy-on-read of the Dataset's Python objects (each worker's reads of their refcounts"
        " copy the pages they sit on)",
        "keep the Dataset's data in numpy arrays or tensors rather than lists and dicts of Python objects; bound or"
        " drop caches filled in __getitem__ (each worker fills its own copy)",
        "docs/process_memory.md#dataloader-workers",
    ),
    "kept_objects": ProcessCauseResult(
        "kept_objects",
        "numpy arrays or Python objects kept by the training loop (a list of .numpy() copies, of batches, of metrics)",
        "keep a scalar (.item()) or a running aggregate, or bound the list; tracemalloc's snapshot comparison names the line",
        "docs/process_memory.md#objects-kept-by-the-loop",
    ),
    "native": ProcessCauseResult(
        "native",
        "native memory: a library's own allocations (a decoder, a tokenizer, a C extension), or malloc's arenas not"
        " given back to the system",
        "find the library with a native memory profiler (memray run --native); MALLOC_ARENA_MAX=2 or jemalloc when"
        " the growth stops after a while",
        "docs/process_memory.md#native-memory",
    ),
}


@dataclass
class ProcessTrend:
    """One process's memory over the window's steps, and its fitted rate."""

    pid: int
    measure: str  # RSS, USS or PSS
    bytes: list[int | None]  # at each sample of the window (None: not read at that step)
    bytes_per_step: float
    num_samples: int  # the samples read
    grows: bool  # the rate reaches the threshold and growth goes on through the window


@dataclass
class ProcessMemoryAnalysis:
    verdict: str  # LEAK (grows outside the allocator), NO_LEAK or INCONCLUSIVE
    reason: str
    source: str  # "psutil" or "proc"
    status: str  # the recorder's: complete, partial, failed
    warning: str
    steps: list[int]  # the step each sample ended
    time_ps: list[int | None]  # each sample's step end, in the profile's clock; None for a step it lacks
    main: ProcessTrend | None
    rss_bytes_per_step: float  # the training process's RSS rate, before anything is taken off
    allocator_bytes_per_step: float  # the host-memory allocators' heap growth, taken off it
    allocators: list[str]  # their labels
    outside_bytes_per_step: float  # the training process's rate outside the allocators (and malloc's free memory)
    workers: list[ProcessTrend]  # each child process of the window (DataLoader workers), by pid
    workers_bytes_per_step: float  # their rates summed
    workers_bytes: list[int | None]  # their memory summed at each sample (None where one of them was not read)
    # What glibc's malloc holds free grew by this much a step (fragmentation), also taken off; 0 where not known.
    malloc_free_bytes_per_step: float = 0.0
    threshold_bytes_per_step: int = THRESHOLD_BYTES_PER_STEP
    causes: list[ProcessCauseResult] = field(default_factory=list)


def fit_rate(steps: Sequence[int], values: Sequence[int | None]) -> tuple[float, int]:
    """The least-squares slope of the values read (bytes per step) and how many there were."""
    points = [(s, v) for s, v in zip(steps, values, strict=True) if v is not None]
    if len(points) < 2:
        return 0.0, len(points)
    x = np.array([p[0] for p in points], np.float64)
    y = np.array([p[1] for p in points], np.float64)
    if np.ptp(x) == 0:
        return 0.0, len(points)
    return float(np.polyfit(x, y, 1)[0]), len(points)


def steady(steps: Sequence[int], values: Sequence[int | None], floor: float = 0.0) -> bool:
    """Whether the values, less `floor` bytes a step (what is taken off them), rise through the window rather than at
    once: no rise between two readings makes more than STEADY_SHARE of the whole rise. A worker's readings are a
    staircase (it grows by each batch it makes, every other step with two workers) read now and then, so the rates
    of parts of the window are no test; a one-time rise (a buffer made once, an arena grown once) is one jump."""
    points = [(step, v - floor * (step - steps[0])) for step, v in zip(steps, values, strict=True) if v is not None]
    if len(points) < 2:
        return False
    rise = points[-1][1] - points[0][1]
    jumps = [b[1] - a[1] for a, b in itertools.pairwise(points)]
    return rise > 0 and max(jumps) <= STEADY_SHARE * rise


def _trend(pid: int, measure: str, steps: list[int], values: list[int | None], floor: float = 0.0) -> ProcessTrend:
    rate, count = fit_rate(steps, values)
    grows = count >= MIN_SAMPLES and rate - floor >= THRESHOLD_BYTES_PER_STEP and steady(steps, values, floor)
    return ProcessTrend(pid, measure, values, rate, count, grows)


def _measure(readings: list[ProcessReading | None]) -> str:
    """A child's measure: USS when read at enough steps, else PSS, else RSS (always read)."""
    for measure in (USS, PSS):
        if sum(1 for r in readings if r is not None and getattr(r, measure) is not None) >= MIN_SAMPLES:
            return measure
    return RSS


def analyze_process_memory(
    record: ProcessMemoryRecord,
    framework: str,
    steps: Steps,
    host_allocators: Sequence[tuple[str, float]],
) -> ProcessMemoryAnalysis:
    """The verdict on what grows outside the allocators. `host_allocators`: each host-memory allocator's label and
    heap growth per step (`Summary.growth_bytes_per_step`); `steps` place each sample at its step's end."""
    samples = sorted(record.samples, key=lambda s: s.step)
    numbers = [s.step for s in samples]
    ends = dict(zip(steps.step_num.tolist(), steps.end_ps.tolist(), strict=True))
    growing = [(label, rate) for label, rate in host_allocators if rate > 0]
    taken = Taken(sum(rate for _, rate in growing), [label for label, _ in growing])
    main: ProcessTrend | None = None
    workers: list[ProcessTrend] = []
    if samples:
        rss: list[int | None] = [s.main.rss for s in samples]
        taken.rss, _ = fit_rate(numbers, rss)
        fragmented = _fragmentation(samples)
        if fragmented is not None:
            taken.malloc_free, _ = fit_rate(numbers, fragmented)
            rss = [s.main.rss - (f or 0) for s, f in zip(samples, fragmented, strict=True)]
        main = _trend(samples[0].main.pid, RSS, numbers, rss, taken.allocators)
        main.bytes = [s.main.rss for s in samples]
        for pid in sorted({c.pid for s in samples for c in s.children}):
            readings = [next((c for c in s.children if c.pid == pid), None) for s in samples]
            measure = _measure(readings)
            workers.append(_trend(pid, measure, numbers, [None if r is None else getattr(r, measure) for r in readings]))
    judged = [w for w in workers if w.num_samples >= MIN_SAMPLES]
    summed: list[int | None] = []
    if judged:
        columns = list(zip(*(w.bytes for w in judged), strict=True))
        summed = [None if None in column else sum(v or 0 for v in column) for column in columns]
    verdict, reason, causes = _verdict(record, framework, len(samples), main, taken, judged)
    return ProcessMemoryAnalysis(
        verdict,
        reason,
        record.source,
        record.status,
        record.warning,
        numbers,
        [ends.get(n) for n in numbers],
        main,
        taken.rss,
        taken.allocators,
        taken.labels,
        taken.outside(),
        workers,
        sum(w.bytes_per_step for w in judged),
        summed,
        malloc_free_bytes_per_step=taken.malloc_free,
        causes=causes,
    )


def _fragmentation(samples: list[ProcessSample]) -> list[int | None] | None:
    """At each sample, the RSS growth since the first that malloc's free memory explains: what malloc holds free has
    grown by, but no more than the RSS growth malloc's bytes in use leave unexplained (a thread's arena holds free
    memory never touched, which RSS does not count). None where malloc does not say."""
    base = samples[0]
    result: list[int | None] = []
    for s in samples:
        if s.malloc_free is None or s.malloc_in_use is None or base.malloc_free is None or base.malloc_in_use is None:
            return None
        unexplained = (s.main.rss - base.main.rss) - (s.malloc_in_use - base.malloc_in_use)
        result.append(max(0, min(s.malloc_free - base.malloc_free, unexplained)))
    return result


@dataclass
class Taken:
    """The training process's RSS rate and what is taken off it: the allocators' heap growth, malloc's free memory."""

    allocators: float
    labels: list[str]
    rss: float = 0.0
    malloc_free: float = 0.0

    def outside(self) -> float:
        return self.rss - self.malloc_free - self.allocators

    def explained(self) -> str:
        """'(RSS +4.2 MiB/step, less the CPU allocator's heap growth +4 MiB/step)', or '' when nothing large is taken."""
        parts = []
        if self.allocators >= MENTIONED_BYTES_PER_STEP:
            parts.append(f"the {', '.join(self.labels)} allocator's heap growth {_rate(self.allocators)}")
        if abs(self.malloc_free) >= MENTIONED_BYTES_PER_STEP:
            parts.append(f"the freed memory malloc keeps {_rate(self.malloc_free)}")
        return f" (RSS {_rate(self.rss)}, less {' and '.join(parts)})" if parts else ""


def _rate(value: float) -> str:
    return f"{'+' if value >= 0 else '-'}{format_bytes(abs(value))}/step"


def _verdict(
    record: ProcessMemoryRecord,
    framework: str,
    num_samples: int,
    main: ProcessTrend | None,
    taken: Taken,
    workers: list[ProcessTrend],
) -> tuple[str, str, list[ProcessCauseResult]]:
    whose = f"{FRAMEWORK_NAMES.get(framework, framework)}'s allocator"
    children = "DataLoader workers" if framework == "torch" else "child processes"
    if main is None or main.num_samples < MIN_SAMPLES:
        why = f" ({record.warning})" if record.warning else ""
        return (
            INCONCLUSIVE,
            f"Process memory: {count_of(num_samples, 'step')} recorded{why}, too few to fit a rate; capture at least"
            f" {MIN_SAMPLES} steps.",
            [],
        )
    explained = taken.explained()
    parts: list[str] = []
    causes: list[ProcessCauseResult] = []
    if main.grows:
        parts.append(f"{_rate(taken.outside())} in the training process{explained}")
        causes.append(CAUSES["kept_objects"])
    leaking = [w for w in workers if w.grows]
    if leaking:
        parts.append(_workers_text(leaking, len(workers), children))
        causes.insert(0, CAUSES["worker_cache"])
    partial = f" Recorded only in part: {record.warning}." if record.warning else ""
    if parts:
        return LEAK, f"Memory grows outside {whose}: {'; '.join(parts)}.{partial}", [*causes, CAUSES["native"]]
    flat = [f"the training process {_rate(taken.outside())}{explained or ' (RSS)'}"]
    if workers:
        measure = MEASURE_WORDS[workers[0].measure]
        flat.append(f"{len(workers)} {children} {_rate(sum(w.bytes_per_step for w in workers))} in all ({measure})")
    grown = ""
    if explained and taken.rss >= THRESHOLD_BYTES_PER_STEP:
        grown = f" The training process's RSS grows {_rate(taken.rss)}: what is taken off it explains that."
    threshold = format_bytes(THRESHOLD_BYTES_PER_STEP)
    return NO_LEAK, f"Nothing grows outside {whose}: {', '.join(flat)}, under {threshold}/step.{grown}{partial}", []


def _workers_text(leaking: list[ProcessTrend], count: int, children: str) -> str:
    """'+2.0 MiB/step in each of 2 DataLoader workers', or each one's rate when they differ."""
    rates = [w.bytes_per_step for w in leaking]
    mean = sum(rates) / len(rates)
    if count == 1:
        return f"{_rate(mean)} in its one {children[:-1]}"
    if len(leaking) > 1 and all(abs(r - mean) <= ALIKE_SHARE * mean for r in rates):
        which = f"each of {count}" if len(leaking) == count else f"each of {len(leaking)} of {count}"
        return f"{_rate(mean)} in {which} {children}"
    listed = ", ".join(f"pid {w.pid} {_rate(w.bytes_per_step)}" for w in leaking)
    return f"{_rate(sum(rates))} in {len(leaking)} of {count} {children} ({listed})"
