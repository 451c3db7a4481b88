"""Comparing two runs' analyses: which never-freed families are new, fixed, grown or shrunk.

Works on the analysis objects, so a JSON key's name has no say in a diff.
Groups are matched per allocator by (op, shape, dtype, region), with op names
normalised by `normalize_name`: TensorFlow and XLA number repeated ops
(`Mul_1`, `dense/MatMul_3`, `fusion.12`), and those numbers change from one
build of a program to the next without the program changing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from tb_leakfinder.analyses.pipeline import AllocatorAnalysis
from tb_leakfinder.analyses.static_buffers import ModuleSummaryResult, WholeProgramBufferResult
from tb_leakfinder.analyses.suspects import GROWING
from tb_leakfinder.analyses.verdict import LEAK, Verdict, family_label, worst
from tb_leakfinder.analyses.words import format_bytes, module_base_name, normalize_name
from tb_leakfinder.model.hlo import SMALL_BUFFER_BYTES

NEW, FIXED, GROWN, SHRUNK, UNCHANGED = "new", "fixed", "grown", "shrunk", "unchanged"
STATUS_ORDER = (NEW, GROWN, SHRUNK, FIXED, UNCHANGED)
# Changes smaller than this share of the larger side count as unchanged: BFC rounds sizes.
RELATIVE_TOLERANCE = 0.05

T = TypeVar("T")


@dataclass
class HostSide:
    """One host of a side: its verdict, allocators and compiled modules (none when it could not be read)."""

    host: str
    verdict: Verdict
    allocators: list[AllocatorAnalysis]
    modules: list[ModuleSummaryResult]


@dataclass
class RunSide:
    run: str
    hosts: list[HostSide]

    @property
    def verdict(self) -> str:
        return worst([h.verdict.verdict for h in self.hosts])


@dataclass
class DeltaResult:
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a


@dataclass
class FamilySide:
    """A never-freed family of one side, its numbered ops merged (`Mul` and `Mul_1` add up)."""

    kind: str
    count: int
    chunk_bytes: int
    requested_bytes: int
    bytes_per_step: float
    label: str  # the family's, as its side's report words it
    onset_step: int | None  # the earliest onset of its growing families
    late_onset: bool  # one of them began well into the window


@dataclass
class FamilyDiffResult:
    op: str  # normalised
    shape: str
    dtype: str
    region: str
    status: str
    a: FamilySide | None
    b: FamilySide | None

    @property
    def new_leak(self) -> bool:
        """B's family grows and A's did not (or A had none)."""
        return self.b is not None and self.b.kind == GROWING and not (self.a is not None and self.a.kind == GROWING)


@dataclass
class AllocatorDiffResult:
    a: AllocatorAnalysis | None
    b: AllocatorAnalysis | None
    peak_bytes_in_use: DeltaResult
    never_freed_bytes: DeltaResult
    never_freed_requested_bytes: DeltaResult
    growth_bytes_per_step: DeltaResult
    num_allocations: DeltaResult
    num_deallocations: DeltaResult
    families: list[FamilyDiffResult]  # by status (new first), then by the change in bytes


@dataclass
class ModuleDiffResult:
    name: str  # without the program id
    name_a: str | None
    name_b: str | None
    peak_heap_bytes: DeltaResult
    live_out_bytes: DeltaResult
    whole_program_buffers_added: list[WholeProgramBufferResult]
    whole_program_buffers_removed: list[WholeProgramBufferResult]


@dataclass
class HostDiffResult:
    a: HostSide
    b: HostSide
    allocators: list[AllocatorDiffResult]
    modules: list[ModuleDiffResult]


@dataclass
class Comparison:
    run_a: str
    run_b: str
    verdict_a: str
    verdict_b: str
    hosts: list[HostDiffResult]
    unmatched_hosts: list[str]
    regressions: list[str] = field(default_factory=list)  # sentences for what B brings that A did not have

    @property
    def regression(self) -> bool:
        return bool(self.regressions)


def _changed(a: float, b: float) -> int:
    """-1, 0 or 1: whether b is clearly below, about equal to, or clearly above a."""
    if abs(b - a) <= RELATIVE_TOLERANCE * max(abs(a), abs(b)):
        return 0
    return 1 if b > a else -1


FamilyKey = tuple[str, str, str, str]


def _merge(a: AllocatorAnalysis | None) -> dict[FamilyKey, FamilySide]:
    """The allocator's never-freed families by normalised key."""
    merged: dict[FamilyKey, FamilySide] = {}
    if a is None:
        return merged
    strings = a.events.strings
    for g in a.suspects.families:
        key = (normalize_name(strings[g.op]), g.shape, strings[g.dtype], strings[g.region])
        m = merged.get(key)
        if m is None:
            merged[key] = FamilySide(
                g.kind,
                g.count,
                g.chunk_bytes,
                g.requested_bytes,
                g.bytes_per_step,
                family_label(g, strings, a.sites),
                g.onset_step,
                g.late_onset,
            )
            continue
        m.count += g.count
        m.chunk_bytes += g.chunk_bytes
        m.requested_bytes += g.requested_bytes
        m.bytes_per_step += g.bytes_per_step
        if g.kind == GROWING:
            m.kind = GROWING
            if g.onset_step is not None and (m.onset_step is None or g.onset_step < m.onset_step):
                m.onset_step, m.late_onset = g.onset_step, g.late_onset
    return merged


def _family_status(a: FamilySide | None, b: FamilySide | None) -> str:
    if a is None:
        return NEW
    if b is None:
        return FIXED
    if b.kind == GROWING and a.kind != GROWING:
        return GROWN
    growing = GROWING in (a.kind, b.kind)
    change = _changed(a.bytes_per_step, b.bytes_per_step) if growing else _changed(a.chunk_bytes, b.chunk_bytes)
    return {1: GROWN, -1: SHRUNK, 0: UNCHANGED}[change]


def diff_families(a: AllocatorAnalysis | None, b: AllocatorAnalysis | None) -> list[FamilyDiffResult]:
    side_a, side_b = _merge(a), _merge(b)
    rows = [
        FamilyDiffResult(*key, _family_status(side_a.get(key), side_b.get(key)), side_a.get(key), side_b.get(key))
        for key in list(side_a) + [k for k in side_b if k not in side_a]
    ]

    def change(g: FamilyDiffResult) -> int:
        return abs((g.b.chunk_bytes if g.b else 0) - (g.a.chunk_bytes if g.a else 0))

    rows.sort(key=lambda g: (STATUS_ORDER.index(g.status), -change(g)))
    return rows


def _pair_by_name(items_a: list[T], items_b: list[T], key: Callable[[T], Hashable]) -> list[tuple[T | None, T | None]]:
    """Pairs with equal `key`; two lone items are paired whatever their names."""
    if len(items_a) == len(items_b) == 1:
        return [(items_a[0], items_b[0])]
    by_b = {key(x): x for x in items_b}
    pairs: list[tuple[T | None, T | None]] = [(x, by_b.pop(key(x), None)) for x in items_a]
    return pairs + [(None, x) for x in by_b.values()]


def diff_allocator(a: AllocatorAnalysis | None, b: AllocatorAnalysis | None) -> AllocatorDiffResult:
    def delta(measure: Callable[[AllocatorAnalysis], float]) -> DeltaResult:
        return DeltaResult(measure(a) if a else 0, measure(b) if b else 0)

    return AllocatorDiffResult(
        a,
        b,
        peak_bytes_in_use=delta(lambda x: x.summary.peak_bytes_in_use),
        never_freed_bytes=delta(lambda x: x.summary.never_freed_bytes),
        never_freed_requested_bytes=delta(lambda x: x.summary.never_freed_requested_bytes),
        growth_bytes_per_step=delta(lambda x: x.summary.growth_bytes_per_step),
        num_allocations=delta(lambda x: x.summary.num_allocations),
        num_deallocations=delta(lambda x: x.summary.num_deallocations),
        families=diff_families(a, b),
    )


def _whole_program(m: ModuleSummaryResult | None) -> dict[tuple[str, str, str], WholeProgramBufferResult]:
    """The module's whole-program buffers by (normalised instruction, shape, reason); small ones are not compared."""
    buffers = m.whole_program_buffers if m else []
    return {(normalize_name(w.instruction), w.shape, w.reason): w for w in buffers if w.bytes >= SMALL_BUFFER_BYTES}


def diff_module(a: ModuleSummaryResult | None, b: ModuleSummaryResult | None) -> ModuleDiffResult:
    wa, wb = _whole_program(a), _whole_program(b)
    either = a or b
    return ModuleDiffResult(
        name=module_base_name(either.name if either else ""),
        name_a=a.name if a else None,
        name_b=b.name if b else None,
        peak_heap_bytes=DeltaResult(a.peak_heap_bytes if a else 0, b.peak_heap_bytes if b else 0),
        live_out_bytes=DeltaResult(a.live_out_bytes if a else 0, b.live_out_bytes if b else 0),
        whole_program_buffers_added=[w for k, w in wb.items() if k not in wa],
        whole_program_buffers_removed=[w for k, w in wa.items() if k not in wb],
    )


def diff_hosts(a: HostSide, b: HostSide) -> HostDiffResult:
    allocators = [diff_allocator(x, y) for x, y in _pair_by_name(a.allocators, b.allocators, lambda x: x.label)]
    module_pairs = _pair_by_name(a.modules, b.modules, lambda m: (module_base_name(m.name), m.memory_space))
    return HostDiffResult(a, b, allocators, [diff_module(x, y) for x, y in module_pairs])


def regressions(hosts: list[HostDiffResult]) -> list[str]:
    """Sentences for what B brings that A did not have: a new growing family, or a leak verdict."""
    found = []
    for h in hosts:
        if h.b.verdict.verdict == LEAK and h.a.verdict.verdict != LEAK:
            found.append(f"host {h.b.host}: B leaks and A does not: {h.b.verdict.reason}")
        for alloc in h.allocators:
            for g in alloc.families:
                if g.new_leak and g.b is not None:
                    found.append(
                        f"host {h.b.host}, allocator {alloc.b.label if alloc.b else None}: new growing family {g.b.label} "
                        f"(+{format_bytes(g.b.bytes_per_step)} per step{_onset_words(g.b)})"
                    )
    return found


def _onset_words(side: FamilySide) -> str:
    return f" from step {side.onset_step} on" if side.late_onset else ""


def compare(run_a: RunSide, run_b: RunSide, host_a: str | None = None, host_b: str | None = None) -> Comparison:
    """The comparison of two runs (or two hosts of them): `b` is the change, `a` the base."""
    hosts_a = [h for h in run_a.hosts if host_a is None or h.host == host_a]
    hosts_b = [h for h in run_b.hosts if host_b is None or h.host == host_b]
    pairs = _pair_by_name(hosts_a, hosts_b, lambda h: h.host)
    hosts = [diff_hosts(x, y) for x, y in pairs if x is not None and y is not None]
    unmatched = [x.host for x, y in pairs if x is not None and y is None] + [y.host for x, y in pairs if x is None and y]
    return Comparison(run_a.run, run_b.run, run_a.verdict, run_b.verdict, hosts, unmatched, regressions(hosts))
