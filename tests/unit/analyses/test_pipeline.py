"""A host's allocators (analyses/pipeline.py) in natural order (which one a host opens on: test_host_decisions.py)."""

from __future__ import annotations

from tb_leakfinder.analyses.pipeline import natural_key


def test_numbers_in_names_sort_as_numbers():
    names = ["GPU_10_bfc", "GPU_2_bfc", "TPU:1", "GPU_0_bfc", "cpu", "TPU:0"]
    assert sorted(names, key=natural_key) == ["GPU_0_bfc", "GPU_2_bfc", "GPU_10_bfc", "TPU:0", "TPU:1", "cpu"]
