"""analyses/downsample.py: the one downsampler keeps the ends, every bucket's extremes and the peak."""

from __future__ import annotations

import numpy as np
import pytest

from tb_leakfinder.analyses.downsample import MIN_POINTS, downsample


@pytest.mark.parametrize("points", [MIN_POINTS, 9, 100, 1001])
def test_at_most_points_in_order_with_the_ends_and_the_peak(points):
    rng = np.random.default_rng(points)
    x = np.cumsum(rng.integers(1, 1000, 50_000)).astype(np.int64)
    values = rng.integers(0, 1 << 40, len(x)).astype(np.int64)
    values[31_337] = 1 << 41  # a one-sample spike
    kept = downsample(x, values, points)
    assert len(kept) <= points
    assert np.all(np.diff(kept) > 0)
    assert kept[0] == 0 and kept[-1] == len(x) - 1
    assert 31_337 in kept
    assert values[kept].max() == values.max() and values[kept].min() >= values.min()


def test_short_series_are_kept_whole():
    x = np.arange(10, dtype=np.int64)
    assert downsample(x, x * 2, 10).tolist() == list(range(10))


def test_each_bucket_keeps_its_minimum_and_maximum():
    x = np.arange(4000, dtype=np.int64)
    values = np.zeros(4000, np.int64)
    # One dip and one spike per quarter of the series: with 4 buckets and more, every one survives.
    spikes, dips = [100, 1100, 2100, 3100], [900, 1900, 2900, 3900]
    values[spikes], values[dips] = 50, -50
    kept = set(downsample(x, values, 17).tolist())
    assert set(spikes) <= kept and set(dips) <= kept


def test_far_apart_times_do_not_overflow():
    x = np.array([-(1 << 62), 0, 1 << 62] * 10, np.int64)
    x.sort()
    kept = downsample(x, np.arange(len(x), dtype=np.int64), MIN_POINTS)
    assert kept[0] == 0 and kept[-1] == len(x) - 1 and len(kept) <= MIN_POINTS
