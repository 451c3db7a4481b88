"""The pod overview of a multi-host run: one row per host and allocator, worst first."""

from __future__ import annotations

from typing import Any

from tb_leakfinder.analyses.verdict import INCONCLUSIVE, LEAK, SEVERITY
from tb_leakfinder.report import Json


def _row(host: Json, allocator: Json | None) -> Json:
    a = allocator or {}
    return {
        "host": host["host"],
        "memory_id": a.get("memory_id", a.get("name")),
        "name": a.get("name"),
        "verdict": a.get("verdict", host["verdict"]),
        "bytes_per_step": a.get("growth_bytes_per_step"),
        "peak_bytes_in_use": a.get("peak_bytes_in_use"),
        "memory_capacity_bytes": a.get("memory_capacity_bytes"),
        "step_source": host.get("step_source"),
        "error": host.get("error"),
    }


def _worst_first(row: Json) -> tuple[Any, ...]:
    """Leaks before the rest; then the fastest growth, then the fullest memory, then the name."""
    capacity = row["memory_capacity_bytes"]
    peak = row["peak_bytes_in_use"] or 0
    fill = peak / capacity if capacity else 0.0
    return (-SEVERITY.get(row["verdict"], SEVERITY[INCONCLUSIVE]), -(row["bytes_per_step"] or 0.0), -fill, -peak, row["host"])


def overview_json(run: Json) -> Json:
    """From a run's report JSON (`report.run_json`): what the Leaks tab shows first for a pod."""
    rows = [_row(h, a) for h in run["hosts"] for a in (h["allocators"] or [None])]
    rows.sort(key=_worst_first)
    return {
        "run": run["run"],
        "num_hosts": len(run["hosts"]),
        "num_leaking_hosts": sum(1 for h in run["hosts"] if h["verdict"] == LEAK),
        "rows": rows,
    }
