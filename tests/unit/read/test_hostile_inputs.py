"""Issue 31's hostile files, each through the real CLI in a process of its own under an address-space limit.

Each once hung, took minutes or gigabytes, or crashed with a traceback (docs/robustness.md has the figures before
and after). The child's timeout and its RLIMIT_AS bound what a regression could cost; the assertions are what the
user sees: an exit status and one line naming the file, or the report.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tb_leakfinder import compiled
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.torch_trace import reader
from tb_leakfinder.testing import hostile

# Far more than any of these takes now, far less than what they took before.
CHILD_TIMEOUT_S = 60
ADDRESS_SPACE = 1536 << 20


def run_check(path: Path, *more: str, pure: bool = False) -> subprocess.CompletedProcess[str]:
    """`pure`: with the reference XSpace decoder rather than the compiled scanner."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    command = [sys.executable, "-m", "tb_leakfinder.views.cli", "check", str(path), "--no-cache", *more]
    env = {**os.environ, compiled.PURE_PYTHON_ENV: "1" if pure else "0"}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, preexec_fn=limit, stdin=subprocess.DEVNULL, env=env
    )


def refused(result: subprocess.CompletedProcess[str], path: Path, why: str) -> None:
    """Exit 2 and one error line naming the file and saying why; no traceback."""
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"tb-leakfinder: error: {path}") and why in line, line


@pytest.mark.parametrize("name", ["w.pt.trace.json", "w.pt.trace.json.gz", "m.prof", "h.xplane.pb"])
def test_a_fifo_is_refused_at_once_naming_it(tmp_path, name):
    path = hostile.fifo(tmp_path / name)
    refused(run_check(path), path, "a FIFO, not a regular file")


def test_precompute_of_a_logdir_with_a_fifo_ends_naming_it(tmp_path):
    (tmp_path / "logs").mkdir()
    fifo = hostile.fifo(tmp_path / "logs" / "m.prof")
    command = [sys.executable, "-m", "tb_leakfinder.views.cli", "precompute", str(tmp_path / "logs")]
    result = subprocess.run(
        [*command, "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, timeout=CHILD_TIMEOUT_S
    )
    assert result.returncode == 2
    assert result.stdout.endswith("1 not readable\n")
    assert result.stderr.splitlines()[-1].endswith(f"{fifo}: a FIFO, not a regular file: it is not read")


def test_a_prof_linked_to_dev_zero_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "m.prof"
    path.symlink_to("/dev/zero")
    refused(run_check(path), path, "a character device, not a regular file")


def test_fifos_beside_a_good_trace_are_sniffed_without_blocking_and_the_trace_is_reported(tmp_path):
    hostile.reused_address(tmp_path / "w.pt.trace.json")
    for name in ("x.pt.trace.json", "other.json", "s.pickle", "s.pkl"):
        hostile.fifo(tmp_path / name)
    result = run_check(tmp_path)
    # The FIFOs named as JSON or pickles are sniffed (b"": no profile); the one named as a trace is a host of its own,
    # unreadable: the gate fails on it (exit 2) after saying what it could tell of the good trace.
    assert result.returncode == 2, result.stderr
    assert f"inconclusive  {tmp_path.name}: Cannot tell: 11 allocations of an address already in use" in result.stdout
    fifo = tmp_path / "x.pt.trace.json"
    assert result.stderr.splitlines() == [f"tb-leakfinder: error: {fifo}: a FIFO, not a regular file: it is not read"]


def test_a_stack_of_a_location_repeated_200000_times_is_expanded_only_as_deep_as_it_is_used(tmp_path):
    path = hostile.deep_location(tmp_path / "m.prof")
    assert path.stat().st_size < 16 << 10  # 10^9 frames in 8 KB
    result = run_check(path, "--allocator", "cpu:0")
    assert result.returncode == 0, result.stderr
    assert "A snapshot: 1 live buffer group holding 4 KiB" in result.stdout


def test_a_snapshot_listing_one_entry_a_million_times_through_the_memo_is_refused(tmp_path):
    path = hostile.memo_entries(tmp_path / "s.pickle", 1_000_000)
    refused(run_check(path), path, "a pickle memo reference before byte 65547 lists a dict holding containers (a record) again")


def test_a_5000_digit_number_is_the_projects_error(tmp_path):
    path = hostile.long_integer(tmp_path / "w.pt.trace.json")
    refused(run_check(path), path, "Exceeds the limit (4300 digits)")


@pytest.mark.slow
def test_a_gzip_of_20_million_empty_events_is_refused_for_its_events_per_byte(tmp_path):
    path = hostile.empty_events(tmp_path / "w.pt.trace.json.gz", 20_000_000)
    refused(run_check(path), path, "its gzip holds repeated text")


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: hostile.devices(p / "w.pt.trace.json.gz", 2_000), "it names more than 1024 devices or allocators"),
        (lambda p: hostile.device_labels(p / "m.prof", 2_000), "it names more than 1024 devices or allocators"),
        pytest.param(
            lambda p: hostile.threads(p / "w.pt.trace.json.gz", 70_000), "on more than 65536 threads", marks=pytest.mark.slow
        ),
    ],
    ids=["trace_devices", "pprof_devices", "trace_threads"],
)
def test_a_small_file_naming_too_many_devices_or_threads_is_refused(tmp_path, make: Callable[[Path], Path], why):
    path = make(tmp_path)
    refused(run_check(path), path, why)


@pytest.mark.parametrize("pure", [False, True], ids=["scanner", "reference"])
@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda p: hostile.xspace_allocators(p, 2_000), "it names more than 1024 devices or allocators"),
        (lambda p: hostile.xspace_allocators(p, 2_000, integer_ids=True), "it names more than 1024 devices or allocators"),
        (lambda p: hostile.xspace_devices(p, 2_000), "it names more than 1024 devices or allocators"),
        pytest.param(
            lambda p: hostile.xspace_threads(p, 70_000), "its events are on more than 65536 threads", marks=pytest.mark.slow
        ),
        (lambda p: hostile.xspace_empty_planes(p, 1_000_000), "it has more than 4096 planes"),
    ],
    ids=["allocator_names", "allocator_ids", "device_planes", "threads", "empty_planes"],
)
def test_an_xspace_naming_too_many_allocators_devices_threads_or_planes_is_refused_by_both_decoders(
    tmp_path, make: Callable[[Path], Path], why, pure
):
    path = make(tmp_path / "h.xplane.pb")
    result = run_check(path, pure=pure)
    refused(result, path, f"an XSpace profile too large to read ({why})")


@pytest.mark.slow
@pytest.mark.parametrize("pure", [False, True], ids=["scanner", "reference"])
def test_an_xspace_of_as_many_allocators_and_planes_as_the_caps_is_read(tmp_path, pure):
    allocators = hostile.xspace_allocators(tmp_path / "a.xplane.pb", limits.MAX_ALLOCATORS)
    result = run_check(allocators, pure=pure)
    assert result.returncode == 0 and f"No leak on {limits.MAX_ALLOCATORS} allocators (a0, a1" in result.stdout, result.stderr
    # The /host:CPU plane is the first of the file's planes.
    planes = hostile.xspace_empty_planes(tmp_path / "p.xplane.pb", limits.MAX_PLANES - 1)
    result = run_check(planes, pure=pure)
    assert result.returncode == 0 and "The largest never-freed family is Mul" in result.stdout, result.stderr


@pytest.mark.slow
def test_an_xspace_of_threads_up_to_the_cap_is_read(tmp_path):
    path = hostile.xspace_threads(tmp_path / "h.xplane.pb", limits.MAX_LINES)
    result = run_check(path)
    assert (
        result.returncode == 1
        and "Leak in TensorFlow's GPU:0 allocator (GPU_0_bfc): +1.6 MiB per window from Mul (a.py:1 in f)" in result.stdout
    ), result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("pure", [False, True], ids=["scanner", "reference"])
def test_an_xspace_of_100000_distinct_call_and_op_names_is_read(tmp_path, pure):
    path = hostile.xspace_names(tmp_path / "h.xplane.pb", 100_000)
    result = run_check(path, pure=pure)
    said = "No leak in TensorFlow's GPU:0 allocator (GPU_0_bfc): nothing grows window after window"
    assert result.returncode == 0 and said in result.stdout, result.stderr


@pytest.mark.slow
def test_100000_distinct_function_names_are_read(tmp_path):
    path = hostile.function_names(tmp_path / "w.pt.trace.json.gz", 100_000)
    result = run_check(path)
    assert result.returncode == 0, result.stderr
    assert "a.py:0 in f0" in result.stdout


@pytest.mark.slow
def test_threads_up_to_the_cap_are_read(tmp_path):
    path = hostile.threads(tmp_path / "w.pt.trace.json.gz", limits.MAX_LINES)
    result = run_check(path)
    assert result.returncode == 1 and "Leak" in result.stdout, result.stderr


def test_innermost_op_per_line_equals_a_direct_search():
    rng = np.random.default_rng(31)
    ops = reader._Complete()
    computing = ops.strings("aten::mm")  # no allocation primitive: each op names its own allocations
    for _ in range(400):
        ops.name.append(computing)
        start = float(rng.integers(0, 1000))
        ops.start.append(start)
        ops.end.append(start + float(rng.integers(0, 50)))
        ops.line.append(int(rng.integers(0, 7)))
    times = rng.integers(0, 1050, 3000) * reader.US_TO_PS
    lines = rng.integers(0, 9, 3000)
    assert_innermost_found(ops, times, lines)


def test_innermost_op_deep_down_a_stack_equals_a_direct_search():
    # Ops nested deeper than the steps taken for all events at once: the later events walk far down one at a time.
    ops = reader._Complete()
    computing = ops.strings("aten::mm")
    depth = 8 * reader.MAX_STACK_STEPS
    for k in range(depth):
        ops.name.append(computing)
        ops.start.append(float(k))
        ops.end.append(float(2 * depth - k))
        ops.line.append(k % 2)
    rng = np.random.default_rng(32)
    times = rng.permutation(np.repeat(np.arange(2 * depth + 2), 2)) * reader.US_TO_PS
    lines = rng.integers(0, 2, len(times))
    assert_innermost_found(ops, times, lines)


def assert_innermost_found(ops: reader._Complete, times: np.ndarray, lines: np.ndarray) -> None:
    found = reader._innermost(times, lines, ops, 0.0)
    starts, ends = np.asarray(ops.start) * reader.US_TO_PS, np.asarray(ops.end) * reader.US_TO_PS
    op_lines = np.asarray(ops.line)
    for event in range(len(times)):
        around = [k for k in range(len(starts)) if op_lines[k] == lines[event] and starts[k] <= times[event] <= ends[k]]
        if not around:
            assert found[event] == -1
            continue
        # The innermost: the latest to start, of those the first to end (the direct search's own tie order).
        latest = max(starts[k] for k in around)
        innermost = min((k for k in around if starts[k] == latest), key=lambda k: (ends[k], -k))
        assert starts[found[event]] == latest and ends[found[event]] == ends[innermost], event


def test_a_surrogate_in_a_name_is_printed_escaped_under_a_strict_stdout(tmp_path):
    path = hostile.surrogate_names(tmp_path / "w.pt.trace.json")
    result = subprocess.run(
        [sys.executable, "-m", "tb_leakfinder.views.cli", "check", str(path), "--no-cache"],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        env={**os.environ, "PYTHONIOENCODING": "ascii:strict"},
    )
    assert result.returncode == 1, result.stderr
    assert "aten::\\ud800 (train\\ud800.py:7 in step)" in result.stdout
