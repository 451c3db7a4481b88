"""A host's allocators (analyses/pipeline.py): in natural order, host memory last; it opens on the largest device."""

from __future__ import annotations

from tb_leakfinder.analyses.allocator_lookup import find_allocator
from tb_leakfinder.analyses.pipeline import natural_key
from tb_leakfinder.testing.xspace_builder import synthesize_devices
from tests.support.training_loops import analyze

GIB = 1 << 30


def test_allocators_in_natural_order_host_memory_last_opening_on_the_largest_device():
    builder, _ = synthesize_devices(12, 3, platform="GPU", id_stat="allocator_name", leak_device=10, leak_bytes_per_step=GIB)
    # Pinned host memory peaking above every device: still last, and never the one opened on.
    builder.alloc(10, 0x9000, 8 * GIB, allocator="xla_gpu_host_bfc", line="python")
    h = analyze(builder)
    assert [a.label for a in h.allocators] == [*(f"GPU:{d}" for d in range(12)), "xla_gpu_host_bfc"]
    assert h.allocators[-1].summary.peak_bytes_in_use > max(a.summary.peak_bytes_in_use for a in h.allocators[:-1])
    assert h.largest_device().label == "GPU:10" == find_allocator(h, None).label


def test_a_tie_opens_on_the_first_device():
    builder, _ = synthesize_devices(3, 2, platform="TPU")
    h = analyze(builder)
    assert [a.label for a in h.allocators] == ["TPU:0", "TPU:1", "TPU:2"]
    assert len({a.summary.peak_bytes_in_use for a in h.allocators}) == 1
    assert h.largest_device().label == "TPU:0"


def test_numbers_in_names_sort_as_numbers():
    names = ["GPU_10_bfc", "GPU_2_bfc", "TPU:1", "GPU_0_bfc", "cpu", "TPU:0"]
    assert sorted(names, key=natural_key) == ["GPU_0_bfc", "GPU_2_bfc", "GPU_10_bfc", "TPU:0", "TPU:1", "cpu"]
