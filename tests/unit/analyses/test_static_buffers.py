"""Static buffer lifetimes on real JAX captures and a synthesised large program, against XProf's memory_viewer."""

from __future__ import annotations

import functools
import json
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tb_leakfinder import proto, wire
from tb_leakfinder.analyses import static_buffers as sb
from tb_leakfinder.analyses.downsample import DEFAULT_POINTS, MAX_POINTS
from tb_leakfinder.analyses.words import format_bytes
from tb_leakfinder.errors import BadArgumentError, LeakfinderError, NotFoundError
from tb_leakfinder.model.hlo import HloModule
from tb_leakfinder.read.formats.xplane import decoder, hlo
from tb_leakfinder.testing.xspace_builder import ProfileBuilder
from tb_leakfinder.views.text import render_module, render_modules
from tests.support.demo import demo_capture, demo_xplane

JAX_RUNS = ("jax_liveout", "jax_clean")
MIB = float(1 << 20)

# Runs XProf's memory_viewer on every module of a session, in one process (XProf stays out of ours).
_ORACLE = """
import json, os, sys
from xprof.convert import raw_to_tool_data as r
path = sys.argv[1]
r.xspace_to_tool_names([path])
out = {}
for name in sorted(os.listdir(os.path.dirname(path))):
    if name.endswith(".hlo_proto.pb"):
        module = name[: -len(".hlo_proto.pb")]
        data, _ = r.xspace_to_tool_data([path], "memory_viewer", {"module_name": module, "memory_space": "0"})
        out[module] = json.loads(data)
sys.stdout.write(json.dumps(out))
"""


def memory_viewer(session_dir, tmp_path) -> dict[str, dict]:
    """XProf's PreprocessResult per module, computed on a copy of the session folder."""
    copy = tmp_path / "session"
    shutil.copytree(session_dir, copy)
    (xplane,) = copy.glob("*.xplane.pb")
    out = subprocess.run([sys.executable, "-c", _ORACLE, str(xplane)], check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout)


def summary_of(module: HloModule, memory_space: int | None = None) -> dict:
    """A module's summary as the report shows it."""
    return wire.module_summary_json(sb.module_summary(module, memory_space))


def summaries_of(modules: list[HloModule]) -> tuple[list[dict], list[str]]:
    summaries, warnings = sb.module_summaries(modules)
    return [wire.module_summary_json(s) for s in summaries], warnings


def detail_of(module: HloModule, memory_space: int | None = None, points: int = DEFAULT_POINTS) -> dict:
    """A module in detail as the module route answers it."""
    return wire.module_detail_json(sb.module_detail(module, memory_space, points))


@functools.cache
def demo_modules(run: str) -> dict[str, HloModule]:
    space = proto.XSpace().FromString(demo_xplane(run).read_bytes())
    (plane,) = [p for p in space.planes if p.name == decoder.METADATA_PLANE]
    modules, warnings = hlo.decode_modules(hlo.hlo_protos_from_metadata_plane(plane), str(demo_xplane(run)))
    assert warnings == []
    return {m.key: m for m in modules}


def step_of(run: str) -> HloModule:
    (module,) = [m for m in demo_modules(run).values() if m.name == demo_capture(run)["module"]]
    return module


def assert_agrees_with_xprof(module: HloModule, xprof: dict) -> None:
    summary = summary_of(module, 0)
    detail = detail_of(module, 0, points=MAX_POINTS)
    where = module.key
    assert summary["peak_heap_bytes"] / MIB == xprof["peakHeapMib"], where
    assert summary["live_out_bytes"] / MIB == xprof.get("maybeLiveOutMib", 0), where
    assert summary["parameter_bytes"] / MIB == xprof.get("entryComputationParametersMib", 0), where
    assert (summary["peak_position"] or 0) == xprof.get("peakHeapSizePosition", 0), where
    # XProf's heapSizes[k] is the heap before event k, plus the final heap: ours is after each event.
    assert [b / MIB for b in detail["curve"]["heap_bytes"]] == xprof.get("heapSizes", [])[1:], where
    # Spans agree where no memory is shared; XProf ends a never-freed span at the last event, ours after it.
    n = detail["num_positions"]
    shared = {b["shares_with"] for b in detail["buffers"]} | {b["logical_buffer"] for b in detail["buffers"] if b["shares_with"]}
    ours = {
        b["logical_buffer"]: (b["start"], min(b["end"], n - 1))
        for b in detail["buffers"]
        if b["kind"] in ("temporary", "never_freed") and b["logical_buffer"] not in shared
    }
    theirs = {
        int(k): (v.get("start", 0), v["limit"]) for k, v in xprof.get("logicalBufferSpans", {}).items() if int(k) not in shared
    }
    assert ours == theirs, where


@pytest.mark.parametrize("run", JAX_RUNS)
def test_every_demo_module_agrees_with_xprof_memory_viewer(run, tmp_path):
    xprof = memory_viewer(demo_xplane(run).parent, tmp_path)
    modules = demo_modules(run)
    assert sorted(xprof) == sorted(modules)
    for key, module in modules.items():
        assert_agrees_with_xprof(module, xprof[key])


def test_the_returned_activation_is_a_live_out_whole_program_buffer_called_out_by_name():
    mistake = demo_capture("jax_liveout")["returned_by_mistake"]
    summary = summary_of(step_of("jax_liveout"))
    shape = f"f32[{','.join(map(str, mistake['shape']))}]"
    (entry,) = [e for e in summary["whole_program_buffers"] if e["reason"] == "live_out" and e["bytes"] >= sb.SMALL_BUFFER_BYTES]
    assert entry["bytes"] == mistake["bytes"] and entry["shape"] == shape
    assert entry["actionable"] and not entry["aliases_parameter"]
    assert entry["opcode"] == "fusion" and "relu" in entry["op_name"] and "capture_jax.py:" in entry["source"]
    (flag,) = summary["actionable"]
    assert flag["instruction"] == entry["instruction"] and flag["bytes"] == mistake["bytes"]
    assert entry["instruction"] in flag["message"] and summary["name"] in flag["message"]
    # The donated parameters come back as outputs too: aliases, never flagged.
    aliases = [e for e in summary["whole_program_buffers"] if e.get("aliases_parameter")]
    assert aliases and not any(e["actionable"] for e in aliases)
    assert all(e["reason"] == "parameter" and e["live_out"] for e in aliases)
    text = render_module(summary)
    assert f"CHECK {format_bytes(mistake['bytes'])}" in text and entry["instruction"] in text


def test_the_clean_step_returns_no_such_buffer():
    mistake = demo_capture("jax_liveout")["returned_by_mistake"]
    summary = summary_of(step_of("jax_clean"))
    live_out = [e for e in summary["whole_program_buffers"] if e["reason"] == "live_out"]
    assert all(e["bytes"] < sb.SMALL_BUFFER_BYTES for e in live_out)
    assert summary["actionable"] == []
    assert "CHECK" not in render_module(summary)
    # The live-out step holds the activation on top of what the clean one returns.
    liveout = summary_of(step_of("jax_liveout"))
    assert liveout["live_out_bytes"] - summary["live_out_bytes"] >= mistake["bytes"]


def test_cli_text_names_the_activation_and_lists_every_module():
    summaries, _ = summaries_of(list(demo_modules("jax_liveout").values()))
    text = render_modules(summaries, detailed=1)
    (flag,) = [f for s in summaries for f in s["actionable"]]
    assert f"CHECK {format_bytes(flag['bytes'])}: {flag['instruction']}" in text
    assert all(s["name"] in text for s in summaries)
    assert f"{len(summaries) - 1} more modules, nothing to check:" in text  # the step is the largest and flagged
    clean, _ = summaries_of(list(demo_modules("jax_clean").values()))
    assert "CHECK" not in render_modules(clean)


def test_single_result_programs_are_not_flagged():
    for module in demo_modules("jax_clean").values():
        summary = summary_of(module)
        results = module.allocations.maybe_live_out & ~module.allocations.is_tuple
        if int(results.sum()) == 1:
            assert summary["actionable"] == [], module.key


@pytest.mark.parametrize("run", JAX_RUNS)
def test_summaries_list_every_module_largest_peak_first(run):
    summaries, warnings = summaries_of(list(demo_modules(run).values()))
    assert warnings == []
    assert sorted(s["name"] for s in summaries) == sorted(demo_modules(run))
    peaks = [s["peak_heap_bytes"] for s in summaries]
    assert peaks == sorted(peaks, reverse=True)
    json.dumps(summaries)  # JSON-ready as they are
    for s in summaries:
        assert set(s) >= {"name", "memory_space", "peak_heap_bytes", "live_out_bytes", "parameter_bytes", "whole_program_buffers"}
        for e in s["whole_program_buffers"]:
            assert set(e) >= {"instruction", "op_name", "shape", "bytes", "reason"}


@pytest.mark.parametrize("run", JAX_RUNS)
def test_peak_buffers_add_up_to_the_peak_with_small_ones_grouped(run):
    for module in demo_modules(run).values():
        detail = detail_of(module)
        peak = detail["peak_buffers"]
        assert sum(e["bytes"] for e in peak) == detail["peak_heap_bytes"], module.key
        sizes = [e["bytes"] for e in peak if e["kind"] != "small"]
        assert sizes == sorted(sizes, reverse=True) and all(b >= sb.SMALL_BUFFER_BYTES for b in sizes)
        assert sum(e["kind"] == "small" for e in peak) <= 1
        # What is live at the peak is what the ranges say is live there (plus whole-program buffers).
        p = detail["peak_position"]
        if p is not None:
            live = {b["logical_buffer"] for b in detail["buffers"] if b["start"] <= p < b["end"]}
            assert {e["logical_buffer"] for e in peak if e["kind"] != "small"} <= live


def test_curve_downsampling_keeps_the_peak_and_the_ends():
    module = step_of("jax_liveout")
    full = detail_of(module, points=MAX_POINTS)["curve"]
    small = detail_of(module, points=8)
    curve = small["curve"]
    assert len(curve["position"]) < len(full["position"])
    assert curve["position"][0] == 0 and curve["position"][-1] == full["position"][-1]
    assert small["peak_position"] in curve["position"]
    assert max(curve["heap_bytes"]) == small["peak_heap_bytes"] == max(full["heap_bytes"])
    at = dict(zip(full["position"], full["heap_bytes"], strict=True))
    assert all(at[p] == b for p, b in zip(curve["position"], curve["heap_bytes"], strict=True))


def test_long_lived_temporaries_cover_most_of_the_program():
    detail = detail_of(step_of("jax_liveout"))
    n = detail["num_positions"]
    long_lived = detail["long_lived_temporaries"]
    assert long_lived
    for e in long_lived:
        assert e["end"] - e["start"] >= sb.LONG_LIVED_FRACTION * n and e["bytes"] >= sb.SMALL_BUFFER_BYTES
        assert e["last_user"] and e["last_user"] in e["why"]
    # The pre-activation x @ w1 is kept for the backward pass: its last user is an op of the transposed jvp.
    (pre_activation,) = [e for e in long_lived if e["op_name"].endswith("/jvp()/dot_general")]
    backward = {b["instruction"] for b in detail["buffers"] if "/transpose(jvp())/" in b["op_name"]}
    assert pre_activation["last_user"] in backward


def test_a_broken_heap_trace_is_a_warning_and_the_other_modules_are_still_summarised():
    good = step_of("jax_clean")
    data = proto.HloProto().FromString(large_program(40, seed=2))
    trace = data.buffer_assignment.heap_simulator_traces[0]
    first_free = next(e for e in trace.events if e.kind == 1)
    trace.events.add(kind=1, buffer_id=first_free.buffer_id)  # freed twice
    broken = hlo.decode_module("jit_broken(4)", data.SerializeToString(), "h.xplane.pb")
    with pytest.raises(LeakfinderError, match="freed more than once") as err:
        detail_of(broken)
    assert "jit_broken(4)" in err.value.message and "h.xplane.pb" in err.value.message
    summaries, warnings = summaries_of([broken, good])
    assert [s["name"] for s in summaries] == [good.key]
    assert len(warnings) == 1 and "jit_broken(4)" in warnings[0]


def test_bad_arguments_are_clear_errors():
    module = step_of("jax_clean")
    with pytest.raises(NotFoundError, match="memory space 5") as err:
        detail_of(module, 5)
    assert module.key in err.value.message and err.value.status == 404
    with pytest.raises(BadArgumentError):
        detail_of(module, 0, points=2)


# --- a synthesised large program --------------------------------------------

NEVER_FREED = 5  # the temporary t5 gets no FREE


def large_program(n_temporaries: int, seed: int) -> bytes:
    """A compiled program with thousands of instructions: parameters (one donated), a constant,
    thread-local scratch, two results, and temporaries that share memory (after a free, while
    live, and in chains), one of them never freed."""
    rng = random.Random(seed)
    p = proto.HloProto()()
    module = p.hlo_module
    module.name, module.entry_computation_name = "jit_large", "main"
    computation = module.computations.add(name="main", id=1)
    assignment = p.buffer_assignment

    def instruction(name: str, opcode: str, elements: int) -> int:
        iid = len(computation.instructions) + 1
        i = computation.instructions.add(name=name, opcode=opcode, id=iid)
        i.shape.element_type = 11
        i.shape.dimensions.append(elements)
        i.metadata.op_name = f"jit(large)/{opcode}"
        buffer = assignment.logical_buffers.add(id=iid, size=4 * elements)
        buffer.defined_at.instruction_id = iid
        return iid

    def allocation(buffer_id: int, **flags) -> None:
        a = assignment.buffer_allocations.add(index=len(assignment.buffer_allocations), **flags)
        a.size = assignment.logical_buffers[buffer_id - 1].size
        a.assigned.add(logical_buffer_id=buffer_id, size=a.size)

    allocation(instruction("p0", "parameter", 1 << 16), is_entry_computation_parameter=True, parameter_number=0)
    allocation(
        instruction("p1", "parameter", 1 << 14), is_entry_computation_parameter=True, parameter_number=1, maybe_live_out=True
    )
    allocation(instruction("c0", "constant", 1 << 12), is_constant=True)
    allocation(instruction("scratch", "custom-call", 64), is_thread_local=True)
    allocation(instruction("out0", "fusion", 1 << 15), maybe_live_out=True)
    allocation(instruction("out1", "fusion", 1), maybe_live_out=True)
    temp = assignment.buffer_allocations.add(index=len(assignment.buffer_allocations), size=0)
    trace = assignment.heap_simulator_traces.add(whole_module_simulation=True, buffer_allocation_index=temp.index)
    live: list[int] = []
    freed: list[int] = []
    offset = 0
    never_freed = len(computation.instructions) + 1 + NEVER_FREED
    for t in range(n_temporaries):
        bid = instruction(f"t{t}", rng.choice(["fusion", "dot", "add", "copy"]), rng.choice([16, 256, 4096, 1 << 14, 1 << 16]))
        share = rng.random()
        if share < 0.15 and freed:  # reuse freed memory
            canonical = freed.pop(rng.randrange(len(freed)))
        elif share < 0.25 and live:  # share while the canonical is live (or chain onto a sharer)
            canonical = rng.choice(live)
        else:
            canonical = None
        if canonical is None:
            trace.events.add(kind=0, buffer_id=bid, instruction_name=f"t{t}")
        else:
            assignment.logical_buffers[bid - 1].size = assignment.logical_buffers[canonical - 1].size
            trace.events.add(kind=2, buffer_id=bid, share_with_canonical_id=canonical, instruction_name=f"t{t}")
        size = assignment.logical_buffers[bid - 1].size
        temp.assigned.add(logical_buffer_id=bid, offset=offset, size=size)
        offset += size
        live.append(bid)
        while len(live) > 3 and rng.random() < 0.6:
            gone = live.pop(rng.randrange(len(live) - 1))  # the newest stays live
            if gone != never_freed:
                trace.events.add(kind=1, buffer_id=gone, instruction_name=f"t{t}")
                freed.append(gone)
    for bid in live:
        if bid != never_freed:
            trace.events.add(kind=1, buffer_id=bid, instruction_name="end")
    temp.size = offset
    return p.SerializeToString()


@functools.cache
def large_module() -> HloModule:
    return hlo.decode_module("jit_large(1)", large_program(3000, seed=11), "synthetic")


def test_large_program_summary_names_its_never_freed_buffer():
    module = large_module()
    assert module.num_instructions > 3000 and len(module.traces[0]) > 5000
    summary = summary_of(module)
    (never_freed,) = [e for e in summary["whole_program_buffers"] if e["reason"] == "never_freed"]
    assert never_freed["instruction"] == f"t{NEVER_FREED}" and never_freed["actionable"] == (
        never_freed["bytes"] >= sb.SMALL_BUFFER_BYTES
    )


def test_a_program_with_more_buffers_than_the_route_sends_gets_its_largest_in_program_order(monkeypatch):
    everything = detail_of(large_module())["buffers"]
    monkeypatch.setattr(sb, "MAX_BUFFER_RANGES", 50)
    detail = detail_of(large_module())
    assert detail["num_buffers"] == len(everything) > 50 and len(detail["buffers"]) == 50
    by_size = sorted(everything, key=lambda b: (-b["bytes"], b["logical_buffer"]))
    assert {b["logical_buffer"] for b in detail["buffers"]} == {b["logical_buffer"] for b in by_size[:50]}
    assert detail["buffers"] == [b for b in everything if b in detail["buffers"]]  # program order kept


def test_large_program_agrees_with_xprof(tmp_path):
    builder = ProfileBuilder("host0")
    builder.add_hlo_module("jit_large(1)", large_program(3000, seed=11))
    session = tmp_path / "run" / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    builder.write(session / "host0.xplane.pb")
    xprof = memory_viewer(session, tmp_path)
    assert_agrees_with_xprof(large_module(), xprof["jit_large(1)"])
    detail = detail_of(large_module())
    assert sum(e["bytes"] for e in detail["peak_buffers"]) == detail["peak_heap_bytes"]
    assert len(detail["curve"]["position"]) <= DEFAULT_POINTS
    # Whole-program bytes: parameters, constant, results; thread-local scratch is outside the heap.
    a = large_module().allocations
    assert detail["whole_program_bytes"] == int(a.size[a.is_parameter | a.is_constant | a.maybe_live_out].sum())
    assert np.all(np.diff(detail["curve"]["position"]) > 0)
