"""A run's captures as one history: how memory in use moves over hours, per allocator, and which family grows.

A leak of a few KiB per step hides inside a capture of a few seconds; across
captures taken minutes or hours apart it shows. Each allocator's captures
make a series, in time order (by step numbers when the captures carry no time
of their own). Its measure is what outlives every step: a profile's heap floor
(the least it held at any moment of its window), a snapshot's live bytes. A
series of at least MIN_CAPTURES captures leaks when that measure rose between
most consecutive captures (RISING_SHARE) and by more than noise
(MIN_RISE_BYTES, or MIN_RISE_SHARE of its peak). The rate is fitted by least
squares: per capture, per step when the captures' step numbers are known, and
per hour of wall-clock time unless the captures' times are their files'
modification times within COPIED_WITHIN_S of each other (files copied
together, whose times say nothing of the job's pace).

A profile whose heap counts only what a profiler saw allocated (PyTorch's CPU
`Total Allocated`: `AllocatorPoint.profiled_heap`) never sees what the steps
between captures freed, nor what they kept: each capture's heap starts where
the last one's ended, with the temporaries freed in between still in it. Such
a series is never chained from one capture to the next: its measure is what
each capture kept within its own window (its heap's rate at its steps' ends
times its steps), and its rates are those windows' rates (WITHIN_CAPTURES).

The culprit is a family whose bytes kept within the windows agree with the
growth: one that grew in the profiles, or one made and kept in every window
(a slow leak, too slow for one window to show it growing); across snapshots,
the one that held more after most of them. When no family agrees, the growth
is unexplained: it was allocated before each window.

A series whose device memory profiles count more compiled programs capture
after capture (RISING_SHARE of them, MIN_NEW_PROGRAMS at least) has the
likely cause `recompile_per_step` (analyses/recompiles.py; recompile_cause): a function
compiled again each step. Its programs are the evidence, whatever its bytes
do: on CPU a program's code is not in the profile's bytes.

Captures of different programs, or of different hosts, are never merged into
one series: the history says so.

A tb_run's history on three layers: model/history.py declares its capture points; here the history is judged from
them; engine/history.py gathers them from the runs.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from tb_leakfinder.analyses.recompiles import RECOMPILE_FIX, RECOMPILE_PER_STEP
from tb_leakfinder.analyses.suspects import CauseResult
from tb_leakfinder.analyses.words import count_of, format_bytes, format_duration_ps
from tb_leakfinder.model.history import FILE_MTIME, ONE_MOMENT, PROCESS_PREFIX, SESSION_NAME, CapturePoint, FamilyPoint

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
COPIED_WITHIN_S = 10.0
# A series' compiled programs multiply when at least this many more were counted at its last capture than its first.
MIN_NEW_PROGRAMS = 2
# A family's buffers kept within the windows agree with the growth between captures when their number is within
# NOISE_SIGMAS standard deviations (of a count: its square root) and one buffer of what that growth predicts.
NOISE_SIGMAS = 2.0
# Series.rate_basis: what the rates are fitted to.
BETWEEN_CAPTURES = "between_captures"  # the measure from one capture to the next
WITHIN_CAPTURES = "within_captures"  # what each capture kept within its window (a profiled heap)


@dataclass
class FamilyTrend:
    key: str
    label: str  # as the latest capture names it
    where: str
    stack: list[str]
    bytes_first: int
    bytes_last: int
    growth_bytes: int  # last less first
    # captures it grew in (within a profile, or kept new buffers in each), or snapshots after which it held more
    growing_captures: int
    bytes_per_step: float  # its rate within the profiles (median where it grew, else what each window kept), or across snapshots
    bytes_per_hour: float | None  # a rate per step at the job's steps per hour, or across snapshots; None: no clock
    captures: list[str]  # the captures it appears in
    agrees: bool  # what it keeps within the windows (or holds across snapshots) accounts for the series' growth


@dataclass
class Series:
    host: str
    memory_id: str
    label: str
    captures: list[CapturePoint]  # in time order
    verdict: str
    reason: str
    rise_bytes: int  # the measure's last less its first
    bytes_per_hour: float | None  # None when the captures' times say nothing of the job's pace (time_note says why)
    bytes_per_step: float | None  # None when the captures' step numbers are not known
    bytes_per_capture: float
    hours_to_oom: float | None
    capacity_bytes: int
    families: list[FamilyTrend]  # those that grew, the culprit first
    time_note: str | None  # where the captures' times came from, when not from the captures themselves
    unexplained: str | None  # a leak no family accounts for: what grew before each window
    rate_basis: str = BETWEEN_CAPTURES
    cause: CauseResult | None = None  # likely cause, when its compiled programs multiply (recompile_cause)


@dataclass
class History:
    tb_run: str  # the TensorBoard run whose captures these are
    num_captures: int
    verdict: str
    reason: str
    note: str | None  # captures of different hosts or programs: why they are not one series
    series: list[Series]  # worst first


def measure(point: CapturePoint) -> int:
    """What a capture says outlives every step: a snapshot's live bytes, a profile's heap floor; of a profile whose
    heap counts only what profilers saw allocated, what it kept within its own window."""
    if point.kind == ONE_MOMENT:
        return point.heap_end_bytes
    if point.profiled_heap:
        return kept_within(point)
    return point.heap_floor_bytes


def kept_within(point: CapturePoint) -> int:
    """What a profile kept within its window: its heap's rate at its steps' ends times its steps (the temporaries
    still live at its end are not kept), else, with fewer than two steps known, its heap's end less its start."""
    steps = _window_steps(point)
    if steps is not None and steps > 1:
        return round(point.heap_growth_bytes_per_step * steps)
    return point.heap_end_bytes - point.heap_start_bytes


def run_history(tb_run: str, points: list[CapturePoint], num_captures: int | None = None, record_events: str = "") -> History:
    """The history of a run's captures (each allocator of each host its own series); `num_captures` counts those
    without any allocator too (no memory events), which give no point; `record_events` says how their format
    records memory events, when none has any."""
    captures = {p.capture for p in points}
    by_series: dict[tuple[str, str], list[CapturePoint]] = {}
    for p in points:
        by_series.setdefault((p.host, p.memory_id), []).append(p)
    series = [_series(host, memory_id, in_order(mine)) for (host, memory_id), mine in by_series.items()]
    series.sort(key=lambda s: (-_SEVERITY[s.verdict], -s.rise_bytes))
    hosts = sorted({p.host for p in points})
    note = None
    if len(hosts) > 1:
        note = f"captures come from {len(hosts)} hosts ({', '.join(hosts[:5])}): each host's history is its own"
    if not series:
        total = num_captures if num_captures is not None else len(captures)
        advice = f". {record_events}" if record_events else ""
        reason = f"{tb_run}: no memory events in its {count_of(total, 'capture')}{advice}"
        return History(tb_run, total, INCONCLUSIVE, reason, note, [])
    top = series[0]
    reason = top.reason if len(series) == 1 else f"{top.label} on {top.host}: {top.reason}"
    return History(tb_run, num_captures if num_captures is not None else len(captures), top.verdict, reason, note, series)


def count_unreadable(h: History, unreadable: int) -> History:
    """`h`, whose points come from the captures that could be read, saying how many of its captures could not:
    a verdict over fewer captures than the run has is not to be mistaken for one over all of them."""
    if not unreadable:
        return h
    captures = count_of(h.num_captures, "capture")
    if unreadable >= h.num_captures:
        return replace(h, verdict=INCONCLUSIVE, reason=f"{h.tb_run}: none of its {captures} could be read")
    return replace(h, reason=f"{h.reason} ({unreadable} of {captures} could not be read)")


def in_order(points: list[CapturePoint]) -> list[CapturePoint]:
    """Captures by their time; by their step numbers when some carry no time of their own (a file's modification
    time is when it was written or copied) and every one has step numbers."""
    steps = [_step(p) for p in points]
    if any(p.time_source == FILE_MTIME for p in points) and None not in steps:
        return [p for _, p in sorted(zip(steps, points, strict=True), key=lambda sp: (sp[0], sp[1].time_s, sp[1].capture))]
    return sorted(points, key=lambda p: (p.time_s, p.capture))


def _step(p: CapturePoint) -> int | None:
    return p.last_step if p.kind == ONE_MOMENT else p.first_step


def _clock(points: list[CapturePoint]) -> tuple[bool, str | None]:
    """Whether the captures' times tell the job's pace, and what the history says of where they came from."""
    mtimes = sum(1 for p in points if p.time_source == FILE_MTIME)
    named = sum(1 for p in points if p.time_source == SESSION_NAME)
    times = [p.time_s for p in points]
    spread = max(times) - min(times) if times else 0.0
    if mtimes and mtimes == len(points) and len(points) > 1 and spread < COPIED_WITHIN_S:
        close = f"lie within {format_duration_ps(spread * 1e12)} of each other" if spread > 0 else "are all the same"
        return False, (
            f"no rate per hour and no forecast: the captures carry no time of their own, and their files' modification"
            f" times {close} (copied, not captured, then); the rate is per step, or per capture without step numbers"
        )
    if mtimes:
        return True, (
            f"{mtimes} of {len(points)} captures carry no time of their own: their times are their files' modification"
            " times (when they were written, or copied)"
        )
    if named:
        return True, f"{named} of {len(points)} captures carry no time of their own: their times are their session folders' names"
    return True, None


def _series(host: str, memory_id: str, points: list[CapturePoint]) -> Series:
    label = points[-1].label
    values = np.asarray([measure(p) for p in points], np.float64)
    times = np.asarray([p.time_s for p in points], np.float64)
    steps = [_step(p) for p in points]
    timed, time_note = _clock(points)
    several = len(points) > 1
    # The job's pace, where the captures' step numbers and times tell it: what turns a rate per step into one per hour.
    firsts = [p.first_step for p in points]
    paced = None not in firsts and several and timed
    steps_per_hour = _slope(times, np.asarray(firsts, np.float64)) * 3600.0 if paced else None
    within = points[0].kind != ONE_MOMENT and any(p.profiled_heap for p in points)
    if within:
        rise, per_step, per_capture, per_hour = _within_rates(points, values, steps_per_hour)
    else:
        rise = int(values[-1] - values[0]) if len(values) else 0
        per_hour = _slope(times, values) * 3600.0 if several and timed else (0.0 if timed else None)
        per_step = _slope(np.asarray(steps, np.float64), values) if several and None not in steps else None
        per_capture = _slope(np.arange(len(points), dtype=np.float64), values)
    capacity = max((p.capacity_bytes for p in points), default=0)
    families = _families(points, per_step, timed, steps_per_hour)
    # In step order the times need not rise: the span is theirs all the same.
    span = f" over {format_duration_ps(float(np.ptp(times)) * 1e12)}" if timed and several else ""
    programs = sorted({p.program for p in points if p.program})
    basis = WITHIN_CAPTURES if within else BETWEEN_CAPTURES
    common = (host, memory_id, label, points)

    def made(verdict: str, why: str, hours: float | None = None, unexplained: str | None = None) -> Series:
        if time_note is not None and not timed:
            why += f"; {time_note}"
        return Series(
            *common,
            verdict,
            why,
            rise,
            per_hour,
            per_step,
            per_capture,
            hours,
            capacity,
            families,
            time_note,
            unexplained,
            basis,
            recompile_cause(points),
        )

    if len(programs) > 1:
        mixed = "; ".join(programs[:3])
        return made(INCONCLUSIVE, f"Inconclusive: its captures come from different programs ({mixed}): not merged")
    if len(points) < MIN_CAPTURES:
        return made(
            INCONCLUSIVE,
            f"Inconclusive: {count_of(len(points), 'capture')}{span} ({_signed(rise)}); "
            f"a history needs at least {MIN_CAPTURES} to tell growth from noise",
        )
    peak = max(p.peak_heap_bytes for p in points)
    enough = rise > max(MIN_RISE_BYTES, MIN_RISE_SHARE * peak)
    trend = per_hour if per_hour is not None else per_capture
    if within:
        rising, of = int(np.count_nonzero(values > 0)), len(points)
        moved = f"its captures kept {_signed(float(values.sum()))} within their windows{span}, growing in {rising} of {of}"
    else:
        rising, of = int(np.count_nonzero(np.diff(values) > 0)), len(points) - 1
        moved = f"what outlives each step moved {_signed(rise)}{span} across {len(points)} captures"
        moved += f", rising between {rising} of {of} of them"
    if rising < math.ceil(RISING_SHARE * of) or not enough or trend <= 0:
        return made(NO_LEAK, f"No leak: {moved}" + (f"; {PROFILED_HEAP}" if within else ""))
    left = capacity - values[-1]
    # A profiled heap's level is not known, only what the windows kept: no time to out-of-memory from it.
    hours = float(left / per_hour) if per_hour is not None and per_hour > 0 and capacity and left > 0 and not within else None
    # One rate: per step where the captures' steps are known, else per capture when they carry no time (a timed
    # history's rate is its forecast's, per hour).
    rate = f", {_signed(per_step)} per step" if per_step is not None else ""
    if not timed and per_step is None:
        rate = f", {_signed(per_capture)} per capture"
    oom = f"; out of memory in about {format_duration_ps(hours * 3600e12)}" if hours is not None else ""
    culprit = next((f for f in families if f.agrees), None)
    if culprit is None and per_step is None and families:
        culprit = families[0]  # without step numbers nothing can be checked against the growth: the one that grew most
    unexplained = None
    if culprit is not None:
        # One rate in the sentence: the family's own is the history's families table's, beside the growth it explains
        # (a within-captures sentence always has its pace).
        named = f", from {_family_text(culprit, with_rate=per_step is None and timed and not within)}"
    elif memory_id.startswith(PROCESS_PREFIX):
        named = ""  # the process's memory outside the allocators: no family could explain it
    else:
        unexplained = _unexplained(points, within)
        named = f"; {unexplained}"
    if within:
        pace = f"{_signed(per_step)} per step" if per_step is not None else f"{_signed(per_capture)} per capture"
        at = f"about {_signed(rise)} over steps {points[0].first_step}..{points[-1].last_step}; " if per_step is not None else ""
        why = f"Leak: {pace} kept within the windows of {len(points)} captures{span} ({at}{PROFILED_HEAP}){named}"
    else:
        why = f"Leak: {_signed(rise)}{span} across {len(points)} captures{rate}{named}{oom}"
    return made(LEAK, why, hours, unexplained)


def recompile_cause(points: list[CapturePoint]) -> CauseResult | None:
    """`recompile_per_step` when the captures (in order) count more compiled programs between most consecutive ones,
    MIN_NEW_PROGRAMS more in all; None otherwise, or with fewer than MIN_CAPTURES of them."""
    totals = [sum(p.count for p in c.programs) for c in points]
    if len(points) < MIN_CAPTURES or totals[-1] - totals[0] < MIN_NEW_PROGRAMS:
        return None
    rising = sum(1 for a, b in itertools.pairwise(totals) if b > a)
    if rising < math.ceil(RISING_SHARE * (len(points) - 1)):
        return None
    kind = "device memory profiles" if points[0].kind == ONE_MOMENT else "captures"
    evidence = f"compiled programs grew from {totals[0]} to {totals[-1]} over {len(points)} {kind}"
    steps = [_step(p) for p in points]
    numbered = [s for s in steps if s is not None]
    if len(numbered) == len(steps) and len(set(numbered)) > 1:
        per_step = _slope(np.asarray(numbered, np.float64), np.asarray(totals, np.float64))
        evidence += f" of steps {min(numbered)}..{max(numbered)}, {_programs_per_step(per_step)}"
    first = {p.where: p.count for p in points[0].programs}
    grown = [(p.count - first.get(p.where, 0), p.where) for p in points[-1].programs if p.where]
    new, where = max(grown, default=(0, ""))
    if new > 0:
        evidence += f": {new} more compiled from {where}"
    return CauseResult(RECOMPILE_PER_STEP, evidence, RECOMPILE_FIX)


def _programs_per_step(rate: float) -> str:
    if abs(rate - 1.0) < 0.05:
        return "one per step"
    if rate >= 1.0:
        return f"{rate:.1f} per step"
    return f"one every {1 / rate:.0f} steps" if rate > 0 else "none per step"


# Why a profiled heap's history is not chained from one capture to the next.
PROFILED_HEAP = "its heap counts only what each capture saw allocated, so the steps between captures are not measured"


def _within_rates(
    points: list[CapturePoint], kept: np.ndarray, steps_per_hour: float | None
) -> tuple[int, float | None, float, float | None]:
    """A profiled heap's rise, and rates per step, capture and hour, from what each capture kept within its window:
    the bytes kept over the steps of the windows, at the job's pace between captures."""
    windows = [_window_steps(p) for p in points]
    firsts, lasts = points[0].first_step, points[-1].last_step
    if None in windows or firsts is None or lasts is None:
        per_capture = float(kept.mean()) if len(kept) else 0.0
        return int(kept.sum()), None, per_capture, None
    per_step = float(kept.sum()) / sum(w for w in windows if w is not None)
    starts = np.asarray([p.first_step for p in points], np.float64)
    gap = float(np.diff(starts).mean()) if len(points) > 1 else float(windows[0] or 0)
    per_hour = per_step * steps_per_hour if steps_per_hour is not None else None
    return round(per_step * (lasts - firsts + 1)), per_step, per_step * gap, per_hour


def _family_text(f: FamilyTrend, with_rate: bool = True) -> str:
    """'Mul [4] output at train.py:42: +512 KiB per step in 3 captures (…)'; without `with_rate` when the sentence
    already has its rate."""
    where = f" at {f.where}" if f.where and f.where not in f.label else ""
    rate = f": {_signed(f.bytes_per_step)} per step" if with_rate else ","
    return f"{f.label}{where}{rate} in {_captures_text(f.captures)}"


def _captures_text(captures: list[str]) -> str:
    names = [c.rpartition("/")[2] or c for c in captures]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"{len(names)} captures ({shown})" if len(names) > 1 else f"capture {shown}"


def _unexplained(points: list[CapturePoint], within: bool) -> str:
    """Why no family explains the growth; the sentence it ends has the rate already."""
    if within:
        return "the growth is unexplained: no family made within the windows keeps bytes at the rate they kept"
    held = ", ".join(format_bytes(p.heap_start_bytes) for p in points[:6]) + (", ..." if len(points) > 6 else "")
    return (
        "the growth is unexplained: no family made within the windows keeps bytes at the rate the captures grew;"
        f" it was allocated before the windows (held when each began: {held})"
    )


def _families(points: list[CapturePoint], per_step: float | None, timed: bool, steps_per_hour: float | None) -> list[FamilyTrend]:
    """The families that grew: within the profiles that saw them grow, kept new in every window, or from snapshot
    to snapshot; `steps_per_hour`: the job's pace, when the captures' steps and times tell it."""
    seen: dict[str, list[tuple[int, FamilyPoint]]] = {}
    for k, p in enumerate(points):
        for f in p.families:
            seen.setdefault(f.key, []).append((k, f))
    trends = []
    for key, found in seen.items():
        first, last = found[0][1], found[-1][1]
        hourly: float | None
        if points[0].kind == ONE_MOMENT:
            held = [f.bytes for _, f in found]
            grew = sum(1 for a, b in itertools.pairwise(held) if b > a)
            x = [points[k].last_step for k, _ in found]
            numbered = [s for s in x if s is not None]
            fitted = len(found) > 1 and len(numbered) == len(x) and len(set(numbered)) > 1
            rate = _slope(np.asarray(numbered, np.float64), np.asarray(held, np.float64)) if fitted else 0.0
            at = np.asarray([points[k].time_s for k, _ in found], np.float64)
            hourly = _slope(at, np.asarray(held, np.float64)) * 3600.0 if timed else None
            agrees = grew > 0
        else:
            rates = [f.bytes_per_step for _, f in found if f.kind == GROWING]
            grew = len(rates)
            rate = float(np.median(rates)) if rates else 0.0
            kept = _kept_in_every_window(points, found)
            agrees = kept is not None and per_step is not None and _agrees(*kept, per_step)
            if agrees and kept is not None:
                grew, rate = len(points), kept[1] / kept[2]  # new in every window: growing between the captures
            hourly = rate * steps_per_hour if steps_per_hour is not None else None
        if grew == 0:
            continue
        growth = last.bytes - first.bytes
        captures = [points[k].capture for k, _ in found]
        where = (last.label, last.where, last.stack)
        trends.append(FamilyTrend(key, *where, first.bytes, last.bytes, growth, grew, rate, hourly, captures, agrees))
    trends.sort(key=lambda t: (not t.agrees, -t.growing_captures, -t.growth_bytes, -t.bytes_per_step))
    return trends[:MAX_FAMILIES]


def _window_steps(p: CapturePoint) -> int | None:
    return p.last_step - p.first_step + 1 if p.first_step is not None and p.last_step is not None else None


def _kept_in_every_window(points: list[CapturePoint], found: list[tuple[int, FamilyPoint]]) -> tuple[int, int, int] | None:
    """The buffers and bytes a family kept over the windows' steps, when it kept new ones in every window."""
    windows = [_window_steps(points[k]) for k, _ in found]
    if len(found) < len(points) or any(f.count <= 0 for _, f in found) or None in windows:
        return None
    return sum(f.count for _, f in found), sum(f.bytes for _, f in found), sum(w for w in windows if w is not None)


def _agrees(count: int, held: int, steps: int, per_step: float) -> bool:
    """Whether the buffers a family kept within the windows are as many as the growth between captures predicts,
    within the noise of so few steps (a buffer every 50 steps is 0, 1 or 2 of them in a window of 60)."""
    if per_step <= 0 or held <= 0 or steps <= 0:
        return False
    expected = per_step * steps / (held / count)
    return abs(count - expected) <= NOISE_SIGMAS * math.sqrt(max(expected, 1.0)) + 1.0


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y over x; 0 when x does not vary."""
    if len(x) < 2 or float(np.ptp(x)) == 0:
        return 0.0
    return float(np.polyfit(x - x[0], y, 1)[0])


def _signed(n: float) -> str:
    return f"+{format_bytes(n)}" if n >= 0 else format_bytes(n)
