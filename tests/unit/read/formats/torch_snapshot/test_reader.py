"""PyTorch memory snapshots into the model: entries paired by address, the heap from what was live before the
window, Python frames naming each buffer, annotations as steps, snapshots without history or time_us."""

from __future__ import annotations

import numpy as np
import pytest

from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.analyses.step_sources import ROOT_EVENTS, STEP_NUM, TIME_WINDOWS
from tb_leakfinder.analyses.verdict import LEAK
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, FREE, SPAN_HOST_CALL, SPAN_HOST_ROOT
from tb_leakfinder.read.formats.torch_snapshot import reader
from tb_leakfinder.read.formats.torch_snapshot.format import HOST
from tb_leakfinder.testing.torch_snapshot_builder import EPOCH_US, SnapshotBuilder

MIB = 1 << 20
TORCH = "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py"
USER = "/home/me/train.py"
# Innermost first: torch's call inside the user's step inside the module.
STACK = [(TORCH, 125, "forward"), (USER, 14, "train_step"), (USER, 30, "<module>")]


def _read(tmp_path, builder: SnapshotBuilder, name: str = "snap.pickle"):
    return reader.read_host(str(builder.write(tmp_path / name)), HOST)


def test_allocs_and_completed_frees_pair_by_address_per_device(tmp_path):
    b = SnapshotBuilder(devices=2)
    b.alloc(0x1000, 1000, STACK, time_us=1)
    b.alloc(0x9000, MIB, STACK, time_us=2, device=1)
    b.alloc(0x2000, 3 * MIB, STACK, time_us=3)
    b.free(0x1000, 1000, time_us=4)
    b.entry("segment_alloc", 0x8000, 2 * MIB, time_us=5)
    profile = _read(tmp_path, b)
    events = profile.events
    assert events.allocator_names == ["cuda:0", "cuda:1"]
    assert profile.allocators["cuda:1"].label == "cuda:1" and not profile.allocators["cuda:1"].host_memory
    assert events.kind.tolist() == [ALLOC, ALLOC, ALLOC, FREE]  # free_requested and segment_alloc are no events
    assert events.allocator.tolist() == [0, 1, 0, 0]
    assert events.addr.tolist() == [0x1000, 0x9000, 0x2000, 0x1000]
    assert events.requested_bytes.tolist() == [1000, MIB, 3 * MIB, 1000]
    assert events.chunk_bytes.tolist() == [1024, MIB, 3 * MIB, 1024]  # rounded up to 512 bytes
    assert events.heap_bytes.tolist() == [1024, MIB, 1024 + 3 * MIB, 3 * MIB]
    # A free_completed follows its free_requested of the same µs by STRIDE_PS: entries never share a time.
    assert events.time_ps.tolist() == [0, 1_000_000, 2_000_000, 3_000_000 + reader.STRIDE_PS]
    assert profile.start_time_ns == (EPOCH_US + 1) * 1000
    assert profile.duration_ps == 4_000_000 + reader.STRIDE_PS
    assert not profile.one_moment and profile.warnings == []


def test_a_live_block_gives_its_allocation_its_size(tmp_path):
    b = SnapshotBuilder()
    b.alloc(0x1000, 9_437_184, STACK, time_us=1)
    b.segment(0x1000, [(0x1000, 10_223_616, 9_437_184, "active_allocated", STACK), (0xA00000, MIB, 0, "inactive", ())])
    events = _read(tmp_path, b).events
    assert events.chunk_bytes.tolist() == [10_223_616]  # a remainder too small to split stays in the block
    assert events.heap_bytes.tolist() == [10_223_616]


def test_buffers_live_before_the_window_start_the_heap_with_a_warning(tmp_path):
    b = SnapshotBuilder()
    b.free(0x5000, 4 * MIB, time_us=1)  # its alloc fell out of the ring buffer
    b.alloc(0x1000, MIB, STACK, time_us=2)
    b.segment(0x1000, [(0x1000, MIB, MIB, "active_allocated", STACK)])
    b.segment(0x800000, [(0x800000, 2 * MIB, 2 * MIB, "active_allocated", ()), (0xA00000, MIB, MIB, "inactive", ())])
    profile = _read(tmp_path, b)
    events = profile.events
    # 4 MiB freed in the window and 2 MiB never in it were live at the start: 6 MiB, less the first free.
    assert events.heap_bytes.tolist() == [2 * MIB, 3 * MIB]
    (warning,) = profile.warnings
    assert "buffers live when the trace began, allocated before its first entry" in warning
    assert "max_entries): 2 (6,291,456 bytes); of them freed in the trace: 1, live at the dump without an entry: 1;" in warning
    (allocator,) = analyze_host(profile).allocators
    assert allocator.summary.heap_start_bytes == 6 * MIB
    assert allocator.summary.freed_before_window_count == 1
    assert allocator.summary.peak_heap_bytes == 3 * MIB


def test_hostile_frees_never_take_the_heap_below_zero(tmp_path):
    b = SnapshotBuilder()
    b.alloc(0x1000, MIB, time_us=1)
    b.free(0x1000, MIB, time_us=2)
    b.free(0x1000, MIB, time_us=3)  # freed twice: the second is of a buffer from before the window
    assert _read(tmp_path, b).events.heap_bytes.min() >= 0


def test_the_report_names_the_users_line(tmp_path):
    b = SnapshotBuilder()
    for k in range(3):
        b.alloc(0x1000 * (k + 1), MIB, STACK, time_us=k)
    warm_up = [(TORCH, 125, "forward"), (USER, 41, "warm_up"), (USER, 29, "<module>")]
    b.alloc(0x100000, 4 * MIB, warm_up, time_us=3)  # the same µs as another entry: still its own frames
    b.alloc(0x200000, MIB, STACK, time_us=3)
    profile = _read(tmp_path, b)
    calls = profile.spans.source == SPAN_HOST_CALL
    assert {profile.spans.names[i] for i in profile.spans.name[calls]} == {
        f"${TORCH}:125 forward",
        f"${USER}:14 train_step",
        f"${USER}:30 <module>",
        f"${USER}:41 warm_up",
        f"${USER}:29 <module>",
    }  # the C++ frames are left out
    assert np.all(np.diff(profile.events.time_ps) >= reader.STRIDE_PS)
    (allocator,) = analyze_host(profile).allocators
    sites = allocator.sites
    where = {int(size): sites[s].where for size, s in zip(allocator.buffers.chunk_bytes, allocator.buffers.site, strict=True)}
    assert where == {MIB: "train.py:14 in train_step", 4 * MIB: "train.py:41 in warm_up"}
    stacks = {sites[s].stack for s in allocator.buffers.site.tolist()}
    assert stacks == {
        ("train.py:14 in train_step", "train.py:30 in <module>"),
        ("train.py:41 in warm_up", "train.py:29 in <module>"),
    }


def _loop(b: SnapshotBuilder, steps: int, leak: bool) -> None:
    """`steps` steps of 100 µs: a buffer freed within each, and one kept when `leak`."""
    for step in range(steps):
        t = 100 * step
        b.alloc(0x1000, MIB, STACK, time_us=t + 10)
        b.free(0x1000, MIB, time_us=t + 20)
        if leak:
            b.alloc(0x100000 * (step + 1), 2 * MIB, STACK, time_us=t + 30)


def test_profiler_step_annotations_are_the_steps(tmp_path):
    b = SnapshotBuilder()
    _loop(b, 5, leak=True)
    for step in range(5):
        b.annotate(f"ProfilerStep#{step + 7}", 100 * step, 100 * step + 90)
    b.annotate("Optimizer.step#AdamW.step", 50, 60)
    profile = _read(tmp_path, b)
    assert profile.steps.step_num.tolist() == [7, 8, 9, 10, 11]
    assert profile.steps.start_ps.tolist() == [100_000_000 * s for s in range(5)]
    roots = profile.spans.source == SPAN_HOST_ROOT
    assert sorted(profile.spans.names[i] for i in profile.spans.name[roots]) == [
        "Optimizer.step#AdamW.step",
        *["ProfilerStep"] * 5,
    ]
    analysis = analyze_host(profile)
    assert analysis.step_source.kind == STEP_NUM
    (allocator,) = analysis.allocators
    assert allocator.verdict.verdict == LEAK, allocator.verdict


def test_repeated_annotations_of_another_name_are_steps_through_the_cascade(tmp_path):
    b = SnapshotBuilder()
    _loop(b, 4, leak=False)
    for step in range(4):
        b.annotate("train_step", 100 * step, 100 * step + 90)
    analysis = analyze_host(_read(tmp_path, b))
    assert (analysis.step_source.kind, analysis.step_source.name, analysis.step_source.num_steps) == (
        ROOT_EVENTS,
        "train_step",
        4,
    )


def test_without_annotations_the_steps_are_time_windows(tmp_path):
    b = SnapshotBuilder()
    _loop(b, 5, leak=False)
    analysis = analyze_host(_read(tmp_path, b))
    assert analysis.step_source.kind == TIME_WINDOWS and analysis.step_source.num_steps == 10


def test_without_time_us_the_clock_counts_allocations(tmp_path):
    b = SnapshotBuilder()
    b.alloc(0x1000, MIB, STACK)
    b.alloc(0x2000, MIB, STACK)
    b.free(0x1000, MIB)
    b.alloc(0x3000, MIB, STACK)
    profile = _read(tmp_path, b)
    # The k-th allocation at k ticks; the free (free_requested, then free_completed) 2 ps after the second.
    assert profile.events.time_ps.tolist() == [1000, 2000, 2002, 3000]
    assert profile.event_clock_ps == 1000 and profile.start_time_ns is None
    assert any("carry no time_us: the clock counts allocations" in w for w in profile.warnings)


def test_many_frees_between_two_allocations_widen_the_tick(tmp_path):
    b = SnapshotBuilder()
    for k in range(700):
        b.alloc(0x1000 + k * MIB, MIB, STACK)
    for k in range(700):
        b.free(0x1000 + k * MIB, MIB)
    b.alloc(0x1000, MIB, STACK)
    profile = _read(tmp_path, b)
    times = profile.events.time_ps
    # 1,400 entries follow the 700th allocation: a tick of 2,000 ps keeps them before the 701st, clear of its frames.
    assert profile.event_clock_ps == 2000 and (times[1:] > times[:-1]).all()
    assert times[-1] == 701 * 2000 and times[-2] == 700 * 2000 + 1400


def test_a_trace_of_free_requested_only_frees_there(tmp_path):
    b = SnapshotBuilder()
    b.alloc(0x1000, MIB, STACK, time_us=1)
    b.free(0x1000, MIB, time_us=2, completed=False)
    profile = _read(tmp_path, b)
    assert profile.events.kind.tolist() == [ALLOC, FREE]
    assert "cuda:0 record no free_completed entries" in profile.warnings[0]


def test_oom_and_unknown_actions_are_said(tmp_path):
    b = SnapshotBuilder()
    b.alloc(0x1000, MIB, STACK, time_us=1)
    b.entry("oom", 0, 80 * MIB, time_us=2, device_free=MIB)
    b.entry("teleport", 0x1000, MIB, time_us=3)
    warnings = _read(tmp_path, b).warnings
    assert any("ran out of memory once in the trace (its oom entry)" in w for w in warnings)
    assert any("one trace entry has an action this reader does not know, left out" in w for w in warnings)


def test_a_snapshot_without_history_is_its_live_blocks_at_one_moment(tmp_path):
    b = SnapshotBuilder()
    b.snapshot["device_traces"] = [[]]
    b.segment(0x1000, [(0x1000, 2 * MIB, 2 * MIB - 100, "active_allocated", STACK), (0x201000, MIB, 0, "inactive", ())])
    profile = _read(tmp_path, b)
    assert profile.one_moment
    assert profile.events.requested_bytes.tolist() == [2 * MIB - 100] and profile.events.chunk_bytes.tolist() == [2 * MIB]
    (allocator,) = analyze_host(profile).allocators
    assert allocator.summary.never_freed_bytes == 2 * MIB
    assert allocator.sites[int(allocator.buffers.site[0])].where == "train.py:14 in train_step"


def test_shared_frames_lists_are_read_once(tmp_path):
    b = SnapshotBuilder()
    for k in range(2000):
        b.alloc(0x1000 * (k + 1), 512, STACK, time_us=k)
    shared = b.snapshot["device_traces"][0][0]["frames"]
    for entry in b.snapshot["device_traces"][0]:
        entry["frames"] = shared  # one list in the pickle's memo, 2000 references
    profile = _read(tmp_path, b)
    assert len(profile.events) == 2000 and (profile.spans.source == SPAN_HOST_CALL).sum() == 2000 * 3


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda s: s.update(device_traces={"a": 1}), "device_traces is a dict, not a list"),
        (lambda s: s["device_traces"][0].append(7), "device_traces[0][1] is 7, not a dict"),
        (lambda s: s["device_traces"][0][0].update(size=-5), "device_traces[0][0]'s size is -5, not an integer"),
        (lambda s: s["device_traces"][0][0].update(size=1 << 200), "an integer of 201 bits"),
        (lambda s: s["device_traces"][0][0].update(addr="0x10"), "device_traces[0][0]'s addr is '0x10'"),
        (lambda s: s["device_traces"][0][0].update(time_us=float("nan")), "time_us is nan"),
        (lambda s: s["device_traces"][0][0].update(action=None), "action is None, not a string"),
        (lambda s: s["device_traces"][0][0].update(frames=[[1]]), "frame 0 is a list, not a dict"),
        (lambda s: s["device_traces"][0][0]["frames"].append({"filename": "a.py", "line": "x"}), "line is 'x'"),
        (lambda s: s["segments"].append({"blocks": 3}), "segments[0]'s blocks is 3, not a list"),
        (lambda s: s.update(external_annotations=[{"stage": "START"}]), "external_annotations[0]'s name is None"),
    ],
)
def test_wrong_types_are_the_project_error_naming_the_file_and_field(tmp_path, change, says):
    b = SnapshotBuilder()
    b.alloc(0x1000, MIB, STACK, time_us=1)
    change(b.snapshot)
    path = b.write(tmp_path / "bad.pickle")
    with pytest.raises(LeakfinderError, match="not a readable PyTorch memory snapshot") as caught:
        reader.read_host(str(path), HOST)
    assert str(path) in str(caught.value) and says in str(caught.value)


def test_a_pickle_of_something_else_is_refused(tmp_path):
    path = tmp_path / "other.pickle"
    path.write_bytes(__import__("pickle").dumps([1, 2, 3]))
    with pytest.raises(LeakfinderError, match="its pickle is a list, not a dict with segments or device_traces"):
        reader.read_host(str(path), HOST)


def _one_step(tmp_path, annotation: str, keep: bool, temporaries: int = 40):
    """A snapshot of one training step: `temporaries` made and freed, the optimizer's state made (and kept when
    `keep`) inside its annotation, which spans the step."""
    b = SnapshotBuilder()
    for k in range(temporaries):
        b.alloc(0x1000_0000 + k * MIB, MIB, STACK, time_us=10 + 2 * k)
        b.free(0x1000_0000 + k * MIB, MIB, time_us=11 + 2 * k)
    b.alloc(0x9000_0000, 64 * MIB, [(USER, 60, "step")], time_us=95)
    if not keep:
        b.free(0x9000_0000, 64 * MIB, time_us=96)
    b.annotate(annotation, 5, 100)
    return analyze_host(_read(tmp_path, b))


@pytest.mark.parametrize("annotation", ["ProfilerStep#12", "Optimizer.step#AdamW.step"])
def test_a_snapshot_of_one_step_is_one_step_and_nothing_grows(tmp_path, annotation):
    analysis = _one_step(tmp_path, annotation, keep=True)
    assert analysis.step_source.num_steps == 1
    (allocator,) = analysis.allocators
    assert allocator.verdict.verdict == "inconclusive"
    assert not [g for g in allocator.suspects.families if g.kind == "growing"]
    assert "too few to tell growth from warm-up; capture at least 3 steps" in allocator.verdict.reason


def test_a_single_step_that_frees_everything_says_so(tmp_path):
    (allocator,) = _one_step(tmp_path, "Optimizer.step#AdamW.step", keep=False).allocators
    assert allocator.verdict.reason == (
        "Inconclusive in the cuda:0 allocator: 1 step from Optimizer.step#AdamW.step markers, too few to tell growth from warm-up: "  # noqa: E501 - the verdict's sentence, whole
        "all 41 allocations of the one step were freed; capture 3 steps or more to rule out a leak."
    )


def test_a_single_step_of_one_allocation_freed_says_so_in_the_singular(tmp_path):
    (allocator,) = _one_step(tmp_path, "ProfilerStep#3", keep=False, temporaries=0).allocators
    assert "the one allocation of the one step was freed; capture 3 steps" in allocator.verdict.reason


def test_a_snapshot_of_one_step_ending_at_its_optimizer_step_is_one_step(tmp_path):
    """The optimizer's annotation covers its own work only: the forward and backward passes before it are of its
    step too, not time windows of their own."""
    b = SnapshotBuilder()
    for k in range(40):
        b.alloc(0x1000_0000 + k * MIB, MIB, STACK, time_us=10 + k)
    for k in range(40):
        b.free(0x1000_0000 + k * MIB, MIB, time_us=60 + k)
    for k in range(10):
        b.alloc(0x9000_0000 + k * 64 * MIB, 64 * MIB, [(USER, 60, "step")], time_us=110 + k)
    b.annotate("Optimizer.zero_grad#AdamW.zero_grad", 2, 4)
    b.annotate("Optimizer.step#AdamW.step", 105, 125)
    profile = _read(tmp_path, b)
    assert profile.steps.step_num.tolist() == [0]
    assert (profile.steps.start_ps.tolist(), profile.steps.end_ps.tolist()) == ([0], [123_000_000])  # from 2 µs to 125
    analysis = analyze_host(profile)
    assert analysis.step_source.description == "1 step from Optimizer.step#AdamW.step markers"
    (allocator,) = analysis.allocators
    assert allocator.verdict.verdict == "inconclusive"
    assert not [g for g in allocator.suspects.families if g.kind == "growing"]


def test_repeated_optimizer_steps_end_the_training_steps(tmp_path):
    b = SnapshotBuilder()
    _loop(b, 4, leak=True)  # each step: a temporary at t+10..t+20, a kept buffer at t+30
    for step in range(4):
        b.annotate("Optimizer.step#SGD.step", 100 * step + 40, 100 * step + 60)
    analysis = analyze_host(_read(tmp_path, b))
    assert (analysis.step_source.kind, analysis.step_source.num_steps) == (STEP_NUM, 4)
    assert analysis.step_source.description == "4 steps from Optimizer.step#SGD.step markers"
    (allocator,) = analysis.allocators
    assert allocator.verdict.verdict == LEAK, allocator.verdict
