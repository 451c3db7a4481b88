"""Reordering a table of equal-length columns, reusing the memory of the columns it replaces."""

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
        spare = spares.pop(column.dtype.itemsize, None)
        out = np.empty_like(column) if spare is None else spare.view(column.dtype)
        np.take(column, order, out=out, mode="clip")  # "clip": written straight into `out`, not buffered
        columns[name] = out
        # Only this function refers to the old column (the count includes getrefcount's own argument).
        if column.flags.writeable and column.flags.c_contiguous and sys.getrefcount(column) == 2:
            spares[column.dtype.itemsize] = column
        del column
