"""A run's captures as one history: how memory in use moves over hours, per allocator, and which family grows.

A leak of a few KiB per step hides inside a capture of a few seconds; across
captures taken minutes or hours apart it shows. Each allocator's captures
make a series, in time order. Its measure is what outlives every step: a
profile's heap floor (the least it held at any moment of its window), a
snapshot's live bytes. A series of at least MIN_CAPTURES captures leaks when
that measure rose between most consecutive captures (RISING_SHARE) and by more
than noise (MIN_RISE_BYTES, or MIN_RISE_SHARE of its peak). The rate is fitted
by least squares, per hour of wall-clock time and per step when the captures'
step numbers are known. The culprit is the family that grew in the most
captures: within each (a profile's growing families), or from one snapshot to
the next.

Captures of different programs, or of different hosts, are never merged into
one series: the history says so.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from tb_leakfinder.analyses.words import format_bytes, format_duration_ps
from tb_leakfinder.model.history import SNAPSHOT, CapturePoint, FamilyPoint

LEAK = "leak"
NO_LEAK = "no_leak"
INCONCLUSIVE = "inconclusive"
_SEVERITY = {NO_LEAK: 0, INCONCLUSIVE: 1, LEAK: 2}
MIN_CAPTURES = 3
RISING_SHARE = 2 / 3
MIN_RISE_BYTES = 64 << 10
MIN_RISE_SHARE = 0.01
GROWING = "growing"
MAX_FAMILIES = 10


@dataclass
class FamilyTrend:
    key: str
    label: str  # as the latest capture names it
    where: str
    stack: list[str]
    bytes_first: int
    bytes_last: int
    growth_bytes: int  # last less first
    growing_captures: int  # captures it grew in (within a profile), or snapshots after which it held more
    bytes_per_step: float  # its rate within the profiles that saw it grow (median), or across snapshots
    bytes_per_hour: float  # across snapshots over wall-clock time; a profile's rate per step at the job's steps per hour


@dataclass
class Series:
    host: str
    memory_id: str
    name: str
    captures: list[CapturePoint]  # in time order
    verdict: str
    reason: str
    rise_bytes: int  # the measure's last less its first
    bytes_per_hour: float
    bytes_per_step: float | None  # None when the captures' step numbers are not known
    hours_to_oom: float | None
    capacity_bytes: int
    families: list[FamilyTrend]  # those that grew, most captures first


@dataclass
class History:
    run: str  # the TensorBoard run whose captures these are
    num_captures: int
    verdict: str
    reason: str
    note: str | None  # captures of different hosts or programs: why they are not one series
    series: list[Series]  # worst first


def measure(point: CapturePoint) -> int:
    """What a capture says outlives every step: a snapshot's live bytes, a profile's heap floor."""
    return point.heap_end_bytes if point.kind == SNAPSHOT else point.heap_floor_bytes


def run_history(run: str, points: list[CapturePoint], num_captures: int | None = None) -> History:
    """The history of a run's captures (each allocator of each host its own series); `num_captures` counts those
    without any allocator too (no memory events), which give no point."""
    captures = {p.capture for p in points}
    by_series: dict[tuple[str, str], list[CapturePoint]] = {}
    for p in sorted(points, key=lambda p: (p.time_s, p.capture)):
        by_series.setdefault((p.host, p.memory_id), []).append(p)
    series = [_series(host, memory_id, mine) for (host, memory_id), mine in by_series.items()]
    series.sort(key=lambda s: (-_SEVERITY[s.verdict], -s.rise_bytes))
    hosts = sorted({p.host for p in points})
    note = None
    if len(hosts) > 1:
        note = f"captures come from {len(hosts)} hosts ({', '.join(hosts[:5])}): each host's history is its own"
    if not series:
        total = num_captures if num_captures is not None else len(captures)
        return History(run, total, INCONCLUSIVE, f"{run}: no memory events in its {total} captures", note, [])
    top = series[0]
    reason = top.reason if len(series) == 1 else f"{top.name} on {top.host}: {top.reason}"
    return History(run, num_captures if num_captures is not None else len(captures), top.verdict, reason, note, series)


def count_unreadable(h: History, unreadable: int) -> History:
    """`h`, whose points come from the captures that could be read, saying how many of its captures could not:
    a verdict over fewer captures than the run has is not to be mistaken for one over all of them."""
    if not unreadable:
        return h
    if unreadable >= h.num_captures:
        return replace(h, verdict=INCONCLUSIVE, reason=f"{h.run}: none of its {h.num_captures} captures could be read")
    return replace(h, reason=f"{h.reason} ({unreadable} of {h.num_captures} captures could not be read)")


def _series(host: str, memory_id: str, points: list[CapturePoint]) -> Series:
    name = points[-1].name
    values = np.asarray([measure(p) for p in points], np.float64)
    times = np.asarray([p.time_s for p in points], np.float64)
    steps = [p.last_step if p.kind == SNAPSHOT else p.first_step for p in points]
    rise = int(values[-1] - values[0]) if len(values) else 0
    per_hour = _slope(times, values) * 3600.0 if len(points) > 1 else 0.0
    per_step = _slope(np.asarray(steps, np.float64), values) if len(points) > 1 and None not in steps else None
    capacity = max((p.capacity_bytes for p in points), default=0)
    families = _families(points)
    span = format_duration_ps((times[-1] - times[0]) * 1e12) if len(points) > 1 else "one capture"
    programs = sorted({p.program for p in points if p.program})
    common = (host, memory_id, name, points)
    if len(programs) > 1:
        why = f"Inconclusive: its captures come from different programs ({'; '.join(programs[:3])}): not merged"
        return Series(*common, INCONCLUSIVE, why, rise, per_hour, per_step, None, capacity, families)
    if len(points) < MIN_CAPTURES:
        why = (
            f"Inconclusive: {len(points)} capture(s) over {span} ({_signed(rise)}); "
            f"a history needs at least {MIN_CAPTURES} to tell growth from noise"
        )
        return Series(*common, INCONCLUSIVE, why, rise, per_hour, per_step, None, capacity, families)
    rising = int(np.count_nonzero(np.diff(values) > 0))
    peak = max(p.heap_peak_bytes for p in points)
    enough = rise > max(MIN_RISE_BYTES, MIN_RISE_SHARE * peak)
    if rising < math.ceil(RISING_SHARE * (len(points) - 1)) or not enough or per_hour <= 0:
        why = (
            f"No leak: what outlives each step moved {_signed(rise)} over {span} across {len(points)} captures, "
            f"rising between {rising} of {len(points) - 1} of them"
        )
        return Series(*common, NO_LEAK, why, rise, per_hour, per_step, None, capacity, families)
    left = capacity - values[-1]
    hours = float(left / per_hour) if capacity and left > 0 else None
    rate = f", {_signed(per_step)} per step" if per_step is not None else ""
    culprit = ""
    if families:
        f = families[0]
        culprit = f", from {f.label}" + (f" at {f.where}" if f.where and f.where not in f.label else "")
    oom = f"; out of memory in about {format_duration_ps(hours * 3600e12)}" if hours is not None else ""
    why = f"Leak: {_signed(rise)} over {span} across {len(points)} captures{rate}{culprit}{oom}"
    return Series(*common, LEAK, why, rise, per_hour, per_step, hours, capacity, families)


def _families(points: list[CapturePoint]) -> list[FamilyTrend]:
    """The families that grew: within the profiles that saw them grow, or from snapshot to snapshot."""
    seen: dict[str, list[tuple[int, FamilyPoint]]] = {}
    for k, p in enumerate(points):
        for f in p.families:
            seen.setdefault(f.key, []).append((k, f))
    # The job's pace, where the captures' step numbers and times tell it: what turns a rate per step into one per hour.
    steps = [p.first_step for p in points]
    times = np.asarray([p.time_s for p in points], np.float64)
    known = None not in steps and len(points) > 1
    steps_per_hour = _slope(times, np.asarray(steps, np.float64)) * 3600.0 if known else 0.0
    trends = []
    for key, found in seen.items():
        first, last = found[0][1], found[-1][1]
        if points[0].kind == SNAPSHOT:
            held = [f.bytes for _, f in found]
            grew = sum(1 for a, b in itertools.pairwise(held) if b > a)
            x = [points[k].last_step for k, _ in found]
            numbered = [s for s in x if s is not None]
            fitted = len(found) > 1 and len(numbered) == len(x) and len(set(numbered)) > 1
            rate = _slope(np.asarray(numbered, np.float64), np.asarray(held, np.float64)) if fitted else 0.0
            at = np.asarray([points[k].time_s for k, _ in found], np.float64)
            hourly = _slope(at, np.asarray(held, np.float64)) * 3600.0
        else:
            rates = [f.bytes_per_step for _, f in found if f.kind == GROWING]
            grew = len(rates)
            rate = float(np.median(rates)) if rates else 0.0
            hourly = rate * steps_per_hour
        if grew == 0:
            continue
        growth = last.bytes - first.bytes
        trends.append(FamilyTrend(key, last.label, last.where, last.stack, first.bytes, last.bytes, growth, grew, rate, hourly))
    trends.sort(key=lambda t: (-t.growing_captures, -t.growth_bytes, -t.bytes_per_step))
    return trends[:MAX_FAMILIES]


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y over x; 0 when x does not vary."""
    if len(x) < 2 or float(np.ptp(x)) == 0:
        return 0.0
    return float(np.polyfit(x - x[0], y, 1)[0])


def _signed(n: float) -> str:
    return f"+{format_bytes(n)}" if n >= 0 else format_bytes(n)
