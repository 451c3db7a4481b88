"""A host's format in its report JSON, and every view on PyTorch runs and on a logdir that mixes them with XProf's.

The real traces are those of ../shared/profiles/torch (see its README and licences/); the demo's XProf
captures come from demo_logs/, and the leaking PyTorch loops are built (trace_files.training).
"""

from __future__ import annotations

import csv
import json
import pathlib
import shutil

import pytest

from tb_leakfinder import wire
from tb_leakfinder.engine.engine import Engine, HostResult
from tb_leakfinder.read import discovery
from tb_leakfinder.read.formats import registry
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.pprof_builder import PprofBuilder
from tb_leakfinder.views import cli
from tb_leakfinder.views.text import render_report
from tb_leakfinder.wire.shape import conforms
from tests.support.demo import DEMO_LOGS, demo_xplane
from tests.unit.read.formats.torch_trace.trace_files import complete, training, write
from tests.unit.views.test_html_report import page_parts

TORCH = pathlib.Path(__file__).resolve().parents[3].parent / "shared" / "profiles" / "torch"
RESNET = TORCH / "kineto_resnet50_w4"  # pytorch/kineto's ResNet-50 sample trace, BSD-3 licence
needs_resnet = pytest.mark.skipif(not RESNET.exists(), reason="the shared real traces are absent")
QWEN = TORCH / "tracelens_qwen_h100"  # AMD-AGI/TraceLens's Qwen1.5-0.5B trace, MIT licence
TRACE_NAME = "worker0_7.1700000000000.pt.trace.json"


def _torch_run(folder: pathlib.Path, kept_bytes: int = 1 << 20) -> pathlib.Path:
    """A PyTorch run folder of one worker's trace: a loop keeping `kept_bytes` of aten::mm output a step."""
    folder.mkdir(parents=True)
    write(folder / TRACE_NAME, training(kept_bytes=kept_bytes))
    return folder


def _only_host(body: dict) -> dict:
    (run,) = body["runs"]
    (host,) = run["hosts"]
    return host


def _allocator(host: dict, memory_id: str) -> dict:
    (allocator,) = [a for a in host["allocators"] if a["memory_id"] == memory_id]
    return allocator


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> pathlib.Path:
    """An XProf run (a copy of the demo's tf_leak), the real ResNet-50 trace's folder and a built leaking loop."""
    logdir = tmp_path_factory.mktemp("mixed")
    shutil.copytree(DEMO_LOGS / "tf_leak", logdir / "tf_leak")
    if RESNET.exists():
        shutil.copytree(RESNET, logdir / "resnet")  # pytorch/kineto, BSD-3
    _torch_run(logdir / "torch_leak")
    return logdir


def test_each_host_names_its_format_and_how_to_get_its_python_frames(tmp_path):
    builder = PprofBuilder()
    builder.sample(4 << 20, [("/src/train.py", "make", 3, 4)])
    prof = builder.write(tmp_path / "memory_step_1.prof")
    xplane = _only_host(Engine.for_path(str(demo_xplane("tf_leak"))).report())
    torch = _only_host(Engine.for_path(str(_torch_run(tmp_path / "torch"))).report())
    pprof = _only_host(Engine.for_path(str(prof)).report())
    assert (xplane["format"], torch["format"], pprof["format"]) == ("xplane", "torch_trace", "pprof")
    # Each format's own advice: XProf's Python tracer, PyTorch's with_stack; a device memory profile records stacks.
    (xplane_hint,) = {a["stack_hint"] for a in xplane["allocators"]}
    assert "python_tracer=True" in xplane_hint and "Profile tab" in xplane_hint
    (hint,) = {a["stack_hint"] for a in torch["allocators"]}
    assert "with_stack=True" in hint and "python_tracer" not in hint and "Profile tab" not in hint
    assert [a["stack_hint"] for a in pprof["allocators"]] == [None]
    # The rest of each format's hints, which the tab shows without knowing the formats: only XProf's profiles
    # hold compiled programs and open in XProf's tools.
    hints = [host["format_hints"] for host in (xplane, torch, pprof)]
    assert [h["name"] for h in hints] == ["XProf profile", "PyTorch profiler trace", "JAX device memory profile"]
    assert [(h["static_modules"], h["xprof_tools"]) for h in hints] == [(True, True), (False, False), (False, False)]
    assert "TF_CPU_ALLOCATOR_USE_BFC=true" in hints[0]["record_events"]
    assert "`torch.profiler.profile(profile_memory=True)`" in hints[1]["record_events"]
    assert hints[0]["memory_id_note"] == " in XProf's Memory Profile"
    assert hints[1]["memory_id_note"] == hints[2]["memory_id_note"] == ", the device its profile names"


def test_a_host_without_memory_events_is_told_how_its_own_format_records_them(tmp_path):
    trace = write(tmp_path / "worker0.pt.trace.json", [complete("aten::add", 1.0, 2.0)])
    torch = _only_host(Engine.for_path(str(trace)).report())
    jax = _only_host(Engine.for_path(str(demo_xplane("jax_clean"))).report())
    assert torch["verdict"] == jax["verdict"] == "inconclusive"
    # The reason says there are none; how to record them is the format's own hint, given once beside it.
    assert torch["reason"] == "No memory events in this profile."
    torch_record, jax_record = torch["format_hints"]["record_events"], jax["format_hints"]["record_events"]
    assert torch_record.startswith("PyTorch records memory events")
    assert "profile_memory=True" in torch_record and "TF_CPU_ALLOCATOR_USE_BFC" not in torch_record
    assert "TF_CPU_ALLOCATOR_USE_BFC=true" in jax_record
    assert jax["reason"] == "No memory events in this profile. Its compiled programs are in the static view."
    text = render_report(Engine.for_path(str(trace)).report())
    assert text.count(torch_record.replace("`", "")) == 1 and "No memory events in this profile." in text


def test_without_memory_events_the_static_views_finding_comes_first():
    # capture_jax.py makes h = relu(x @ w1 + b1) at line 48 and its train_step_liveout returns it (line 63).
    host = _only_host(Engine.for_path(str(demo_xplane("jax_liveout"))).report())
    first = host["reason"].split(": XLA keeps")[0]
    assert first.startswith("Static view: broadcast_maximum_fusion f32[256,3072] at capture_jax.py:48 (3 MiB), returned by")
    assert "live_out" not in host["reason"] and "TF_CPU_ALLOCATOR_USE_BFC" not in host["reason"]


def test_routes_and_the_history_of_hosts_without_memory_events_give_their_own_formats_advice(tmp_path):
    # Two captures of one TensorBoard run, PyTorch traces recorded without profile_memory.
    (tmp_path / "job").mkdir()
    for k in range(2):
        write(tmp_path / "job" / f"worker0.{k}.pt.trace.json", [complete("aten::add", 1.0 + k, 2.0)])
    client, _ = make_client(str(tmp_path))
    runs = [r["run"] for r in json.loads(client.get(f"{PREFIX}/runs").get_data())["runs"]]
    assert len(runs) == 2
    record = registry.hints("torch_trace").record_events.replace("`", "")
    for route in ("timeline", "buffers"):
        answer = client.get(f"{PREFIX}/{route}", query_string={"run": runs[0]})
        error = json.loads(answer.get_data())["error"]
        assert answer.status_code == 404 and error.endswith(f"has no memory events. {record}")
        assert "TF_CPU_ALLOCATOR_USE_BFC" not in error and "JAX" not in error
    history = json.loads(client.get(f"{PREFIX}/history", query_string={"tb_run": "job"}).get_data())
    assert history["verdict"] == "inconclusive" and history["reason"] == f"job: no memory events in its 2 captures. {record}"


def test_an_empty_logdir_is_told_how_to_record_each_format(tmp_path):
    client, _ = make_client(str(tmp_path))
    body = json.loads(client.get(f"{PREFIX}/runs").get_data())
    assert body["runs"] == []
    listed = body["formats"]
    assert [f["name"] for f in listed] == [f.hints.name for f in registry.FORMATS]
    assert [f["layout"] for f in listed] == [f.hints.layout for f in registry.FORMATS]
    assert all(f["capture"].count("`") >= 2 and f["capture"].count("`") % 2 == 0 for f in listed)
    captures = dict(zip([f.name for f in registry.FORMATS], [f["capture"] for f in listed], strict=True))
    assert "profile_memory=True" in captures["torch_trace"] and "tensorboard_trace_handler" in captures["torch_trace"]
    assert "save_device_memory_profile" in captures["pprof"] and "_dump_snapshot" in captures["torch_snapshot"]
    assert "jax.profiler.start_trace" in captures["xplane"]


def test_a_cache_entry_keeps_the_format_and_one_without_it_is_a_miss(tmp_path):
    run = discovery.runs_for_path(str(_torch_run(tmp_path / "torch")))[0]
    disk = DiskCache(str(tmp_path / "cache"))
    first = Engine(lambda: [run], disk=disk).report()
    key = run.identity(next(iter(run.hosts)))
    stored = disk.load(key, HostResult)
    assert stored is not None and stored.unwrap().profile.format == "torch_trace"
    entry = disk.load_report(key)
    assert entry is not None and entry.value["format"] == "torch_trace"
    again = Engine(lambda: [run], disk=disk)
    assert again.report() == first and again.analyses == 0  # answered from the entry
    older = {k: v for k, v in _only_host(first).items() if k != "format"}
    assert conforms(_only_host(first), wire.HOST_SHAPE) and not conforms(older, wire.HOST_SHAPE)


def test_an_unreadable_trace_keeps_its_format_beside_the_readable_one(tmp_path):
    folder = _torch_run(tmp_path / "job")
    (folder / "worker1_8.1700000000000.pt.trace.json").write_text('{"traceEvents": [')
    (run,) = Engine.for_path(str(folder)).report()["runs"]
    by_host = {h["host"]: h for h in run["hosts"]}
    assert by_host["worker1_8"]["format"] == by_host["worker0_7"]["format"] == "torch_trace"
    assert "error" in by_host["worker1_8"] and run["verdict"] == "leak"


def test_report_and_check_on_a_pytorch_run(tmp_path, capsys):
    leak, clean = _torch_run(tmp_path / "leak"), _torch_run(tmp_path / "clean", kept_bytes=0)
    assert cli.main(["report", str(leak)]) == cli.EXIT_OK
    text = capsys.readouterr().out
    assert "allocator cuda:0: LEAK" in text and "aten::mm float[64,64], float[64,64]" in text
    assert "with_stack=True" in text and "python_tracer" not in text
    assert cli.main(["check", str(leak)]) == cli.EXIT_LEAK
    assert "aten::mm" in capsys.readouterr().out
    assert cli.main(["check", str(clean)]) == cli.EXIT_OK


def test_diff_between_two_pytorch_runs_names_the_new_leak(tmp_path, capsys):
    leak, clean = _torch_run(tmp_path / "leak"), _torch_run(tmp_path / "clean", kept_bytes=0)
    assert cli.main(["diff", str(clean), str(leak), "--json"]) == cli.EXIT_LEAK
    comparison = json.loads(capsys.readouterr().out)
    assert comparison["regression"] and (comparison["verdict_a"], comparison["verdict_b"]) == ("no_leak", "leak")
    (host,) = comparison["hosts"]
    (cuda,) = [a for a in host["allocators"] if a["allocator_b"] == "cuda:0"]
    (new,) = [g for g in cuda["families"] if g["status"] == "new"]
    assert (new["op"], new["new_leak"], new["count_b"]) == ("aten::mm", True, 12)
    assert cli.main(["diff", str(leak), str(clean)]) == cli.EXIT_OK  # the fix is no regression


def test_csv_of_a_pytorch_run_lists_its_ops(tmp_path):
    out = tmp_path / "csv"
    assert cli.main(["report", str(_torch_run(tmp_path / "leak")), "--csv", str(out)]) == cli.EXIT_OK
    with (out / "families.csv").open(newline="") as f:
        groups = list(csv.DictReader(f))
    assert [(g["allocator"], g["op"], g["kind"], g["count"]) for g in groups] == [("cuda:0", "aten::mm", "growing", "12")]
    with (out / "buffers.csv").open(newline="") as f:
        buffers = list(csv.DictReader(f))
    # 12 kept outputs and 12 freed workspaces.
    assert sorted((b["op"], b["status"]) for b in buffers) == [("aten::mm", "freed")] * 12 + [("aten::mm", "never_freed")] * 12


@needs_resnet
def test_csv_of_the_real_resnet_trace_breaks_its_peak_down_by_aten_op(tmp_path):
    out = tmp_path / "csv"
    assert cli.main(["report", str(RESNET), "--csv", str(out)]) == cli.EXIT_OK
    with (out / "peak_breakdown.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["allocator"] == "cuda:0"]
    host = _only_host(Engine.for_path(str(RESNET)).report())
    cuda = _allocator(host, "cuda:0")
    assert sum(int(r["bytes"]) for r in rows) == cuda["peak_bytes_in_use"]
    ops = {r["op"] for r in rows}
    # Batch norm's outputs are allocated through aten::empty inside it: named by the op that computes them.
    assert {"aten::cudnn_batch_norm", "aten::cudnn_convolution"} <= ops
    assert not {op for op in ops if op.startswith("aten::empty")}


@needs_resnet
def test_html_page_of_a_pytorch_run_holds_its_answers_and_no_xprof_advice(tmp_path):
    out = tmp_path / "resnet.html"
    assert cli.main(["report", str(RESNET), "--html", str(out)]) == cli.EXIT_OK
    _, data, _ = page_parts(out)
    answers = data["answers"]
    host = _only_host(answers["\x00".join(["report", "run=kineto_resnet50_w4"])])
    assert host["format"] == "torch_trace" and host["verdict"] == "no_leak"
    assert {a["memory_id"] for a in host["allocators"]} == {"cpu", "cuda:0"}
    timelines = [k for k in answers if k.startswith("timeline\x00")]
    assert len(timelines) == 2  # one per allocator: no families, so no family curves
    # What the page inlines says nothing of XProf's tools: no Python tracer, no Memory Viewer, no programs.
    inlined = json.dumps(answers)
    assert "python_tracer" not in inlined and "Memory Viewer" not in inlined and host["modules"] == []


def test_discovery_and_the_routes_serve_both_formats_of_a_mixed_logdir(mixed):
    runs = {r.name: r for r in discovery.discover(str(mixed))}
    xprof = next(name for name in runs if name.startswith("tf_leak/"))
    torch = ["torch_leak", *(["resnet"] if RESNET.exists() else [])]
    assert sorted(runs) == sorted([xprof, *torch])
    client, _ = make_client(str(mixed))
    listed = json.loads(client.get(f"{PREFIX}/runs").get_data())["runs"]
    assert {r["run"]: r["hosts"] for r in listed} == {name: list(run.hosts) for name, run in runs.items()}
    formats = {}
    for name in runs:
        answer = client.get(f"{PREFIX}/report", query_string={"run": name})
        assert answer.status_code == 200
        formats[name] = _only_host(json.loads(answer.get_data()))["format"]
    assert formats == {xprof: "xplane", **dict.fromkeys(torch, "torch_trace")}
    overview = json.loads(client.get(f"{PREFIX}/overview", query_string={"run": "torch_leak"}).get_data())
    assert [(r["allocator"], r["verdict"]) for r in overview["rows"]] == [("cuda:0", "leak")]


@pytest.mark.skipif(not QWEN.exists(), reason="the shared real traces are absent")
def test_the_cli_and_csv_show_the_model_layer_before_the_users_line(tmp_path, capsys):
    assert cli.main(["report", str(QWEN), "--no-cache"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    mlp = next(line for line in out.splitlines() if "aten::mul BFloat16[16,559,2816]" in line)
    assert "  Qwen2MLP.forward (modeling_qwen2.py:56) ← text_base_model.py:28 in run_on_input ← entry_point.py" in mlp
    csv_dir = tmp_path / "csv"
    assert cli.main(["report", str(QWEN), "--csv", str(csv_dir)]) == cli.EXIT_OK
    with (csv_dir / "peak_breakdown.csv").open(newline="") as f:
        frames = {r["model_frame"] for r in csv.DictReader(f) if r["op"] == "aten::mul"}
    assert "Qwen2MLP.forward (modeling_qwen2.py:56)" in frames
