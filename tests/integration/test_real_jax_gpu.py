"""The two real JAX 0.8 ROCm GPU profiles of ../shared/profiles/jax_gpu/ (recorded by others, MIT licence).

Their figures: the profiles' README gives XProf 2.24.2's peaks and the event
counts. Neither program leaks: one sweeps attention sizes three times over,
the other GEMM sizes, and each frees what a size used before the next.
"""

from __future__ import annotations

import pytest

import tb_leakfinder
from tests.support.demo import ROOT

SHARED = ROOT.parent / "shared" / "profiles" / "jax_gpu"
# (GPU_0_bfc peak, its allocations and frees, xla_gpu_host_bfc's)
EXPECTED = {
    "amd_jax08_attn": (452_985_344, 126, 126, 18, 18),
    "amd_jax08_gemm": (482_345_216, 69, 69, 12, 12),
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def profile(request: pytest.FixtureRequest) -> tuple[str, dict]:
    folder = SHARED / request.param
    if not folder.is_dir():
        pytest.skip(f"{folder} is not here (the shared profiles lie beside the repository)")
    (run,) = tb_leakfinder.analyze(str(folder))["runs"]
    (host,) = run["hosts"]
    return request.param, host


def test_neither_real_jax_gpu_profile_leaks(profile):
    _name, host = profile
    assert host["verdict"] == "no_leak", host["reason"]
    assert all(g["kind"] != "growing" for a in host["allocators"] for g in a["groups"])


def test_peaks_and_counts_equal_xprofs(profile):
    name, host = profile
    peak, allocs, frees, host_allocs, host_frees = EXPECTED[name]
    device, pinned = host["allocators"]
    assert (device["memory_id"], pinned["memory_id"]) == ("GPU_0_bfc", "xla_gpu_host_bfc")
    assert device["peak_bytes_in_use"] == peak
    assert (device["num_allocations"], device["num_deallocations"]) == (allocs, frees)
    assert (pinned["num_allocations"], pinned["num_deallocations"], pinned["peak_bytes_in_use"]) == (host_allocs, host_frees, 256)


def test_a_rising_heap_figure_is_explained_beside_no_leak(profile):
    """Both sweeps' heap at step ends rises over the window (to larger sizes), yet nothing leaks: the reason says why."""
    _name, host = profile
    device = host["allocators"][0]
    assert device["growth_bytes_per_step"] * host["num_steps"] >= 0.05 * device["peak_heap_bytes"]
    assert "The heap in use at step ends fits +" in device["reason"]
    assert "which no family kept growing" in device["reason"]
