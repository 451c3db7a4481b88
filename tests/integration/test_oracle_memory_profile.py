"""The peak equals XProf's memory_profile converter on the demo's real TensorFlow captures."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import tb_leakfinder
from tb_leakfinder.analyses.breakdown import live_at
from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.analyses.steps import containing_step
from tb_leakfinder.read.formats.xplane.reader import read_host
from tests.support.demo import demo_xplane
from tests.support.xprof_oracle import XPROF_BEFORE_WINDOW_ROW, memory_profile_allocators


@pytest.mark.parametrize("tb_run", ["tf_leak", "tf_fixed"])
def test_peak_equals_xprof(tb_run, tmp_path):
    # XProf writes cache files beside the profile it reads: give it a copy.
    path = str(shutil.copy(demo_xplane(tb_run), tmp_path))
    oracle = memory_profile_allocators(path)
    (run,) = tb_leakfinder.analyze(path)["runs"]
    ours = {a["memory_id"]: a for a in run["hosts"][0]["allocators"]}
    assert set(ours) == set(oracle)
    for name, peak in oracle.items():
        assert ours[name]["peak_bytes_in_use"] == peak["peakBytesInUse"]
        assert ours[name]["peak_heap_bytes"] == peak["heapAllocatedBytes"]
        assert ours[name]["peak_stack_reserved_bytes"] == peak["stackReservedBytes"]
        assert ours[name]["peak_fragmentation"] == pytest.approx(peak["fragmentation"], abs=1e-5)
        assert ours[name]["peak_time_ps"] == peak["time_ps"]
        assert ours[name]["memory_capacity_bytes"] == peak["memoryCapacity"]


@pytest.mark.parametrize("tb_run", ["tf_leak", "tf_fixed"])
def test_before_window_bytes_against_xprofs_unused_preallocated_row(tb_run, tmp_path):
    """XProf groups these events into steps on load and attributes only the peak step's buffers.

    Its "unused preallocated device memory" row is therefore our bytes from
    before the window plus the buffers of earlier steps still live at the peak.
    """
    path = str(shutil.copy(demo_xplane(tb_run), tmp_path))
    oracle = memory_profile_allocators(path)
    analysis = analyze_host(read_host(path, "vm"))
    for a in analysis.allocators:
        peak = a.summary.peak_event
        live = np.flatnonzero(live_at(a.buffers, peak, int(a.events.time_ps[peak])))
        peak_step = containing_step(a.events.time_ps[peak : peak + 1], analysis.profile.steps)[0]
        earlier = int(a.buffers.chunk_bytes[live[a.buffers.alloc_step[live] != peak_step]].sum())
        assert a.peak_before_window_bytes > 0 and earlier > 0
        assert a.peak_before_window_bytes + earlier == oracle[a.memory_id]["special"][XPROF_BEFORE_WINDOW_ROW]
