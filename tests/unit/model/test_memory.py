"""model/memory.py: the order of a host's events, grouped by allocator with each allocator's in time order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tb_leakfinder.model.memory import event_order, grouping_order


@given(
    st.integers(1, 6).flatmap(
        lambda count: st.tuples(
            st.just(count),
            hnp.arrays(np.int32, st.integers(0, 200), elements=st.integers(0, count - 1)),
        )
    ),
    st.data(),
)
def test_grouping_a_time_order_sorts_by_allocator_time_row(case: tuple[int, np.ndarray], data: st.DataObject) -> None:
    count, allocator = case
    times = data.draw(hnp.arrays(np.int64, len(allocator), elements=st.integers(0, 20)))
    time_order = np.argsort(times, kind="stable")
    expected = sorted(range(len(allocator)), key=lambda row: (allocator[row], times[row], row))
    order = grouping_order(allocator, count, time_order.copy())
    np.testing.assert_array_equal(order, expected)
    # Without an order first: the rows as they are, grouped.
    grouped = grouping_order(allocator, count)
    rows = np.arange(len(allocator)) if grouped is None else grouped
    np.testing.assert_array_equal(rows, sorted(range(len(allocator)), key=lambda row: (allocator[row], row)))


def test_events_grouped_already_keep_their_order() -> None:
    allocator = np.array([0, 0, 1, 1, 1, 2], np.int32)
    assert grouping_order(allocator, 3) is None
    order = np.arange(6)
    assert grouping_order(allocator, 3, order) is order
    assert grouping_order(np.zeros(4, np.int32), 1, None) is None


@pytest.mark.parametrize("count", [3, 40_000])  # 16-bit keys (a radix sort), and allocator indices too wide for them
def test_grouping_keeps_each_allocators_rows_in_order(count: int) -> None:
    rng = np.random.default_rng(5)
    allocator = rng.integers(0, count, 5000).astype(np.int32)
    order = rng.permutation(5000)
    grouped = grouping_order(allocator, count, order.copy())
    np.testing.assert_array_equal(grouped, order[np.lexsort((np.arange(5000), allocator[order]))])


@pytest.mark.parametrize("span", [1 << 20, 1 << 62])  # allocator, time and row packed in one key; too wide for that
@pytest.mark.parametrize(("lines", "count"), [(1, 1), (1, 3), (2, 3), (5, 5), (5, 1)])
def test_event_order_groups_by_allocator_then_time_then_row(span: int, lines: int, count: int) -> None:
    # A reader's rows: its lines one after another, each in time order, with ties.
    rng = np.random.default_rng(lines * 10 + count)
    times = np.concatenate([np.sort(rng.integers(0, span, 2000)) // 7 * 7 for _ in range(lines)])
    allocator = rng.integers(0, count, len(times)).astype(np.int32)
    order = event_order(times, allocator, count)
    rows = np.arange(len(times)) if order is None else order
    np.testing.assert_array_equal(rows, np.lexsort((np.arange(len(times)), times, allocator)))
    assert order is not None or (lines == 1 and count == 1)
