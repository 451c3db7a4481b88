"""Naming device buffers on the three real JAX 0.8 ROCm profiles of ../shared/profiles/jax_gpu/ (1 and 8 GPUs).

The expected answer is computed here from the file itself with protobuf, not
through the decoders or the attribution: an allocation belongs to the
`...::ExecuteHelper` around it on its thread; its module is named by the
`<module>:XLA GPU module` span inside that execution and told from same-name
modules by the `program_id` of the kernel launches (`hlo_module` = that
name) made during it; it is the temporaries block when its execution frees
it, else an output. An allocation inside `DevicePut` is a transfer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from tb_leakfinder import proto
from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.read.formats.xplane import hlo, reader
from tests.support.demo import ROOT

SHARED = ROOT.parent / "shared" / "profiles" / "jax_gpu"
PROFILES = ("amd_jax08_attn", "amd_jax08_conv8", "amd_jax08_gemm")
MIB = 1 << 20


@dataclass
class _Event:
    line: str
    name: str
    start: int
    end: int
    stats: dict[str, object]


def _events(path) -> list[_Event]:
    """Every /host:CPU event, in picoseconds from the earliest line that has events (the format notes' time base)."""
    space = proto.XSpace().FromString(path.read_bytes())
    (cpu,) = [p for p in space.planes if p.name == "/host:CPU"]
    stat_names = {k: m.name for k, m in cpu.stat_metadata.items()}
    names = {k: m.name for k, m in cpu.event_metadata.items()}
    base = min(line.timestamp_ns for line in cpu.lines if line.events)
    out = []
    for line in cpu.lines:
        for e in line.events:
            stats: dict[str, object] = {}
            for s in e.stats:
                kind = s.WhichOneof("value")
                value = getattr(s, kind) if kind else None
                stats[stat_names[s.metadata_id]] = stat_names.get(value) if kind == "ref_value" else value
            start = (line.timestamp_ns - base) * 1000 + e.offset_ps
            out.append(_Event(line.name, names[e.metadata_id], start, start + e.duration_ps, stats))
    return out


def _expected(path) -> dict[tuple[str, int, int], tuple[str, str]]:
    """(allocator, address, time) -> (program key, role) of each device allocation of 1 MiB or more."""
    events = _events(path)
    helpers = [e for e in events if e.name.endswith("::ExecuteHelper")]
    modules = [e for e in events if e.name.endswith(":XLA GPU module")]
    launches = [e for e in events if "program_id" in e.stats and "hlo_module" in e.stats]
    transfers = [e for e in events if e.name == "DevicePut"]
    frees: dict[tuple[object, object], list[int]] = {}
    for e in events:
        if e.name == "MemoryDeallocation":
            frees.setdefault((e.stats["allocator_name"], e.stats["addr"]), []).append(e.start)
    expected = {}
    for a in events:
        name = a.stats.get("allocator_name")
        if a.name != "MemoryAllocation" or not str(name).startswith("GPU_") or a.stats["requested_bytes"] < MIB:
            continue
        key = (str(name), int(a.stats["addr"]), a.start)
        around = [h for h in helpers if h.line == a.line and h.start <= a.start <= h.end]
        if not around:
            inside_transfer = any(t.line == a.line and t.start <= a.start <= t.end for t in transfers)
            expected[key] = ("", "transfer" if inside_transfer else "outside")
            continue
        (h,) = around
        (module,) = {m.name.split(":")[0] for m in modules if m.line == h.line and h.start <= m.start <= h.end}
        (pid,) = {k.stats["program_id"] for k in launches if h.start <= k.start <= h.end and k.stats["hlo_module"] == module}
        freed = min((t for t in frees.get((name, a.stats["addr"]), []) if t > a.start), default=None)
        role = "temporaries" if freed is not None and freed <= h.end else "output"
        expected[key] = (f"{module}({pid})", role)
    return expected


@pytest.fixture(scope="module", params=PROFILES)
def profile(request: pytest.FixtureRequest):
    folder = SHARED / request.param
    if not folder.is_dir():
        pytest.skip(f"{folder} is not here (the shared profiles lie beside the repository)")
    (path,) = folder.glob("plugins/profile/*/*.xplane.pb")
    return request.param, path


def _named(path) -> dict[tuple[str, int, int], tuple[str, str, int]]:
    """(allocator, address, time) -> (program, buffer, bytes) as the analysis names each device allocation."""
    host = reader.read_host(str(path), "h")
    modules, _ = hlo.decode_modules(host.hlo_protos, str(path))
    named = {}
    for a in analyze_host(host, modules).allocators:
        b = a.buffers
        for i in np.flatnonzero((b.alloc_event >= 0) & (b.requested_bytes >= MIB)).tolist():
            site = a.sites[int(b.site[i])]
            buffer = "transfer" if site.context == "transfer" else (site.buffer or site.context)
            named[(a.memory_id, int(b.addr[i]), int(b.alloc_time_ps[i]))] = (site.program, buffer, int(b.requested_bytes[i]))
    return named


def test_at_least_95_percent_of_device_bytes_are_tied_to_the_right_program_and_role(profile):
    name, path = profile
    expected, named = _expected(path), _named(path)
    assert set(expected) <= set(named)
    right = sum(
        n for key, (program, buffer, n) in named.items() if key in expected and (program, buffer.split(" ")[0]) == expected[key]
    )
    total = sum(named[key][2] for key in expected)
    assert total > 0
    assert right >= 0.95 * total, f"{name}: {right / total:.1%} of {total} bytes"
    # Every allocation here is made inside an execution: none is left outside a program.
    assert {role for _, role in expected.values()} <= {"output", "temporaries"}


def test_the_eight_gpus_each_name_their_own_execution_and_reach_the_callers_frames():
    path = next((SHARED / "amd_jax08_conv8").glob("plugins/profile/*/*.xplane.pb"), None)
    if path is None:
        pytest.skip("the shared profiles are not here")
    host = reader.read_host(str(path), "h")
    modules, _ = hlo.decode_modules(host.hlo_protos, str(path))
    analysis = analyze_host(host, modules)
    devices = [a for a in analysis.allocators if a.memory_id.startswith("GPU_")]
    assert len(devices) == 8
    for a in devices:
        programs = {(s.program, s.match) for s in a.sites[1:] if s.context == "program"}
        assert programs == {("jit_forward_3d_conv(15)", "exact")}, a.memory_id
