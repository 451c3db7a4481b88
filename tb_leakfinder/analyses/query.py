"""Which allocator a user's name means, in an analysis or in report JSON, and a report narrowed to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tb_leakfinder.analyses import verdict as verdicts
from tb_leakfinder.analyses.pipeline import AllocatorAnalysis, HostAnalysis
from tb_leakfinder.errors import NotFoundError

Json = dict[str, Any]


def allocator_choices(allocators: list[AllocatorAnalysis] | list[Json]) -> str:
    """'TPU:0 (memory id 0), gpu_host_bfc': what an allocator argument may name."""
    pairs = [(a.name, a.memory_id) if isinstance(a, AllocatorAnalysis) else (a["name"], a["memory_id"]) for a in allocators]
    return ", ".join(name if name == memory_id else f"{name} (memory id {memory_id!r})" for name, memory_id in pairs)


def find_allocator(h: HostAnalysis, allocator: str | None) -> AllocatorAnalysis:
    """The allocator whose label or memory id is `allocator`; the device memory with the largest peak when None."""
    if not h.allocators:
        raise NotFoundError(f"host {h.profile.host!r} ({h.profile.path}) has no memory events. {verdicts.NO_EVENTS_REASON}")
    if allocator is None:
        return h.largest_device()
    for a in h.allocators:
        if allocator in (a.name, a.memory_id):
            return a
    raise NotFoundError(
        f"host {h.profile.host!r} has no allocator {allocator!r}; its allocators are {allocator_choices(h.allocators)}"
    )


def select_allocator(report: Mapping[str, Any], allocator: str) -> Json:
    """The report with each host keeping only the allocator whose label or memory id is `allocator`.

    A host's verdict is then that allocator's; hosts without it are left out,
    except those that could not be read. A name no host has is an error naming
    the allocators there are.
    """
    runs = []
    for run in report["runs"]:
        hosts = []
        for host in run["hosts"]:
            mine = [a for a in host["allocators"] if allocator in (a["name"], a["memory_id"])]
            if mine:
                verdict, reason = _host_verdict(mine)
                hosts.append({**host, "allocators": mine, "verdict": verdict, "reason": reason})
            elif "error" in host:
                hosts.append(host)
        if hosts:
            runs.append({**run, "verdict": verdicts.run_verdict(hosts), "hosts": hosts})
    if not any(host["allocators"] for run in runs for host in run["hosts"]):
        every = [a for run in report["runs"] for host in run["hosts"] for a in host["allocators"]]
        unique = list({(a["name"], a["memory_id"]): a for a in every}.values())
        raise NotFoundError(f"no allocator {allocator!r}; the allocators are {allocator_choices(unique) or 'none'}")
    return {**report, "runs": runs}


def _host_verdict(allocators: list[Json]) -> tuple[str, str]:
    combined = verdicts.combine([(a["name"], verdicts.Verdict(a["verdict"], a["reason"])) for a in allocators])
    return combined.verdict, combined.reason
