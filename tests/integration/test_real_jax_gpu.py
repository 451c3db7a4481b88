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
    assert all(g["kind"] != "growing" for a in host["allocators"] for g in a["families"])


def test_each_verdict_names_jax_and_the_memory_its_allocator_hands_out(profile):
    """The file says JAX (its programs are jit_<function>, PJRT's pinned host memory is xla_gpu_host_bfc): the GPU's
    allocator by its device plane, the pinned host memory by its words and the id XProf's Memory Profile lists."""
    _name, host = profile
    device, pinned = host["allocators"]
    assert device["reason"].startswith("No leak in JAX's GPU:0 allocator: ")
    assert pinned["reason"].startswith("No leak in JAX's pinned host memory allocator (xla_gpu_host_bfc): ")


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


# The peak's largest row of each profile, checked by hand against its HLO (`/host:metadata`):
# - gemm: jit_dot(49)'s allocation 0 is its only live-out, 134,217,728 bytes, defined by the dot
#   bf16[8192,8192] whose source is generate_gemm_trace.py:37; two such outputs are live at the peak.
# - attn: jit_matmul(59)'s allocation 6 is its temporaries block, 134,217,728 bytes requested (the BFC
#   chunk is 251,658,240), whose largest buffer is the dot of generate_attention_trace.py:26.
PEAK_ROWS = {
    "amd_jax08_gemm": (
        "output 0 of jit_dot(49)",
        "jit_dot(49)",
        0,
        "dot_general",
        "generate_gemm_trace.py:37",
        ["generate_gemm_trace.py:31 in run_gemms"],
    ),
    "amd_jax08_attn": (
        "temporaries of jit_matmul(59)",
        "jit_matmul(59)",
        6,
        "dot_general",
        "generate_attention_trace.py:26",
        ["generate_attention_trace.py:21 in attention", "generate_attention_trace.py:29 in transformer_block"],
    ),
}


def test_the_peak_is_named_by_its_program_buffer_line_and_python_frames(profile):
    name, host = profile
    row = host["allocators"][0]["peak_breakdown"][0]
    op, program, allocation, hlo_op, where, stack = PEAK_ROWS[name]
    site = row["site"]
    assert (row["op"], site["program"], site["allocation"], site["hlo_op"], row["where"]) == (
        op,
        program,
        allocation,
        hlo_op,
        where,
    )
    assert site["match"] == "exact" and site["stack"] == stack


def test_no_group_or_peak_row_inside_a_program_stays_unnamed(profile):
    _name, host = profile
    for a in host["allocators"]:
        rows = [*a["families"], *(r for r in a["peak_breakdown"] if r["category"] == "buffers")]
        assert rows
        for row in rows:
            assert row["op"] and row["site"]["context"] in ("program", "transfer", "outside"), row
            assert row["site"]["match"] not in ("none", "no_hlo"), row
            assert row["where"], row
        assert "(unknown op)" not in a["reason"]
