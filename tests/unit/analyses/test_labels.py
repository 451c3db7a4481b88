"""XSpace's labels (allocators from memory ids and device planes, host memory, TF dtypes) and how figures read."""

from __future__ import annotations

import pytest

from tb_leakfinder.analyses.words import format_duration_ps, format_fraction
from tb_leakfinder.read.formats.xplane.labels import NO_MEMORY_ID, allocator_label, dtype_name, is_host_memory

TPU_PLANES = [f"/device:TPU:{n}" for n in range(4)]
GPU_PLANES = ["/device:GPU:0", "/device:GPU:1"]


@pytest.mark.parametrize(
    ("memory_id", "planes", "label"),
    [
        ("2", TPU_PLANES, "TPU:2"),  # index_on_host, as PJRT writes it
        ("1", GPU_PLANES, "GPU:1"),  # device_ordinal
        ("GPU_0_bfc", GPU_PLANES, "GPU:0"),
        ("GPU_0_bfc", TPU_PLANES, "GPU_0_bfc"),  # a GPU allocator is never labelled as a TPU
        ("GPU_7_bfc", GPU_PLANES, "GPU_7_bfc"),  # no such plane
        ("7", TPU_PLANES, "7"),
        ("2", [], "2"),
        ("gpu_host_bfc", GPU_PLANES, "gpu_host_bfc"),
        ("bfc_cpu_allocator_for_gpu", [], "bfc_cpu_allocator_for_gpu"),
        ("", TPU_PLANES, NO_MEMORY_ID),
        ("0", ["/device:TPU:0 garbage", "/device:CUSTOM:0", "/host:CPU"], "0"),
    ],
)
def test_allocator_label(memory_id, planes, label):
    assert allocator_label(memory_id, planes) == label


def test_host_memory_is_pinned_host_or_cpu_allocators():
    assert is_host_memory("gpu_host_bfc") and is_host_memory("xla_gpu_host_bfc")
    assert is_host_memory("bfc_cpu_allocator_for_gpu")
    assert not any(is_host_memory(m) for m in ("0", "GPU_0_bfc", "", "hbm"))


def test_dtype_invalid_or_absent_is_blank():
    assert dtype_name(-1) == dtype_name(0) == ""
    assert dtype_name(1) == "float" and dtype_name(99) == "dtype(99)"


@pytest.mark.parametrize(
    ("ps", "text"),
    [(100_000_000_000, "100 ms"), (1_500_000_000_000, "1.5 s"), (3113 * 10**12, "52 min"), (5 * 3600 * 10**12, "5 h")],
)
def test_durations_read_naturally(ps, text):
    assert format_duration_ps(ps) == text


@pytest.mark.parametrize(("f", "text"), [(0.64, "64%"), (0.025, "2.5%"), (0.00025, "< 0.1%"), (0.0, "0.0%"), (1.0, "100%")])
def test_fractions_read_as_the_tab_shows_them(f, text):
    assert format_fraction(f) == text
