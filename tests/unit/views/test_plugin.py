"""The plugin's routes through TensorBoard's own WSGI application."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from tb_leakfinder import wire
from tb_leakfinder.read import files
from tb_leakfinder.testing.pjrt_profile import LEAKED_OUTPUT, TRAIN_BUFFERS, jax_training
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import write_session
from tb_leakfinder.wire.shape import conforms
from tests.support.demo import DEMO_LOGS, demo_xplane
from tests.support.unreadable import FORMATS, one_cut_short, with_bad_links


@pytest.fixture(scope="module")
def client():
    return make_client(str(DEMO_LOGS))[0]


def _get(client, route: str, **args: object):
    response = client.get(f"{PREFIX}/{route}", query_string=args)
    body = json.loads(response.get_data(as_text=True))
    return response.status_code, body


def _run_name(client, tb_run: str) -> str:
    _, body = _get(client, "runs")
    return next(r["run"] for r in body["runs"] if r["run"].startswith(tb_run + "/"))


def test_runs_are_named_like_the_profile_plugin(client):
    status, body = _get(client, "runs")
    assert status == 200
    names = {r["run"]: r["hosts"] for r in body["runs"]}
    for tb_run in ("tf_leak", "tf_fixed"):
        path = demo_xplane(tb_run)
        session, host = path.parent.name, path.name.removesuffix(".xplane.pb")
        assert names[f"{tb_run}/{session}"] == [host]


# The real PyTorch trace of ../shared/profiles/torch (pytorch/kineto's ResNet-50 sample, BSD-3 licence).
TORCH_PROFILES = DEMO_LOGS.parents[1] / "shared" / "profiles" / "torch"


@pytest.mark.parametrize(
    ("logdir", "tb_run", "verdict", "profile_format"),
    [(DEMO_LOGS, "tf_leak", "leak", "xplane"), (TORCH_PROFILES, "kineto_resnet50_w4", "no_leak", "torch_trace")],
)
def test_report_route_equals_cli_json(logdir, tb_run, verdict, profile_format):
    if not logdir.exists():
        pytest.skip(f"{logdir} is absent (the shared profiles lie beside the repository)")
    client = make_client(str(logdir))[0]
    run = next(r["run"] for r in _get(client, "runs")[1]["runs"] if r["run"].split("/")[0] == tb_run)
    status, body = _get(client, "report", run=run)
    assert status == 200
    cli = subprocess.run(
        [sys.executable, "-m", "tb_leakfinder.views.cli", "report", str(logdir), "--run", run, "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert json.loads(cli.stdout) == body
    assert body["runs"][0]["verdict"] == verdict
    assert {h["format"] for h in body["runs"][0]["hosts"]} == {profile_format}


def test_report_of_one_host(client):
    run = _run_name(client, "tf_fixed")
    host = demo_xplane("tf_fixed").name.removesuffix(".xplane.pb")
    status, body = _get(client, "report", run=run, host=host)
    assert status == 200 and [h["host"] for h in body["runs"][0]["hosts"]] == [host]


def test_timeline_is_bounded_and_keeps_the_peak(client):
    run = _run_name(client, "tf_leak")
    _, report = _get(client, "report", run=run)
    allocator = report["runs"][0]["hosts"][0]["allocators"][0]
    status, body = _get(client, "timeline", run=run, points=40)
    assert status == 200
    assert body["total_events"] == allocator["num_allocations"] + allocator["num_deallocations"]
    assert len(body["time_ps"]) <= 40 < body["total_events"]
    assert max(body["heap_bytes"]) == allocator["peak_bytes_in_use"]
    assert body["time_ps"] == sorted(body["time_ps"])
    assert body["never_freed_bytes"][-1] == allocator["never_freed_bytes"]
    assert len(body["steps"]) == report["runs"][0]["hosts"][0]["num_steps"]


def test_timeline_group_series(client):
    run = _run_name(client, "tf_leak")
    _, report = _get(client, "report", run=run)
    top = report["runs"][0]["hosts"][0]["allocators"][0]["families"][0]
    status, body = _get(client, "timeline", run=run, family=0)
    assert status == 200
    assert body["family_bytes"][-1] == top["chunk_bytes"]
    assert body["family_bytes"] == sorted(body["family_bytes"])  # a growing leak only climbs


def test_buffers_paging_sorting_and_family(client):
    run = _run_name(client, "tf_leak")
    _, first = _get(client, "buffers", run=run, limit=10, sort="bytes", order="desc")
    _, second = _get(client, "buffers", run=run, limit=10, offset=10, sort="bytes", order="desc")
    assert first["total"] == second["total"] > 20
    sizes = [b["chunk_bytes"] for b in first["buffers"] + second["buffers"]]
    assert sizes == sorted(sizes, reverse=True)
    assert {b["id"] for b in first["buffers"]}.isdisjoint(b["id"] for b in second["buffers"])
    _, family = _get(client, "buffers", run=run, family=0, limit=100)
    assert family["total"] == 25
    assert all(b["op"] == "Mul" and b["status"] == "never_freed" and b["free_time_ps"] is None for b in family["buffers"])
    _, live = _get(client, "buffers", run=run, status="never_freed", limit=100)
    assert live["total"] and all(b["status"] == "never_freed" for b in live["buffers"])


@pytest.mark.parametrize(
    ("route", "args", "status"),
    [
        ("report", {}, 400),
        ("report", {"run": "no/such/run"}, 404),
        ("report", {"run": "../tf_leak"}, 404),
        ("timeline", {"run": "RUN", "host": "nohost"}, 404),
        ("timeline", {"run": "RUN", "allocator": "GPU_9_bfc"}, 404),
        ("timeline", {"run": "RUN", "points": "many"}, 400),
        ("timeline", {"run": "RUN", "points": "3"}, 400),
        ("buffers", {"run": "RUN", "sort": "nonsense"}, 400),
        ("buffers", {"run": "RUN", "limit": "0"}, 400),
        ("buffers", {"run": "RUN", "family": "99"}, 404),
        ("buffers", {"run": "RUN", "status": "zombie"}, 400),
    ],
)
def test_bad_arguments_get_4xx_json(client, route, args, status):
    args = {k: (_run_name(client, "tf_leak") if v == "RUN" else v) for k, v in args.items()}
    code, body = _get(client, route, **args)
    assert code == status
    assert isinstance(body["error"], str) and body["error"]
    assert "Traceback" not in body["error"]


def _logdir_with(tmp_path, content: bytes):
    session = tmp_path / "job" / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    (session / "host0.xplane.pb").write_bytes(content)
    return str(tmp_path), "job/2026_01_01_00_00_00"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "empty"),
        (demo_xplane("tf_leak").read_bytes()[:10_000], "incomplete or corrupt"),
        (b"\xff" * 64, "incomplete or corrupt"),
    ],
)
def test_broken_profile_is_a_422_naming_the_file(tmp_path, content, words):
    logdir, run = _logdir_with(tmp_path, content)
    client = make_client(logdir)[0]
    code, body = _get(client, "report", run=run)
    assert code == 422
    assert words in body["error"] and "host0.xplane.pb" in body["error"]


def test_profile_without_memory_events_explains_how_to_get_them(tmp_path):
    from tb_leakfinder import proto

    space = proto.XSpace()()
    space.planes.add(name="/host:CPU").lines.add(name="python")
    logdir, run = _logdir_with(tmp_path, space.SerializeToString())
    client = make_client(logdir)[0]
    code, body = _get(client, "report", run=run)
    assert code == 200
    host = body["runs"][0]["hosts"][0]
    assert host["verdict"] == "inconclusive" and host["allocators"] == []
    assert host["reason"] == "No memory events in this profile."
    record = host["format_hints"]["record_events"]
    assert "TF_CPU_ALLOCATOR_USE_BFC=true" in record and "JAX" in record
    code, body = _get(client, "timeline", run=run)
    assert code == 404 and "no memory events" in body["error"]


def test_index_js_is_an_es_module(client):
    response = client.get(f"{PREFIX}/index.js")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/javascript")
    assert b"render" in response.get_data()


def test_copied_logdir_is_analysed_identically(tmp_path, client):
    shutil.copytree(DEMO_LOGS / "tf_leak", tmp_path / "tf_leak")
    other = make_client(str(tmp_path))[0]
    run = _run_name(client, "tf_leak")
    assert _get(other, "report", run=run) == _get(client, "report", run=run)


def test_report_lists_static_modules_and_flags_the_returned_activation(client):
    status, body = _get(client, "report", run="jax_liveout")
    assert status == 200
    host = body["runs"][0]["hosts"][0]
    modules = {m["name"]: m for m in host["modules"]}
    step = next(m for name, m in modules.items() if name.startswith("jit_train_step_liveout("))
    (flag,) = step["actionable"]
    assert flag["reason"] == "live_out" and flag["shape"] == "f32[256,3072]" and flag["bytes"] == 256 * 3072 * 4
    assert flag["instruction"] in host["reason"]
    _, clean = _get(client, "report", run="jax_clean")
    assert not any(m["actionable"] for m in clean["runs"][0]["hosts"][0]["modules"])


def test_module_route(client):
    _, body = _get(client, "report", run="jax_liveout")
    name = next(m["name"] for m in body["runs"][0]["hosts"][0]["modules"] if m["actionable"])
    status, detail = _get(client, "module", run="jax_liveout", module=name, points=16)
    assert status == 200 and detail["name"] == name
    for args, code in (
        ({"module": "nope(1)"}, 404),
        ({"module": "../" + name}, 404),
        ({}, 400),
        ({"module": name, "memory_space": "7"}, 404),
        ({"module": name, "points": "x"}, 400),
    ):
        status, error = _get(client, "module", run="jax_liveout", **args)
        assert status == code and error["error"]


@pytest.mark.parametrize("profile_format", FORMATS)
def test_a_file_cut_short_is_its_runs_error_and_marks_it_in_the_run_list(tmp_path, profile_format):
    logdir = one_cut_short(tmp_path / "logs", profile_format)
    client = make_client(str(logdir.path))[0]
    _, body = _get(client, "runs")
    assert {r["run"]: r["errors"] for r in body["runs"]} == {run: [] for run in [*logdir.good, logdir.bad]}
    for run in logdir.good:
        status, body = _get(client, "report", run=run)
        assert status == 200 and body["errors"] == [] and body["runs"][0]["verdict"] in ("leak", "no_leak", "inconclusive")
    status, body = _get(client, "report", run=logdir.bad)
    assert status == 422 and str(logdir.bad_file) in body["error"]
    # Each format says the file is cut short, with as much of its size as it can know, and what to do.
    size = logdir.bad_file.stat().st_size
    said = {
        "xplane": f"truncated ({size:,} of at least ",
        "torch_trace": "truncated (",
        "torch_snapshot": f"truncated ({size:,} bytes",
    }
    assert said.get(profile_format, "truncated (") in body["error"] and files.TRUNCATED_ADVICE in body["error"], body["error"]
    _, body = _get(client, "runs")
    errors = {r["run"]: r["errors"] for r in body["runs"]}
    (error,) = errors.pop(logdir.bad)
    assert conforms(error, wire.ERROR_SHAPE)
    assert (error["run"], error["host"], error["file"]) == (logdir.bad, logdir.bad_host, str(logdir.bad_file))
    assert errors == {run: [] for run in logdir.good}
    # The job wrote the rest of its file: the run list no longer holds the old error.
    logdir.bad_file.write_bytes(logdir.bad_file.read_bytes() + b"more")
    _, body = _get(client, "runs")
    assert all(r["errors"] == [] for r in body["runs"])


def test_a_dangling_and_a_looping_trace_link_leave_the_good_trace_reported(tmp_path):
    good, gone, loop = with_bad_links(tmp_path / "logs")
    client = make_client(str(tmp_path / "logs"))[0]
    status, body = _get(client, "report", run="job")
    assert status == 200, body
    hosts = {h["host"]: h for h in body["runs"][0]["hosts"]}
    assert hosts["worker0_7"]["verdict"] == "leak"
    assert [(e["host"], e["file"]) for e in body["errors"]] == [("gone", str(gone)), ("loop", str(loop))]
    assert "No such file" in hosts["gone"]["error"] and "symbolic links" in hosts["loop"]["error"]
    status, body = _get(client, "overview", run="job")
    assert status == 200 and sorted(r["host"] for r in body["rows"] if r["error"]) == ["gone", "loop"]
    status, body = _get(client, "timeline", run="job", host="gone")
    assert status == 422 and str(gone) in body["error"]
    _, body = _get(client, "runs")
    assert [e["host"] for e in body["runs"][0]["errors"]] == ["gone", "loop"]
    # The dangling link's target appears: the run list no longer calls it unreadable.
    pathlib.Path(os.readlink(gone)).write_bytes(good.read_bytes())
    _, body = _get(client, "runs")
    assert [e["host"] for e in body["runs"][0]["errors"]] == ["loop"]


def test_buffers_of_one_program_buffer_are_its_allocations(tmp_path):
    # The static view's program buffer -> the dynamic view's allocations: the train step's output 1 (`dot.3`,
    # allocation 3 of its buffer assignment: two parameters and `loss` come first) is allocated once a step.
    builder, planted = jax_training(12)
    write_session(tmp_path, "gpu", "session", {builder.hostname: builder})
    client = make_client(str(tmp_path))[0]
    run = _run_name(client, "gpu")
    held = [b for b in TRAIN_BUFFERS if b.kind != "temp"]
    output = [b for b in held if b.kind == "output"][LEAKED_OUTPUT]
    args = {"run": run, "allocator": "GPU_0_bfc", "program": planted["program"], "limit": 100}
    code, page = _get(client, "buffers", **args, allocation=held.index(output))
    assert code == 200 and page["total"] == planted["steps"]
    assert all(b["requested_bytes"] == output.size for b in page["buffers"])
    assert {(page["sites"][b["site"]]["program"], page["sites"][b["site"]]["buffer"]) for b in page["buffers"]} == {
        (planted["program"], planted["leaked_buffer"])
    }
    _, whole = _get(client, "buffers", **args)
    outputs = len([b for b in held if b.kind == "output"])
    # Its outputs and its temporaries block each step, and the transfer that feeds its parameter each step.
    contexts = Counter(whole["sites"][b["site"]]["context"] for b in whole["buffers"])
    assert contexts == {"program": planted["steps"] * (outputs + 1), "transfer": planted["steps"]}
    _, none = _get(client, "buffers", **{**args, "program": "jit_train_step(999)"})
    assert none["total"] == 0
    code, refused = _get(client, "buffers", run=run, allocator="GPU_0_bfc", allocation=3)
    assert code == 400 and "program" in refused["error"]


def test_the_plugin_does_not_import_its_loader():
    """The loader names the plugin only when TensorBoard loads it; the plugin takes its name from plugin_flags."""
    program = "import sys; import tb_leakfinder.views.plugin; print('tb_leakfinder.plugin_loader' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
