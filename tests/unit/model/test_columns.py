"""model/columns.py: a stable sort by one key, and reordering a table in the memory of its own columns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tb_leakfinder.model.columns import packed_argsort, permute, sorted_distinct, stable_argsort


def _table(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "time": rng.integers(-(1 << 62), 1 << 62, n),
        "kind": rng.integers(0, 2, n).astype(np.int8),
        "allocator": rng.integers(0, 7, n).astype(np.int32),
        "addr": rng.integers(0, 1 << 63, n, dtype=np.uint64),
        "fragmentation": rng.random(n),
        "op": rng.integers(0, 300, n).astype(np.int32),
    }


def test_permute_gives_each_column_in_order_with_its_dtype() -> None:
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 1000):
        columns = _table(n, rng)
        expected = {name: column[np.argsort(columns["time"], kind="stable")] for name, column in columns.items()}
        permute(columns, np.argsort(columns["time"], kind="stable"))
        assert list(columns) == list(expected)
        for name, column in columns.items():
            assert column.dtype == expected[name].dtype
            np.testing.assert_array_equal(column, expected[name])


def test_permute_reuses_the_memory_of_replaced_columns() -> None:
    columns = _table(1000, np.random.default_rng(1))
    buffers = {column.ctypes.data for column in columns.values()}
    permute(columns, np.random.default_rng(2).permutation(1000))
    # One new buffer per item size (8, 1, 4 bytes); the other columns land in replaced ones.
    reused = [column for column in columns.values() if column.ctypes.data in buffers]
    assert len(reused) == len(columns) - 3


def test_a_column_held_elsewhere_is_left_intact() -> None:
    columns = _table(500, np.random.default_rng(3))
    held, view = columns["time"], columns["addr"][10:]
    before_held, before_view = held.copy(), view.copy()
    order = np.random.default_rng(4).permutation(500)
    expected = {name: column[order] for name, column in columns.items()}
    permute(columns, order)
    np.testing.assert_array_equal(held, before_held)
    np.testing.assert_array_equal(view, before_view)
    for name, column in columns.items():
        np.testing.assert_array_equal(column, expected[name])


def test_a_column_of_one_value_stays_as_it_is_and_floats_always_move() -> None:
    rng = np.random.default_rng(6)
    columns = {
        "group_id": np.full(1000, -1, np.int64),
        "time": rng.integers(0, 1 << 40, 1000),
        "zeros": np.where(rng.random(1000) < 0.5, -0.0, 0.0),  # equal as numbers, not as text
    }
    group_id = columns["group_id"]
    expected = {name: column[np.argsort(columns["time"])] for name, column in columns.items()}
    permute(columns, np.argsort(columns["time"]))
    assert columns["group_id"] is group_id
    for name, column in columns.items():
        np.testing.assert_array_equal(np.signbit(column), np.signbit(expected[name]))
        np.testing.assert_array_equal(column, expected[name])


def test_permute_leaves_the_memory_of_a_kept_slice_of_a_view_alone() -> None:
    # A slice of a view refers to the view's base, not to the view: the view is not the only user of its memory.
    columns = {"view": np.arange(6, dtype=np.int64).view(np.int64), "other": np.arange(6, dtype=np.int64) * 10}
    kept = columns["view"][2:]
    permute(columns, np.arange(6)[::-1].copy())
    np.testing.assert_array_equal(kept, [2, 3, 4, 5])
    np.testing.assert_array_equal(columns["other"], [50, 40, 30, 20, 10, 0])


_INTEGER_DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64]


@given(st.sampled_from(_INTEGER_DTYPES).flatmap(lambda dtype: hnp.arrays(dtype, st.integers(0, 300))))
def test_stable_argsort_is_numpys_stable_argsort(keys: np.ndarray) -> None:
    np.testing.assert_array_equal(stable_argsort(keys), np.argsort(keys, kind="stable"))


@pytest.mark.parametrize(
    ("dtype", "low", "high"),
    [
        (np.uint64, 0x7F00_0000_0000, 0x7FFF_FFFF_FFFF),  # device addresses: packed with the row numbers
        (np.int32, -(1 << 31), (1 << 31) - 1),  # a range wider than the dtype's positive half
        (np.int64, -(1 << 62), 1 << 62),  # too wide to pack with the row numbers: numpy's stable sort
        (np.uint64, 0, (1 << 64) - 1),
    ],
)
def test_stable_argsort_keeps_rows_of_equal_keys_in_order(dtype: type, low: int, high: int) -> None:
    rng = np.random.default_rng(5)
    values = rng.integers(low, high, 50, dtype=dtype, endpoint=True)
    keys = values[rng.integers(0, 50, 100_000)]  # each key on about 2,000 rows
    order = stable_argsort(keys)
    assert order.dtype == np.intp
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))


@given(
    st.sampled_from(_INTEGER_DTYPES).flatmap(lambda dtype: hnp.arrays(dtype, st.integers(0, 300))),
    st.integers(1, 40),
    st.data(),
)
def test_packed_argsort_of_groups_is_numpys_lexsort(keys: np.ndarray, num_groups: int, data: st.DataObject) -> None:
    groups = data.draw(hnp.arrays(np.int32, len(keys), elements=st.integers(0, num_groups - 1)))
    order = packed_argsort(keys, groups, num_groups)
    span = (int(keys.max()) - int(keys.min())).bit_length() if len(keys) else 0
    if len(keys) > 1 and (num_groups - 1).bit_length() + span + (len(keys) - 1).bit_length() > 64:
        assert order is None
    else:
        assert order is not None and order.dtype == np.intp
        np.testing.assert_array_equal(order, np.lexsort((keys, groups)))


@given(st.sampled_from(_INTEGER_DTYPES).flatmap(lambda dtype: hnp.arrays(dtype, st.integers(0, 300))))
def test_sorted_distinct_is_numpys_unique(values: np.ndarray) -> None:
    distinct = sorted_distinct(values)
    assert distinct.dtype == values.dtype
    np.testing.assert_array_equal(distinct, np.unique(values))
