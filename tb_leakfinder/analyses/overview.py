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


def host_rows(host: Json) -> list[Json]:
    """One host's rows, from its report JSON (`report.host_json` or `report.host_error_json`)."""
    return [_row(host, a) for a in (host["allocators"] or [None])]


def overview_json(run: str, rows_per_host: list[list[Json]]) -> Json:
    """What the Leaks tab shows first for a pod; a host leaks when one of its allocators does."""
    rows = sorted((row for rows in rows_per_host for row in rows), key=_worst_first)
    return {
        "run": run,
        "num_hosts": len(rows_per_host),
        "num_leaking_hosts": sum(1 for rows in rows_per_host if any(r["verdict"] == LEAK for r in rows)),
        "rows": rows,
    }


def run_overview_json(run: Json) -> Json:
    """From a run's report JSON (`report.run_json`)."""
    return overview_json(run["run"], [host_rows(h) for h in run["hosts"]])
