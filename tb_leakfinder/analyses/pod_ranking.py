"""The order of a pod's overview: which hosts and allocators a user should look at first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tb_leakfinder.analyses import verdict as verdicts

Json = dict[str, Any]


def worst_first(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """Leaks before the rest; then the fastest leak (its growing families' rate), then the fastest-rising heap,
    then the fullest memory, then the name."""
    capacity = row["memory_capacity_bytes"]
    peak = row["peak_bytes_in_use"] or 0
    fill = peak / capacity if capacity else 0.0
    return (
        -verdicts.SEVERITY.get(row["verdict"], verdicts.SEVERITY[verdicts.INCONCLUSIVE]),
        -(row.get("leak_bytes_per_step") or 0.0),
        -(row["bytes_per_step"] or 0.0),
        -fill,
        -peak,
        row["host"],
    )
