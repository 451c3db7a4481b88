"""Naming allocations by program buffer and line, on profiles that follow PJRT's conventions."""

from __future__ import annotations

import numpy as np
import pytest

import tb_leakfinder
from tb_leakfinder import wire
from tb_leakfinder.analyses.attribution import small_unique
from tb_leakfinder.analyses.pipeline import HostAnalysis, analyze_host
from tb_leakfinder.read.formats.xplane import decoder as reference
from tb_leakfinder.read.formats.xplane import hlo, reader
from tb_leakfinder.testing.pjrt_profile import (
    ALLOCATOR,
    CONV_IDS,
    EVAL_BUFFERS,
    F32,
    HOST_ALLOCATOR,
    PSUM_BUFFERS,
    PYTHON_LINE,
    ProgramBuffer,
    jax_multi_gpu,
    jax_training,
    program_proto,
    tpu_psum,
)
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session


def analysed(tmp_path, builder: ProfileBuilder) -> dict:
    write_session(tmp_path, "run", "session", {builder.hostname: builder})
    (run,) = tb_leakfinder.analyze(str(tmp_path / "run"))["runs"]
    (host,) = run["hosts"]
    return host


def analysis_of(data: bytes, decode) -> HostAnalysis:
    profile = decode(data, "h", "p")
    modules, _ = hlo.decode_modules(profile.hlo_protos, "p")
    return analyze_host(profile, modules)


def allocator(host: dict, name: str) -> dict:
    return next(a for a in host["allocators"] if a["memory_id"] == name)


@pytest.fixture(params=[True, False], ids=["python_tracer", "no_tracer"])
def training(request, tmp_path, decoder) -> tuple[dict, dict]:
    builder, planted = jax_training(python_tracer=request.param)
    return analysed(tmp_path, builder), planted


def test_the_leak_is_named_by_its_program_buffer_op_and_line(training):
    host, planted = training
    gpu = allocator(host, ALLOCATOR)
    assert gpu["verdict"] == "leak"
    top = gpu["families"][0]
    assert top["kind"] == "growing" and top["bytes_per_step"] == planted["leak_bytes_per_step"]
    assert top["op"] == f"{planted['leaked_buffer']} of {planted['program']}"
    assert top["where"] == planted["leaked_where"]
    site = top["site"]
    assert (site["context"], site["program"], site["buffer"], site["match"]) == (
        "program",
        "jit_train_step(7)",
        "output 1",
        "exact",
    )
    assert (site["hlo_op"], site["hlo_shape"], site["op_name"]) == (
        "dot_general",
        planted["leaked_shape"],
        "jit(train_step)/dot_general",
    )
    assert site["source"] == "/src/model.py:57" and site["allocation"] == 3
    assert tuple(site["stack"]) == planted["stack"]
    assert gpu["reason"].startswith(
        "Leak in JAX's GPU:0 allocator (GPU_0_bfc): +1 MiB per step from output 1 of jit_train_step(7) (dot_general f32[1024,256], model.py:57)"  # noqa: E501 - the verdict's sentence, whole
    )


def test_frames_or_the_hint_to_get_them(training):
    host, planted = training
    gpu = allocator(host, ALLOCATOR)
    if planted["stack"]:
        assert gpu["stack_hint"] is None
    else:
        assert "python_tracer=True" in gpu["stack_hint"]


@pytest.mark.parametrize("python_tracer", [True, False])
def test_the_analysis_says_whether_its_buffers_have_python_frames(python_tracer):
    builder, planted = jax_training(python_tracer=python_tracer)
    gpu = next(a for a in analysis_of(builder.to_bytes(), reader.decode).allocators if a.memory_id == ALLOCATOR)
    assert gpu.python_frames is bool(planted["stack"]) is python_tracer


def test_outputs_of_one_size_are_ambiguous_and_say_so(training):
    host, _ = training
    rows = {r["op"]: r for r in allocator(host, ALLOCATOR)["peak_breakdown"]}
    for name in ("output 2 of jit_train_step(7)", "output 3 of jit_train_step(7)"):
        site = rows[name]["site"]
        assert site["match"] == "ambiguous"
        assert site["candidates"] == ["output 2 of jit_train_step(7)", "output 3 of jit_train_step(7)"]


def test_temporaries_transfers_and_a_second_program_are_named(tmp_path, decoder):
    builder, _ = jax_training(eval_every=5)
    host = analysed(tmp_path, builder)
    gpu = allocator(host, ALLOCATOR)
    ops = {r["op"]: r for r in gpu["peak_breakdown"]}
    assert ops["temporaries (2 buffers) of jit_train_step(7)"]["site"]["match"] == "exact"
    # The batch copied to the device is the next call's parameter 1 (the only parameter of its size).
    transfer = ops["transfer to device, parameter 1 of jit_train_step(7)"]
    assert transfer["where"] == "train.py:88 in main"
    assert {k: transfer["site"][k] for k in ("context", "program", "buffer", "hlo_shape", "match")} == {
        "context": "transfer",
        "program": "jit_train_step(7)",
        "buffer": "parameter 1",
        "hlo_shape": "f32[64,1024]",
        "match": "exact",
    }
    # Its staging copy in pinned host memory is no device buffer: no program takes it.
    staging = allocator(host, HOST_ALLOCATOR)["peak_breakdown"][0]
    assert staging["op"] == "transfer to device, outside any program"
    # The evaluation program's output lives only within its call: its buffers, not the peak, show it.
    a = next(x for x in analysis_of(builder.to_bytes(), reader.decode).allocators if x.memory_id == ALLOCATOR)
    evaluated = [s for s in a.sites if s.program == "jit_eval_step(9)"]
    assert len(evaluated) == 1
    assert (evaluated[0].buffer, evaluated[0].hlo_op, evaluated[0].hlo_shape, evaluated[0].where) == (
        "output 0",
        "dot_general",
        EVAL_BUFFERS[1].shape,
        "evaluate.py:12",
    )


def _builder_with(programs: dict[str, list[ProgramBuffer]]) -> ProfileBuilder:
    b = ProfileBuilder("h")
    b.allocator(ALLOCATOR)
    for key, buffers in programs.items():
        b.add_hlo_module(key, program_proto(key.split("(")[0], buffers))
    return b


def _alloc(b: ProfileBuilder, t: int, addr: int, nbytes: int, line: str = PYTHON_LINE) -> None:
    b.alloc(t, addr, nbytes, allocator=ALLOCATOR, op=None, shape=None, region=None, dtype=0, line=line)


def _sites(tmp_path, b: ProfileBuilder) -> list[dict]:
    host = analysed(tmp_path, b)
    (gpu,) = host["allocators"]
    return sorted((g["op"], g["site"]["match"], tuple(g["site"]["candidates"])) for g in gpu["families"])


def test_one_execution_is_matched_as_a_whole_to_the_program_of_its_name_that_explains_it(tmp_path, decoder):
    out = ProgramBuffer("out", "add", F32, (16,), "jit(f)/add", ("/src/f.py", 3))
    small, large = ProgramBuffer("t", "fusion", F32, (64,), kind="temp"), ProgramBuffer("t", "fusion", F32, (128,), kind="temp")
    b = _builder_with({"jit_f(1)": [out, small], "jit_f(2)": [out, large]})
    b.span("PjitFunction(f)", 100, 200)
    _alloc(b, 110, 0x1000, out.size)  # kept: a family
    _alloc(b, 120, 0x2000, large.size)  # and the temporaries block of jit_f(2) only
    b.span("PjitFunction(f)", 300, 400)
    _alloc(b, 310, 0x3000, out.size)  # alone, it could be either program's output
    assert _sites(tmp_path, b) == [
        ("output 0 of jit_f(1)", "ambiguous", ("output 0 of jit_f(1)", "output 0 of jit_f(2)")),
        ("output 0 of jit_f(2)", "exact", ()),
        ("temporaries of jit_f(2)", "exact", ()),
    ]


def test_near_sizes_none_missing_hlo_and_outside_any_program(tmp_path, decoder):
    out = ProgramBuffer("out", "add", F32, (16,), "jit(g)/add")
    temp = ProgramBuffer("t", "fusion", F32, (1024,), kind="temp")
    b = _builder_with({"jit_g(4)": [out, temp]})
    b.span("PjitFunction(g)", 100, 200)
    _alloc(b, 110, 0x1000, temp.size + 256)  # the runtime padded the temporaries block
    _alloc(b, 120, 0x2000, 999)  # nothing of this size
    b.span("PjitFunction(h)", 300, 400)
    _alloc(b, 310, 0x3000, 64)  # h's HLO is not in the profile
    _alloc(b, 500, 0x4000, 32)  # no call around it
    assert _sites(tmp_path, b) == [
        ("in jit_g(4), no buffer of this size", "none", ()),
        ("in jit_h (its HLO is not in the profile)", "no_hlo", ()),
        ("outside any program", "", ()),
        ("temporaries of jit_g(4)", "near", ()),
    ]
    (gpu,) = analysed(tmp_path, b)["allocators"]
    near_by = {g["op"]: g["site"]["near_by"] for g in gpu["families"]}
    assert near_by["temporaries of jit_g(4)"] == "size"  # its execution is known: only the size is off
    assert {by for op, by in near_by.items() if op != "temporaries of jit_g(4)"} == {""}


def test_an_allocation_on_another_thread_gets_the_frames_of_the_call_that_launched_it(tmp_path, decoder):
    b = _builder_with({})
    b.span("$train.py:10 loop", 0, 1000)
    b.span("$train.py:20 step", 100, 900)
    b.span("FunctionRun", 150, 800, root=True)
    b.alloc(500, 0x1000, 64, allocator=ALLOCATOR, op="MatMul", shape="[4,4]", line="tf_Compute")
    host = analysed(tmp_path, b)
    (family,) = host["allocators"][0]["families"]
    assert family["op"] == "MatMul" and family["site"]["context"] == ""  # the framework's own name stays
    assert family["site"]["stack"] == ["train.py:20 in step", "train.py:10 in loop"]
    assert family["where"] == "train.py:20 in step"
    assert family["label"] == "MatMul [4,4] output (train.py:20 in step)"


def test_both_decoders_name_the_same():
    data = jax_training(steps=12)[0].to_bytes()
    names = []
    for decode in (reference.decode, reader.decode):
        names.append(
            [
                (j["families"], j["peak_breakdown"])
                for j in (wire.allocator_json(a, "xplane", False) for a in analysis_of(data, decode).allocators)
            ]
        )
    assert names[0] == names[1] and names[0][0][0]


@pytest.mark.parametrize("values", [[5, 3, 5, -1, 3, 9], [0, 1 << 40, 7, 7, -(1 << 33)], []])
def test_small_unique_is_numpys_unique(values):
    array = np.asarray(values, np.int64)
    uniques, inverse = small_unique(array)
    expected, expected_inverse = np.unique(array, return_inverse=True)
    np.testing.assert_array_equal(uniques, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))


def test_without_programs_an_unnamed_buffer_is_named_by_its_line(tmp_path, decoder):
    b = _builder_with({})
    b.span("$/home/me/loop.py:3 step", 0, 1000)
    _alloc(b, 100, 0x1000, 4096)
    (family,) = analysed(tmp_path, b)["allocators"][0]["families"]
    assert family["op"] == "made at loop.py:3 in step" and family["where"] == "loop.py:3 in step"
    assert family["label"] == "made at loop.py:3 in step"  # the line is not said twice


def _sites_by_allocator(builder: ProfileBuilder) -> dict[str, list]:
    analysis = analysis_of(builder.to_bytes(), reader.decode)
    return {a.memory_id: a.sites[1:] for a in analysis.allocators}


@pytest.mark.parametrize("program_id", CONV_IDS)
def test_several_gpus_each_name_their_execution_by_its_spans_program_id_and_callers_flow(tmp_path, decoder, program_id):
    """No PjitFunction encloses the allocations on the devices' threads: the execution around them, the module span
    inside it, the kernel launches' program id (two modules share the name and the sizes) and the flow back to
    the `python` line's call name them, with that call's frames."""
    builder, planted = jax_multi_gpu(devices=3, program_id=program_id)
    host = analysed(tmp_path, builder)
    assert [a["memory_id"] for a in host["allocators"]] == ["GPU_0_bfc", "GPU_1_bfc", "GPU_2_bfc"]
    for gpu in host["allocators"]:
        rows = {g["op"]: g for g in gpu["families"]}
        assert sorted(rows) == [f"{b} of {planted['program']}" for b in planted["outputs"]]
        for buffer, where in zip(planted["outputs"], planted["where"], strict=True):
            site = rows[f"{buffer} of {planted['program']}"]["site"]
            # Equal sizes, told apart by their order inside `Build buffer allocations`: exact, no candidates.
            assert (site["program"], site["buffer"], site["match"], site["candidates"]) == (
                planted["program"],
                buffer,
                "exact",
                [],
            )
            assert rows[f"{buffer} of {planted['program']}"]["where"] == where
            assert tuple(site["stack"]) == planted["stack"]
    for memory_id, sites in _sites_by_allocator(builder).items():
        temporaries = [s for s in sites if s.buffer == "temporaries"]
        assert [(s.program, s.match) for s in temporaries] == [(planted["program"], "exact")], memory_id


def _build_and_temporaries(lifetimes: list[bool]) -> ProfileBuilder:
    """One execution per entry inside `Build buffer allocations`, allocating 4 KiB that it frees before it ends
    (True) or keeps, of a program whose output and temporaries block are both 4 KiB."""
    out, temp = ProgramBuffer("out", "add", F32, (1024,), "jit(f)/add"), ProgramBuffer("t", "fusion", F32, (1024,), kind="temp")
    b = _builder_with({"jit_f(1)": [out, temp]})
    for k, freed in enumerate(lifetimes):
        t = k * 10_000
        b.span("PjRtStreamExecutorLoadedExecutable::ExecuteHelper", t, t + 5_000)
        b.span("Build buffer allocations", t + 10, t + 100)
        b.span("jit_f:XLA GPU module", t + 200, t + 4_000)
        _alloc(b, t + 50, 0x1000 + k, out.size)
        if freed:
            b.free(t + 4_500, 0x1000 + k, out.size, allocator=ALLOCATOR, line=PYTHON_LINE)
    return b


def test_inside_build_buffer_allocations_lifetime_tells_temporaries_from_an_output_of_the_same_size(tmp_path, decoder):
    (sites,) = _sites_by_allocator(_build_and_temporaries([True, False])).values()
    assert sorted((s.buffer, s.match) for s in sites) == [("output 0", "exact"), ("temporaries", "exact")]


@pytest.mark.parametrize("chips", [1, 2])
def test_a_tpu_output_allocated_before_its_run_follows_the_flows_to_the_chips_program(tmp_path, decoder, chips):
    """The outputs are allocated 300 ms before the chip runs the program, while it runs another program of an
    output of the same size: only the flows name the right one, whether the execution runs on the caller's thread
    (one chip) or on each chip's. The sharded input that each chip receives before the call is that call's
    parameter 0."""
    builder, planted = tpu_psum(chips=chips)
    host = analysed(tmp_path, builder)
    assert [a["memory_id"] for a in host["allocators"]] == [str(k) for k in range(chips)]
    for chip in host["allocators"]:
        rows = {g["op"]: g["site"] for g in chip["families"]}
        output = rows[f"{planted['output']} of {planted['program']}"]
        assert (output["program"], output["match"], output["hlo_shape"]) == (planted["program"], "exact", "f32[1024,1024]")
        assert output["stack"] == ["serve.py:30 in main"]  # the frames of the call on `main`, through the flow
        fed = rows[planted["transfer"]]
        assert (fed["context"], fed["program"], fed["buffer"], fed["hlo_shape"]) == (
            "transfer",
            planted["program"],
            "parameter 0",
            PSUM_BUFFERS[0].shape,
        )


def test_time_alone_names_only_a_program_of_the_allocations_own_device_and_says_near(tmp_path, decoder):
    b = _builder_with(
        {"jit_a(1)": [ProgramBuffer("a", "add", F32, (256,))], "jit_b(2)": [ProgramBuffer("b", "add", F32, (256,))]}
    )
    for k, module in enumerate(("jit_a(1)", "jit_b(2)")):
        b.xla_module(f"/device:TPU:{k}", module, 0, 10_000, run_id=k)
    for ordinal, addr in ((1, 0x1000), (2, 0x2000)):  # TPU:2 has no plane in the profile
        b.alloc(5_000, addr, 1024, allocator=str(ordinal), id_stat="index_on_host", op=None, shape=None, region=None, dtype=0)
    host = analysed(tmp_path, b)
    named = {a["memory_id"]: [(g["op"], g["site"]["match"]) for g in a["families"]] for a in host["allocators"]}
    assert named == {"1": [("output 0 of jit_b(2)", "near")], "2": [("outside any program", "")]}
    evidence = {a["memory_id"]: [g["site"]["near_by"] for g in a["families"]] for a in host["allocators"]}
    assert evidence == {"1": ["time"], "2": [""]}


def test_a_program_found_by_time_alone_whose_temporaries_are_a_few_kib_off_is_near_by_time_and_size(tmp_path, decoder):
    temp = ProgramBuffer("t", "fusion", F32, (1024,), kind="temp")
    b = _builder_with(
        {"jit_a(1)": [ProgramBuffer("a", "add", F32, (256,)), temp], "jit_b(2)": [ProgramBuffer("b", "add", F32, (256,))]}
    )
    b.xla_module("/device:TPU:0", "jit_b(2)", 0, 10_000, run_id=0)
    b.xla_module("/device:TPU:1", "jit_a(1)", 0, 10_000, run_id=1)
    b.alloc(5_000, 0x1000, temp.size + 256, allocator="1", id_stat="index_on_host", op=None, shape=None, region=None, dtype=0)
    (tpu,) = analysed(tmp_path, b)["allocators"]
    ((op, site),) = [(g["op"], g["site"]) for g in tpu["families"]]
    assert (op, site["match"], site["near_by"]) == ("temporaries of jit_a(1)", "near", "time_and_size")


def test_a_transfer_no_call_takes_stays_outside_any_program(tmp_path, decoder):
    b = _builder_with(
        {"jit_f(1)": [ProgramBuffer("x", "parameter", F32, (64,), kind="parameter"), ProgramBuffer("y", "add", F32, (64,))]}
    )
    b.span("DevicePut", 100, 200)
    _alloc(b, 150, 0x1000, 999)  # no parameter of the next call has this size
    b.span("PjitFunction(f)", 300, 400)
    b.span("DevicePut", 500, 600)
    _alloc(b, 550, 0x2000, 256)  # no call after it
    assert _sites(tmp_path, b) == [("transfer to device, outside any program", "", ())]


def test_launches_of_two_same_name_programs_in_one_execution_leave_the_choice_to_the_sizes(tmp_path, decoder):
    small, large = ProgramBuffer("o", "add", F32, (16,), "jit(f)/add"), ProgramBuffer("o", "add", F32, (32,), "jit(f)/add")
    b = _builder_with({"jit_f(1)": [small], "jit_f(2)": [large], "jit_g(3)": [large]})
    b.span("PjRtStreamExecutorLoadedExecutable::ExecuteHelper", 0, 1_000)
    b.span("Build buffer allocations", 10, 100)
    b.span("jit_f:XLA GPU module", 200, 900)
    for t, pid in ((300, 1), (400, 2), (500, 3)):  # jit_g(3)'s launch is another program's: not a candidate
        b.span("hipModuleLaunchKernel", t, t + 10, line="Host Threads/1", stats={"program_id": pid})
    _alloc(b, 50, 0x1000, large.size)
    assert _sites(tmp_path, b) == [("output 0 of jit_f(2)", "exact", ())]


# The frame that tells buffers apart (analyses/frames.telling_frames), one rule for every format with Python stacks:
# buffers made through one helper (an allocation function many lines call) are named by the line that called it,
# and the helper stays in their stack; a helper only one line calls, and a line no helper is under, keep their own.
FLEX, ALLOCATE = "/home/me/flexgen/flex_opt.py", "/home/me/flexgen/my_backend.py"
HELPED = {171: 2, 319: 3}  # the line of each caller of the helper, and how many buffers it makes through it


def test_python_tracer_buffers_made_through_a_shared_helper_are_named_by_its_callers(tmp_path, decoder):
    b = _builder_with({})
    b.span(f"${FLEX}:640 init_all_weights", 0, 20_000)
    addr = 0x1000
    for k, (line, count) in enumerate(HELPED.items()):
        t0 = 1000 + 6000 * k
        b.span(f"${FLEX}:{line} init_weight", t0, t0 + 5000)
        b.span(f"${ALLOCATE}:190 allocate", t0 + 100, t0 + 4000)
        for n in range(count):
            _alloc(b, t0 + 200 + 100 * n, addr, 4096)
            addr += 0x10_0000
    b.span("$/home/me/flexgen/util.py:5 scratch", 14_000, 15_000)  # a helper one line alone calls
    _alloc(b, 14_500, addr, 8192)
    (cpu,) = analysed(tmp_path, b)["allocators"]
    families = {g["op"]: (g["where"], g["count"], g["site"]["stack"]) for g in cpu["families"]}
    helper, outer = "my_backend.py:190 in allocate", "flex_opt.py:640 in init_all_weights"
    assert families == {
        **{
            f"made at flex_opt.py:{line} in init_weight": (
                f"flex_opt.py:{line} in init_weight",
                count,
                [helper, f"flex_opt.py:{line} in init_weight", outer],
            )
            for line, count in HELPED.items()
        },
        "made at util.py:5 in scratch": ("util.py:5 in scratch", 1, ["util.py:5 in scratch", outer]),
    }
    # The breakdown at the peak (every buffer is live at the end) groups and names them the same way.
    rows = {r["op"]: (r["where"], r["count"]) for r in cpu["peak_breakdown"] if r["category"] == "buffers"}
    assert rows == {op: (where, count) for op, (where, count, _) in families.items()}


def test_trace_stacks_name_a_shared_helpers_callers_and_leave_a_loop_without_one_as_it_was(tmp_path):
    from tests.unit.read.formats.torch_trace.trace_files import complete, memory, write

    events = [complete("train.py(640): init_all_weights", 0.0, 20.0, cat="python_function")]
    addr = 0x1000
    for k, (line, count) in enumerate(HELPED.items()):
        t0 = 1.0 + 6.0 * k
        events.append(complete(f"flex_opt.py({line}): init_weight", t0, 5.0, cat="python_function"))
        events.append(complete("my_backend.py(190): allocate", t0 + 0.1, 4.0, cat="python_function"))
        for n in range(count):
            events += [complete("aten::empty", t0 + 0.2 + 0.1 * n, 0.05), memory(t0 + 0.21 + 0.1 * n, 4096, Addr=addr)]
            addr += 0x10_0000
    events.append(complete("train.py(700): forward", 14.0, 1.0, cat="python_function"))
    events += [complete("aten::zeros", 14.1, 0.1), memory(14.15, 8192, Addr=addr)]
    path = write(tmp_path / "w.pt.trace.json", events)
    (cuda,) = tb_leakfinder.engine.engine.analyze_file(str(path), "w", str(tmp_path)).json()["allocators"]
    families = {g["op"]: g for g in cuda["families"]}
    # One op, one family (aten::empty), named by the line of its newest buffer: the helper's second caller.
    empty, zeros = families["aten::empty"], families["aten::zeros"]
    assert (empty["count"], empty["where"]) == (5, "flex_opt.py:319 in init_weight")
    assert empty["site"]["stack"] == [
        "my_backend.py:190 in allocate",
        "flex_opt.py:319 in init_weight",
        "train.py:640 in init_all_weights",
    ]
    assert (zeros["count"], zeros["where"]) == (1, "train.py:700 in forward")
