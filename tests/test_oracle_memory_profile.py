"""Peak bytes in use equal XProf's memory_profile converter on the same files."""

from __future__ import annotations

import shutil

import pytest

import tb_leakfinder
from tests.demo import demo_xplane
from tests.xprof_oracle import memory_profile_peaks


@pytest.mark.parametrize("tb_run", ["tf_leak", "tf_fixed"])
def test_peak_equals_xprof(tb_run, tmp_path):
    # XProf writes cache files beside the profile it reads: give it a copy.
    path = str(shutil.copy(demo_xplane(tb_run), tmp_path))
    oracle = memory_profile_peaks(path)
    (run,) = tb_leakfinder.analyze(path)["runs"]
    ours = {a["name"]: a for a in run["hosts"][0]["allocators"]}
    assert set(ours) == set(oracle)
    for name, peak in oracle.items():
        assert ours[name]["peak_bytes_in_use"] == peak["peakBytesInUse"]
        assert ours[name]["peak_heap_bytes"] == peak["heapAllocatedBytes"]
        assert ours[name]["peak_stack_reserved_bytes"] == peak["stackReservedBytes"]
        assert ours[name]["peak_fragmentation"] == pytest.approx(peak["fragmentation"], abs=1e-5)
        assert ours[name]["peak_time_ps"] == peak["time_ps"]
