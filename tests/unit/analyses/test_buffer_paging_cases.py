"""analyses/buffer_paging.py against tests/cases/buffer_paging.json, whose queries the standalone page's inline.ts
answers too over the same buffers as the route writes them."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from tb_leakfinder import wire
from tb_leakfinder.analyses.buffer_paging import query_buffers
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, analyze_host
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.lifetimes import NO_TIME
from tb_leakfinder.model.memory import ALLOC
from tb_leakfinder.model.sites import SiteInfo
from tests.support import columns
from tests.support.cases import load_cases

CASES = load_cases("buffer_paging")


def _analysis(case: dict[str, Any]) -> AllocatorAnalysis:
    """An allocator's analysis holding the case's buffers, families and sites: a real one (of a never-freed buffer, so
    that it has a family to copy) with those columns in place of its own."""
    events = columns.memory_events([10], ALLOC, 0x10, 64, allocator=case["allocator"], op="Mul")
    (base,) = analyze_host(columns.host_profile(events, columns.steps((0, 0, 5), (1, 5, 20)))).allocators
    rows = case["buffers"]
    strings = [""]
    buffers = columns.buffers(
        [NO_TIME if r["alloc_time_ps"] is None else r["alloc_time_ps"] for r in rows],
        [NO_TIME if r["free_time_ps"] is None else r["free_time_ps"] for r in rows],
        [r["chunk_bytes"] for r in rows],
        strings=strings,
        op=[case["profile_ops"].get(r["op"], r["op"]) for r in rows],
        site=[r["site"] for r in rows],
    )
    families = base.suspects.families[:1] * case["families"]
    never_freed_family = np.array([-1 if r["family"] is None else r["family"] for r in rows], np.int64)
    suspects = dataclasses.replace(base.suspects, families=families, never_freed_family=never_freed_family)
    sites = [SiteInfo(program=s["program"], allocation=s["allocation"]) for s in case["sites"]]
    return dataclasses.replace(
        base, events=dataclasses.replace(base.events, strings=strings), buffers=buffers, suspects=suspects, sites=sites
    )


def test_the_case_limits_are_the_reports() -> None:
    """The page pages by the limits its report carries: the case's are those, so that both sides are held to them."""
    limits = wire.limits_json()
    assert CASES["limits"] == {k: limits[k] for k in CASES["limits"]}  # type: ignore[literal-required]


def test_the_case_buffers_are_the_routes_rows() -> None:
    """The page's inlined rows (the TypeScript side's input) are what the route writes for these columns."""
    a = _analysis(CASES)
    page = query_buffers(a, sort="alloc_time_ps", order="asc", limit=len(CASES["buffers"]))
    body = wire.buffers_json(a, columns.steps(), dataclasses.replace(page, rows=np.sort(page.rows)))
    keys = [k for k in CASES["buffers"][0] if k != "site"]
    assert [{k: row[k] for k in keys} for row in body["buffers"]] == [{k: b[k] for k in keys} for b in CASES["buffers"]]
    written = [body["sites"][row["site"]] for row in body["buffers"]]
    expected = [CASES["sites"][b["site"]] for b in CASES["buffers"]]
    assert [(s["program"], s["allocation"]) for s in written] == [(s["program"], s["allocation"]) for s in expected]


@pytest.mark.parametrize("query", CASES["queries"], ids=lambda q: str(q["args"]))
def test_query(query: dict[str, Any]) -> None:
    a = _analysis(CASES)
    if "error" in query:
        with pytest.raises(LeakfinderError) as refused:
            query_buffers(a, **query["args"])
        assert (refused.value.status, refused.value.message) == (query["status"], query["error"])
        return
    page = query_buffers(a, **query["args"])
    assert (page.rows.tolist(), page.total) == (query["ids"], query["total"])


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_a_page_of_many_equal_sizes_is_the_stable_sorts(order: str) -> None:
    # Few sizes among many buffers, as a training loop's: the page is cut by a selection, not a sort, and must be
    # the same rows as the whole stable sort gives (reversed, ties too, when descending).
    sizes = np.random.default_rng(12).choice([4, 4096, 2 << 20, 16 << 20], 5_000, p=[0.5, 0.45, 0.04, 0.01])
    a = _analysis(CASES)
    a = dataclasses.replace(a, buffers=columns.buffers(np.arange(len(sizes)), [NO_TIME] * len(sizes), sizes))
    ranked = np.argsort(sizes, kind="stable")
    ranked = ranked[::-1] if order == "desc" else ranked
    for offset, limit in ((0, 100), (40, 60), (4_900, 100)):
        page = query_buffers(a, offset=offset, limit=limit, sort="bytes", order=order)
        assert page.rows.tolist() == ranked[offset : offset + limit].tolist()
