"""Where a host's steps come from: markers, XProf's groups, root events, device programs or time windows.

The sources are tried in this order and the first that yields at least
MIN_STEPS complete steps gives the host its steps:
- `step_num` markers;
- the `group_id` stat (XProf's grouping of events under their root);
- root events on the host: the `_r` stat, `TraceContext`, `FunctionRun`, or
  repeated calls of one `__inference_*` tf.function or `PjitFunction(*)`;
- repeated executions of one compiled program on a device's `XLA Modules`
  line, or a device's `Steps` line;
- equal time windows, when nothing above holds even one step.

Where several names repeat, the one the memory events fall in most wins, not
the most frequent one; a source whose steps hold no memory event gives way to
a later one whose steps do. A last group cut short by the end of the capture is in
flight: it is left out, so its buffers count as made after the last complete
step began (markers, root events and programs are recorded when they end, so
an in-flight one is absent anyway).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tb_leakfinder.analyses.words import format_duration_ps
from tb_leakfinder.model.memory import SPAN_DEVICE_PROGRAM, SPAN_DEVICE_STEP, SPAN_HOST_ROOT, HostProfile, Steps

STEP_NUM = "step_num"
GROUP_ID = "group_id"
ROOT_EVENTS = "root_events"
DEVICE_PROGRAMS = "device_programs"
TIME_WINDOWS = "time_windows"
NONE = "none"

MIN_STEPS = 3
NUM_TIME_WINDOWS = 10
# A last group shorter than this share of the median group was cut by the end of the capture.
IN_FLIGHT_SHARE = 0.5
# Fewer than MIN_STEPS steps that hold at least this share of the memory events: the capture is that short.
SHORT_CAPTURE_COVERAGE = 0.5


@dataclass
class StepSourceResult:
    kind: str  # STEP_NUM, GROUP_ID, ROOT_EVENTS, DEVICE_PROGRAMS, TIME_WINDOWS or NONE
    name: str | None  # the event, function or program the steps come from
    steps: Steps
    description: str  # "30 steps from the group_id stat"

    @property
    def num_steps(self) -> int:
        return len(self.steps)

    @property
    def too_short(self) -> bool:
        """Fewer than MIN_STEPS steps: growth cannot be told from warm-up."""
        return self.kind != TIME_WINDOWS and self.num_steps < MIN_STEPS

    @property
    def unit(self) -> str:
        """What one step is called in sentences: 'step', or 'window' for time windows."""
        return "window" if self.kind == TIME_WINDOWS else "step"


@dataclass
class _Candidate:
    kind: str
    name: str | None
    steps: Steps
    origin: str  # "from the group_id stat"
    covered: int  # memory events inside the steps, the in-flight one included

    def source(self) -> StepSourceResult:
        n = len(self.steps)
        return StepSourceResult(self.kind, self.name, self.steps, f"{n} step{'' if n == 1 else 's'} {self.origin}")


def find_steps(profile: HostProfile) -> StepSourceResult:
    """The host's steps, and which source gave them."""
    times = _Times(profile.events.time_ps)
    markers = _candidate(STEP_NUM, None, profile.steps, f"from {profile.step_marker} markers", times)
    if len(markers.steps) >= MIN_STEPS:
        return markers.source()
    found = [c for c in (_from_groups(profile, times), _from_host_spans(profile, times), _from_device_spans(profile, times)) if c]
    enough = [c for c in found if len(c.steps) >= MIN_STEPS]
    # A source whose steps hold no memory event (JAX dispatches a step on the host before its device runs it)
    # gives way to a later one whose steps do.
    holding = [c for c in enough if c.covered > 0 or len(times) == 0]
    if holding or enough:
        return (holding or enough)[0].source()
    tried = [markers, *found]
    # Steps exist but fewer than MIN_STEPS, and the memory events lie in them: the capture is that short.
    short = [c for c in tried if len(c.steps) and c.covered >= SHORT_CAPTURE_COVERAGE * len(times)]
    if short:
        return max(short, key=lambda c: (c.covered, len(c.steps))).source()
    if len(times) > 1 and times.last() > times.first():
        return time_windows(times.first(), times.last(), event_clock_ps=profile.event_clock_ps)
    return StepSourceResult(NONE, None, Steps.empty(), "no step information")


def time_windows(
    start_ps: int, end_ps: int, count: int = NUM_TIME_WINDOWS, event_clock_ps: int | None = None
) -> StepSourceResult:
    """`count` equal windows from `start_ps` to `end_ps`, numbered from 0; `event_clock_ps`: the clock counts
    allocations, this many ps each (a snapshot without times)."""
    # In Python integers: a corrupt profile's far-apart times must not overflow int64.
    bounds = np.array([start_ps + (end_ps - start_ps) * i // count for i in range(count + 1)], np.int64)
    ends = bounds[1:] - 1
    ends[-1] = end_ps
    steps = Steps(np.arange(count, dtype=np.int64), bounds[:-1].copy(), ends)
    if event_clock_ps:
        allocations = round((end_ps - start_ps) / count / event_clock_ps)
        text = f"{count} equal windows of {allocations} allocations each, no step information"
        return StepSourceResult(TIME_WINDOWS, None, steps, text)
    width = format_duration_ps((end_ps - start_ps) / count)
    return StepSourceResult(TIME_WINDOWS, None, steps, f"{count} equal time windows of {width}, no step information")


def step_period_ps(steps: Steps) -> float:
    """The measured duration of one step: the median from one step's start to the next (one step: its length)."""
    if len(steps) >= 2:
        return float(np.median(np.diff(steps.start_ps)))
    if len(steps) == 1:
        return float(steps.end_ps[0] - steps.start_ps[0])
    return 0.0


# --- the sources ---------------------------------------------------------------


class _Times:
    """The memory events' times as the runs of them in time order: the host's events are all in time order or
    grouped by allocator, each allocator's in time order (MemoryEvents), so there is a run per allocator at most."""

    def __init__(self, times: np.ndarray) -> None:
        self._count = len(times)
        self._runs = np.split(times, np.flatnonzero(times[1:] < times[:-1]) + 1) if len(times) else []

    def __len__(self) -> int:
        return self._count

    def first(self) -> int:
        return min(int(run[0]) for run in self._runs)

    def last(self) -> int:
        return max(int(run[-1]) for run in self._runs)

    def inside(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """How many times lie in each interval from `starts` to `ends` (less than none where one ends before it starts)."""
        counts = np.zeros(len(starts), np.intp)
        for run in self._runs:
            counts += np.searchsorted(run, ends, side="right") - np.searchsorted(run, starts, side="left")
        return counts


def _candidate(kind: str, name: str | None, steps: Steps, origin: str, times: _Times) -> _Candidate:
    return _Candidate(kind, name, steps, origin, _covered(steps.start_ps, steps.end_ps, times))


def _covered(starts: np.ndarray, ends: np.ndarray, times: _Times) -> int:
    """Memory events inside the (sorted, not overlapping) intervals."""
    if len(starts) == 0 or len(times) == 0:
        return 0
    return int(np.sum(np.maximum(times.inside(starts, ends), 0)))  # a span that ends before it starts holds nothing


def _without_in_flight(steps: Steps) -> Steps:
    """The steps without a last one that the end of the capture cut short.

    Only groups can be cut short: a marker, root event or program execution is
    recorded when it ends, so one in flight is simply absent.
    """
    if len(steps) < 2:
        return steps
    durations = steps.end_ps - steps.start_ps
    if durations[-1] >= IN_FLIGHT_SHARE * float(np.median(durations[:-1])):
        return steps
    return Steps(steps.step_num[:-1], steps.start_ps[:-1], steps.end_ps[:-1])


def _from_groups(profile: HostProfile, times: _Times) -> _Candidate | None:
    groups = profile.groups
    if len(groups.group_id) == 0:
        return None
    order = np.argsort(groups.start_ps, kind="stable")
    steps = Steps(groups.group_id[order].astype(np.int64), groups.start_ps[order], groups.end_ps[order])
    # Groups may overlap (an input pipeline runs ahead); coverage counts each memory event once.
    covered = _covered(*_union(steps.start_ps, steps.end_ps), times)
    return _Candidate(GROUP_ID, None, _without_in_flight(steps), "from the group_id stat", covered)


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted intervals merged where they overlap."""
    reach = np.maximum.accumulate(ends)
    new = np.ones(len(starts), bool)
    new[1:] = starts[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(starts) - 1)
    return starts[first], reach[last]


def _from_host_spans(profile: HostProfile, times: _Times) -> _Candidate | None:
    spans = profile.spans
    best: _Candidate | None = None
    # One candidate per name and thread: an input pipeline's FunctionRuns on their own thread are not steps.
    lines = int(spans.line.max(initial=-1)) + 2
    thread_name = spans.name.astype(np.int64) * lines + (spans.line.astype(np.int64) + 1)
    for key, mine in _split_by(np.flatnonzero(spans.source == SPAN_HOST_ROOT), thread_name):
        name = spans.names[key // lines]
        if name in ("TraceContext", "FunctionRun") or bool(np.any(spans.root[mine])):
            origin = f"from root events ({name})"
        else:
            origin = f"from calls of {name}"
        best = _better(best, _span_candidate(ROOT_EVENTS, name, origin, spans.start_ps[mine], spans.end_ps[mine], times))
    return best


def _from_device_spans(profile: HostProfile, times: _Times) -> _Candidate | None:
    spans = profile.spans
    best: _Candidate | None = None
    for device, on_device in _split_by(np.flatnonzero(spans.device >= 0), spans.device):
        plane = profile.device_planes[device] if 0 <= device < len(profile.device_planes) else f"device {device}"
        programs = on_device[spans.source[on_device] == SPAN_DEVICE_PROGRAM]
        for name_index, mine in _split_by(programs, spans.name):
            name = spans.names[name_index]
            origin = f"from executions of {name} on {plane}"
            best = _better(best, _span_candidate(DEVICE_PROGRAMS, name, origin, spans.start_ps[mine], spans.end_ps[mine], times))
        lines = on_device[spans.source[on_device] == SPAN_DEVICE_STEP]
        if len(lines):
            names = [spans.names[int(i)] for i in spans.name[lines]]
            origin = f"from the Steps line of {plane}"
            candidate = _span_candidate(
                DEVICE_PROGRAMS, "Steps", origin, spans.start_ps[lines], spans.end_ps[lines], times, names
            )
            best = _better(best, candidate)
    return best


def _split_by(rows: np.ndarray, column: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """`rows` grouped by their value in `column`: (value, rows in their order), by value."""
    if len(rows) == 0:
        return []
    order = rows[np.argsort(column[rows], kind="stable")]
    values = column[order]
    cuts = np.flatnonzero(values[1:] != values[:-1]) + 1
    return [(int(column[part[0]]), part) for part in np.split(order, cuts)]


def _span_candidate(
    kind: str,
    name: str,
    origin: str,
    starts: np.ndarray,
    ends: np.ndarray,
    times: _Times,
    numbers: list[str] | None = None,
) -> _Candidate:
    """Steps from the spans of one name: the outermost ones, in time order, numbered from 0 (or by `numbers`)."""
    order = np.lexsort((-ends, starts))
    starts, ends = starts[order], ends[order]
    # A span that starts before an earlier one ends is nested in it (recursion) or overlaps it: the earlier one is the step.
    keep = np.ones(len(starts), bool)
    keep[1:] = starts[1:] > np.maximum.accumulate(ends)[:-1]
    starts, ends = starts[keep], ends[keep]
    step_num = np.arange(len(starts), dtype=np.int64)
    if numbers is not None:
        kept = [numbers[i] for i in order[keep]]
        if all(n.isdecimal() for n in kept) and len(set(kept)) == len(kept):
            step_num = np.asarray([int(n) for n in kept], np.int64)
    return _candidate(kind, name, Steps(step_num, starts, ends), origin, times)


def _better(best: _Candidate | None, other: _Candidate) -> _Candidate:
    """Of two candidates, the one that holds more memory events; with as many, the one with more steps."""
    if best is None:
        return other
    enough_best, enough_other = len(best.steps) >= MIN_STEPS, len(other.steps) >= MIN_STEPS
    if enough_best != enough_other:
        return best if enough_best else other
    return other if (other.covered, len(other.steps)) > (best.covered, len(best.steps)) else best
