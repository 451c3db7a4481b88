"""Comparing two host reports: which never-freed groups are new, fixed, grown or shrunk.

Works on the report JSON, so a comparison shows exactly the figures each side's
own report shows. Groups are matched per allocator by (op, shape, dtype,
region), with op names normalised by `normalize_name`: TensorFlow and XLA number
repeated ops (`Mul_1`, `dense/MatMul_3`, `fusion.12`), and those numbers change
from one build of a program to the next without the program changing.
"""

from __future__ import annotations

import re
from typing import Any

from tb_leakfinder.analyses.labels import format_bytes
from tb_leakfinder.analyses.suspects import GROWING
from tb_leakfinder.analyses.verdict import LEAK

Json = dict[str, Any]

NEW, FIXED, GROWN, SHRUNK, UNCHANGED = "new", "fixed", "grown", "shrunk", "unchanged"
STATUS_ORDER = (NEW, GROWN, SHRUNK, FIXED, UNCHANGED)
# Changes smaller than this share of the larger side count as unchanged: BFC rounds sizes.
RELATIVE_TOLERANCE = 0.05

_NUMERIC_SUFFIX = re.compile(r"[._]\d+(?=$|/)")
_PROGRAM_ID = re.compile(r"\(\d+\)$")


def normalize_name(name: str) -> str:
    """`Mul_1` -> `Mul`, `model/dense_2/MatMul_3` -> `model/dense/MatMul`, `fusion.12` -> `fusion`."""
    return _NUMERIC_SUFFIX.sub("", name)


def module_base_name(name: str) -> str:
    """`jit_train_step(10)` -> `jit_train_step`: the program id changes between runs."""
    return _PROGRAM_ID.sub("", name)


def _delta(a: float | None, b: float | None) -> Json:
    a = a or 0
    b = b or 0
    return {"a": a, "b": b, "delta": b - a}


def _changed(a: float, b: float) -> int:
    """-1, 0 or 1: whether b is clearly below, about equal to, or clearly above a."""
    if abs(b - a) <= RELATIVE_TOLERANCE * max(abs(a), abs(b)):
        return 0
    return 1 if b > a else -1


def _group_key(g: Json) -> tuple[str, str, str, str]:
    return (normalize_name(g["op"]), g["shape"], g["dtype"], g["region"])


def _merge(groups: list[Json]) -> dict[tuple[str, str, str, str], Json]:
    """Groups by normalised key; `Mul` and `Mul_1` of one side add up."""
    merged: dict[tuple[str, str, str, str], Json] = {}
    for g in groups:
        key = _group_key(g)
        if key not in merged:
            merged[key] = {**g, "op": key[0]}
            continue
        m = merged[key]
        for field in ("count", "bytes", "bytes_per_step"):
            m[field] += g[field]
        if g["kind"] == GROWING:
            m["kind"] = GROWING
    return merged


def _group_status(a: Json | None, b: Json | None) -> str:
    if a is None:
        return NEW
    if b is None:
        return FIXED
    if b["kind"] == GROWING and a["kind"] != GROWING:
        return GROWN
    measure = "bytes_per_step" if GROWING in (a["kind"], b["kind"]) else "bytes"
    return {1: GROWN, -1: SHRUNK, 0: UNCHANGED}[_changed(a[measure], b[measure])]


def diff_groups(groups_a: list[Json], groups_b: list[Json]) -> list[Json]:
    side_a, side_b = _merge(groups_a), _merge(groups_b)
    rows = []
    for key in list(side_a) + [k for k in side_b if k not in side_a]:
        a, b = side_a.get(key), side_b.get(key)
        status = _group_status(a, b)
        rows.append(
            {
                "op": key[0],
                "shape": key[1],
                "dtype": key[2],
                "region": key[3],
                "status": status,
                "kind_a": a["kind"] if a else None,
                "kind_b": b["kind"] if b else None,
                "count_a": a["count"] if a else 0,
                "count_b": b["count"] if b else 0,
                "bytes_a": a["bytes"] if a else 0,
                "bytes_b": b["bytes"] if b else 0,
                "bytes_per_step_a": a["bytes_per_step"] if a else 0,
                "bytes_per_step_b": b["bytes_per_step"] if b else 0,
                "new_leak": bool(b and b["kind"] == GROWING and not (a and a["kind"] == GROWING)),
            }
        )
    rows.sort(key=lambda r: (STATUS_ORDER.index(r["status"]), -abs(r["bytes_b"] - r["bytes_a"])))
    return rows


def _pair_by_name(items_a: list[Json], items_b: list[Json], key) -> list[tuple[Json | None, Json | None]]:
    """Pairs with equal `key`; two lone items are paired whatever their names."""
    if len(items_a) == len(items_b) == 1:
        return [(items_a[0], items_b[0])]
    by_b = {key(x): x for x in items_b}
    pairs: list[tuple[Json | None, Json | None]] = [(x, by_b.pop(key(x), None)) for x in items_a]
    return pairs + [(None, x) for x in by_b.values()]


def diff_allocator(a: Json | None, b: Json | None) -> Json:
    empty: Json = {
        "name": None,
        "verdict": None,
        "reason": None,
        "groups": [],
        "peak_bytes_in_use": 0,
        "never_freed_bytes": 0,
        "growth_bytes_per_step": 0,
        "num_allocations": 0,
        "num_deallocations": 0,
    }
    a, b = a or empty, b or empty
    return {
        "name_a": a["name"],
        "name_b": b["name"],
        "verdict_a": a["verdict"],
        "verdict_b": b["verdict"],
        "reason_a": a["reason"],
        "reason_b": b["reason"],
        "peak_bytes_in_use": _delta(a["peak_bytes_in_use"], b["peak_bytes_in_use"]),
        "never_freed_bytes": _delta(a["never_freed_bytes"], b["never_freed_bytes"]),
        "growth_bytes_per_step": _delta(a["growth_bytes_per_step"], b["growth_bytes_per_step"]),
        "num_allocations": _delta(a["num_allocations"], b["num_allocations"]),
        "num_deallocations": _delta(a["num_deallocations"], b["num_deallocations"]),
        "groups": diff_groups(a["groups"], b["groups"]),
    }


def _buffer_key(w: Json) -> tuple[str, str, str]:
    return (normalize_name(w["instruction"]), w["shape"], w["reason"])


def diff_module(a: Json | None, b: Json | None) -> Json:
    wa = {_buffer_key(w): w for w in (a or {}).get("whole_program_buffers", [])}
    wb = {_buffer_key(w): w for w in (b or {}).get("whole_program_buffers", [])}
    return {
        "name": module_base_name((a or b or {}).get("name", "")),
        "name_a": a["name"] if a else None,
        "name_b": b["name"] if b else None,
        "peak_heap_bytes": _delta((a or {}).get("peak_heap_bytes"), (b or {}).get("peak_heap_bytes")),
        "live_out_bytes": _delta((a or {}).get("live_out_bytes"), (b or {}).get("live_out_bytes")),
        "whole_program_buffers_added": [w for k, w in wb.items() if k not in wa],
        "whole_program_buffers_removed": [w for k, w in wa.items() if k not in wb],
    }


def diff_hosts(a: Json, b: Json) -> Json:
    allocators = [diff_allocator(x, y) for x, y in _pair_by_name(a["allocators"], b["allocators"], lambda x: x["name"])]
    module_pairs = _pair_by_name(
        a.get("modules", []), b.get("modules", []), lambda m: (module_base_name(m["name"]), m.get("memory_space"))
    )
    modules = [diff_module(x, y) for x, y in module_pairs]
    return {
        "host_a": a["host"],
        "host_b": b["host"],
        "verdict_a": a["verdict"],
        "verdict_b": b["verdict"],
        "reason_a": a["reason"],
        "reason_b": b["reason"],
        "allocators": allocators,
        "modules": modules,
    }


def regressions(hosts: list[Json]) -> list[str]:
    """Sentences for what B brings that A did not have: a new growing group, or a leak verdict."""
    found = []
    for h in hosts:
        if h["verdict_b"] == LEAK and h["verdict_a"] != LEAK:
            found.append(f"host {h['host_b']}: B leaks and A does not: {h['reason_b']}")
        for alloc in h["allocators"]:
            for g in alloc["groups"]:
                if g["new_leak"]:
                    found.append(
                        f"host {h['host_b']}, allocator {alloc['name_b']}: new growing group {g['op']} {g['shape']} "
                        f"{g['region']} (+{format_bytes(g['bytes_per_step_b'])} per step)"
                    )
    return found


def compare(run_a: Json, run_b: Json, host_a: str | None = None, host_b: str | None = None) -> Json:
    """The comparison of two run reports (or two hosts of them): `b` is the change, `a` the base."""
    hosts_a = [h for h in run_a["hosts"] if host_a is None or h["host"] == host_a]
    hosts_b = [h for h in run_b["hosts"] if host_b is None or h["host"] == host_b]
    pairs = _pair_by_name(hosts_a, hosts_b, lambda h: h["host"])
    hosts = [diff_hosts(x, y) for x, y in pairs if x is not None and y is not None]
    unmatched = [x["host"] for x, y in pairs if y is None] + [y["host"] for x, y in pairs if x is None]
    found = regressions(hosts)
    return {
        "run_a": run_a["run"],
        "run_b": run_b["run"],
        "verdict_a": run_a["verdict"],
        "verdict_b": run_b["verdict"],
        "hosts": hosts,
        "unmatched_hosts": unmatched,
        "regression": bool(found),
        "regressions": found,
    }
