"""Ordering a table of equal-length columns: a stable sort by one integer key, and reordering every column in
the memory of the columns it replaces."""

from __future__ import annotations

import sys

import numpy as np


def permute(columns: dict[str, np.ndarray], order: np.ndarray) -> None:
    """Puts every column of `columns` (a dict owning them) in `order`, a permutation of their rows.

    Each column is gathered into the buffer of an earlier column of the same
    item size that nothing else refers to any more, so a table is reordered
    with one spare buffer per item size instead of a new array per column:
    fresh memory costs page faults (here, more CPU than the gather itself)
    and a second copy of the table at once.
    """
    spares: dict[int, np.ndarray] = {}
    for name in list(columns):
        column = columns[name]
        if _constant(column):  # in any order the same (XSpace's stack bytes and group ids are often all one value)
            continue
        spare = spares.pop(column.dtype.itemsize, None)
        out = np.empty_like(column) if spare is None else spare.view(column.dtype)
        np.take(column, order, out=out, mode="clip")  # "clip": written straight into `out`, not buffered
        columns[name] = out
        # Its buffer is reused only when nothing else refers to its memory: not the old column (the count includes
        # getrefcount's own argument), nor what it is a view of, each referred to by the one before it alone (counted
        # with `link` too): a slice of a view refers to the view's base, not to the view.
        reusable = column.flags.writeable and column.flags.c_contiguous and sys.getrefcount(column) == 2
        link = column.base
        while reusable and link is not None:
            reusable = sys.getrefcount(link) == 3
            link = link.base if isinstance(link, np.ndarray) else None
        del link
        if reusable:
            spares[column.dtype.itemsize] = column
        del column


def _constant(column: np.ndarray) -> bool:
    """An integer column of one value (floats are moved: -0.0 equals 0.0 but prints otherwise)."""
    if column.dtype.kind not in "biu" or not len(column) or column[0] != column[-1]:
        return False
    return bool(column.min() == column.max())


def stable_argsort(keys: np.ndarray) -> np.ndarray:
    """`np.argsort(keys, kind="stable")` of an integer column, by one unstable sort where it can.

    numpy's stable sort of 64-bit integers is a timsort, several times slower
    than its unstable sort on unordered keys (addresses): see `packed_argsort`.
    """
    order = packed_argsort(keys) if keys.dtype.kind in "iu" else None
    return np.argsort(keys, kind="stable") if order is None else order


def packed_argsort(keys: np.ndarray, groups: np.ndarray | None = None, num_groups: int = 1) -> np.ndarray | None:
    """The stable order of integer `keys`, first by `groups` (integers in [0, num_groups)) when given, as
    `np.lexsort((keys, groups))` gives it, by one unstable sort; None where it cannot.

    Where the group, the key's range and the row count fit in 64 bits together,
    each group and key (less the smallest) is packed above its row number and
    the packed keys sorted: equal keys then order by row, as the stable sort
    leaves them.
    """
    n = len(keys)
    if n < 2:
        return np.arange(n, dtype=np.intp)
    bits = (n - 1).bit_length()
    low = keys.min()
    key_bits = (int(keys.max()) - int(low)).bit_length()
    group_bits = 0 if groups is None else (num_groups - 1).bit_length()
    if group_bits + key_bits + bits > 64:
        return None
    # One copy of the keys, shifted and packed in place (each temporary is a column of fresh pages): a signed key
    # cast to uint64 wraps as its smallest does, so their difference, below 2**63 (bits >= 1), comes out exact.
    packed = keys.astype(np.uint64)
    packed -= np.asarray(low).astype(np.uint64)
    if groups is not None:
        above = groups.astype(np.uint64)
        above <<= np.uint64(key_bits)
        packed |= above
        del above
    packed <<= np.uint64(bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    packed &= np.uint64((1 << bits) - 1)
    # Row numbers: the packed keys themselves where numpy's index type is 64 bits wide, a copy where it is narrower.
    order: np.ndarray = packed.view(np.intp) if np.dtype(np.intp).itemsize == packed.itemsize else packed.astype(np.intp)
    return order


def ascending(values: np.ndarray) -> bool:
    """Whether a column of integers never steps back."""
    return not bool(np.any(values[1:] < values[:-1]))


def sorted_distinct(values: np.ndarray) -> np.ndarray:
    """`np.unique(values)` of an integer array: its distinct values, sorted. Without np.unique's check for a
    masked array, which imports numpy.ma (10-20 ms of a cold start) the first time it runs."""
    ordered = np.sort(values, axis=None)
    keep = np.ones(len(ordered), bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]
