"""The order of a pod's overview: which hosts and allocators a user should look at first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tb_leakfinder.analyses import verdict as verdicts


@dataclass(frozen=True)
class Standing:
    """What an overview row is ranked by (None: not measured, as on a host that could not be read)."""

    host: str
    verdict: str
    leak_bytes_per_step: float | None  # the growing families' rate, when the allocator leaks
    bytes_per_step: float | None  # the heap's rate
    peak_bytes_in_use: int | None
    memory_capacity_bytes: int | None  # None or 0: not known


def worst_first(row: Standing) -> tuple[Any, ...]:
    """Leaks before the rest; then the fastest leak (its growing families' rate), then the fastest-rising heap,
    then the fullest memory, then the name."""
    capacity = row.memory_capacity_bytes
    peak = row.peak_bytes_in_use or 0
    fill = peak / capacity if capacity else 0.0
    return (
        -verdicts.SEVERITY.get(row.verdict, verdicts.SEVERITY[verdicts.INCONCLUSIVE]),
        -(row.leak_bytes_per_step or 0.0),
        -(row.bytes_per_step or 0.0),
        -fill,
        -peak,
        row.host,
    )


def ranked(rows: Sequence[Standing]) -> list[int]:
    """The rows' indices, worst first (`worst_first`); rows that rank alike keep their order."""
    return sorted(range(len(rows)), key=lambda i: worst_first(rows[i]))


def leaking_hosts(verdicts_per_host: Sequence[Sequence[str]]) -> int:
    """How many hosts leak: a host leaks when one of its allocators does."""
    return sum(1 for mine in verdicts_per_host if verdicts.LEAK in mine)
