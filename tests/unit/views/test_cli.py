"""`tb-leakfinder report` and `check`: output and exit codes, as a user runs them."""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tb_leakfinder import analyze as analyze_logdir
from tb_leakfinder import wire
from tb_leakfinder.plugin_loader import LeakfinderLoader
from tb_leakfinder.read.formats import registry
from tb_leakfinder.read.formats.xplane import scan
from tb_leakfinder.testing.pjrt_profile import jax_training
from tb_leakfinder.testing.torch_snapshot_builder import helper_job
from tb_leakfinder.testing.tpu_profile import tpu_inference
from tb_leakfinder.testing.xspace_builder import write_session
from tb_leakfinder.views import html
from tb_leakfinder.views.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tb_leakfinder.views.terminal import visible
from tb_leakfinder.views.text import render_report
from tb_leakfinder.wire.shape import conforms
from tests.support.cli_process import run_cli as cli
from tests.support.demo import DEMO_LOGS, ROOT, demo_capture, demo_xplane
from tests.support.names import TERMINAL, local_logdir, memory_logdir, remove_memory_logdir
from tests.support.scans import record_scans
from tests.support.unreadable import FORMATS, one_cut_short, with_bad_links

TF_CPU = "in TensorFlow's CPU allocator (bfc_cpu_allocator_for_gpu):"  # the allocator verdict names whose memory it judged


def test_console_script_is_installed():
    exe = shutil.which("tb-leakfinder")
    assert exe, "pip install . puts tb-leakfinder on PATH"
    out = subprocess.run([exe, "check", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "exit 1 if any run leaks" in out.stdout


def _file(folder, name: str, content: bytes):
    path = folder / name
    path.write_bytes(content)
    return path


def test_check_exits_1_on_a_leaking_logdir():
    out = cli("check", str(DEMO_LOGS))
    assert out.returncode == 1, out.stderr
    assert "leak" in out.stdout and "Mul [128,1024]" in out.stdout


def test_check_exits_0_on_the_fixed_run():
    out = cli("check", str(demo_xplane("tf_fixed").parent))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no_leak" in out.stdout


def test_report_text_names_the_leak():
    expected = demo_capture("tf_leak")
    out = cli("report", str(demo_xplane("tf_leak")))
    assert out.returncode == 0
    assert "LEAK" in out.stdout
    assert f"{expected['leaked_op']} {expected['leaked_shape']} output" in out.stdout
    assert "growing" in out.stdout and "KiB per step" in out.stdout


def test_report_json_has_the_documented_keys():
    out = cli("report", str(DEMO_LOGS), "--json")
    report = json.loads(out.stdout)
    run = report["runs"][0]
    assert {"run", "hosts", "verdict"} <= set(run)
    allocator = next(h for r in report["runs"] for h in r["hosts"] if h["allocators"])["allocators"][0]
    assert {
        "allocator",
        "num_allocations",
        "num_deallocations",
        "peak_bytes_in_use",
        "never_freed_bytes",
        "verdict",
        "reason",
        "families",
    } <= set(allocator)
    leak = next(a for r in report["runs"] for h in r["hosts"] for a in h["allocators"] if a["families"])["families"][0]
    assert {"op", "shape", "dtype", "region", "kind", "count", "chunk_bytes", "steps", "bytes_per_step", "score"} <= set(leak)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda d: d / "missing", "no such"),
        (lambda d: _file(d, "empty.xplane.pb", b""), "empty"),
        (lambda d: _file(d, "junk.xplane.pb", b"\x0a\xff\xff\xff\x0f"), "corrupt"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, make, words):
    path = make(tmp_path)
    for command in ("check", "report"):
        out = cli(command, str(path))
        assert out.returncode == 2
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
        assert words in out.stderr and str(path) in out.stderr


def test_unknown_run_exits_2():
    out = cli("check", str(DEMO_LOGS), "--run", "nope")
    assert out.returncode == 2 and "no run named 'nope'" in out.stderr


def _two_host_session(tmp_path, good: str) -> str:
    """A session whose host `a` is the demo run `good` and host `b` a file cut short mid-write."""
    session = tmp_path / "job" / "plugins" / "profile" / "s"
    session.mkdir(parents=True)
    data = demo_xplane(good).read_bytes()
    (session / "a.xplane.pb").write_bytes(data)
    (session / "b.xplane.pb").write_bytes(data[: len(data) // 2])
    return str(session)


def test_check_with_one_unreadable_host_still_reports_the_leak_and_fails_as_bad_input(tmp_path):
    out = cli("check", _two_host_session(tmp_path, "tf_leak"))
    assert out.returncode == 2  # a CI gate fails on the broken capture, whatever the others say
    assert out.stdout.split()[0] == "leak" and "Mul [128,1024]" in out.stdout
    assert "b.xplane.pb" in out.stderr and "incomplete or corrupt" in out.stderr


def test_check_with_one_unreadable_host_and_no_leak_is_bad_input(tmp_path):
    out = cli("check", _two_host_session(tmp_path, "tf_fixed"))
    assert out.returncode == 2
    assert out.stdout.split()[0] == "inconclusive"  # one host could not be read
    assert "b.xplane.pb" in out.stderr


def test_report_text_gives_the_step_source_and_the_forecast():
    out = cli("report", str(demo_xplane("tf_leak")))
    assert out.returncode == 0
    assert " host vm: 25 steps from step_num markers\n" in out.stdout
    assert f"Leak {TF_CPU} +512 KiB per step from Mul [128,1024] output" in out.stdout
    forecast = next(line.strip() for line in out.stdout.splitlines() if "still free of" in line)
    # TensorFlow's CPU BFC allocator reports a 64 GiB limit: the forecast runs against the smaller of it and the
    # memory of this machine, which the profile does not record.
    machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    whose = "this machine's memory" if machine < 64 << 30 else "its allocator's limit (64.0 GiB)"
    assert forecast.startswith("At +512 KiB/step the ") and f" still free of {whose}" in forecast


def test_report_text_without_step_information_speaks_of_windows(tmp_path):
    from tb_leakfinder.testing.xspace_builder import write_session
    from tests.support.training_loops import KIB, Loop

    loop = Loop("none", steps=30)
    write_session(tmp_path, "run", "s1", {"host0": loop.run(lambda step, t: loop.alloc(t, 64 * KIB, "Concat", "[16,1024]"))})
    out = cli("report", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert " host host0: 10 equal time windows of 299 ms, no step information\n" in out.stdout
    assert "per window from Concat [16,1024] output" in out.stdout and "KiB/window" in out.stdout
    assert "/step" not in out.stdout


def test_check_into_a_closed_pipe_prints_no_traceback():
    """`tb-leakfinder check ... | head -0`: the reader is gone before the first line."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tb_leakfinder.views.cli", "check", str(DEMO_LOGS)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 1, done.stderr  # the demo logdir holds a leak
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_the_script_ends_its_process_after_the_atexit_functions_with_the_same_output(capsys):
    """Run as the script, `main()` ends the process itself (no interpreter teardown): what `atexit` holds still runs,
    and the output and status are those `main(argv)` gives in-process."""
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
        "from tb_leakfinder.views.cli import main\n"
        "sys.exit(main())\n"
    )
    args = ["report", "--json", "--no-cache", str(DEMO_LOGS)]
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == main(args) == EXIT_OK, done.stderr
    assert done.stdout == capsys.readouterr().out
    assert done.stderr.endswith("atexit ran\n"), done.stderr


ACCURACY = ROOT / "benchmarks" / "accuracy" / "captures"


@pytest.mark.parametrize(
    ("case", "words"),
    [
        (
            "late_onset",
            [
                "Leak in TensorFlow's CPU allocator (bfc_cpu_allocator_for_gpu): +128 KiB per step from Mul [128,256] output from step 20 on, 20 of 40 steps never freed"  # noqa: E501 - the verdict's sentence, whole
            ],
        ),
        (
            "regrown",
            [
                "Leak in TensorFlow's CPU allocator (bfc_cpu_allocator_for_gpu): +256 KiB per step from one buffer regrown each step by ConcatV2, now [10240,256] (40 steps"  # noqa: E501 - the verdict's sentence, whole
            ],
        ),
        ("dynamic_shapes", ["from Tanh [32,*] output, 20 shapes, 40 of 40 steps never freed"]),
        ("several_families", ["; 2 families grow, +192 KiB per step in all"]),
        ("regrown_kv_cache_per_layer", ["+128 KiB per step from 4 buffers regrown each step by ConcatV2, now [1280,256]"]),
    ],
)
def test_report_text_names_the_family_and_its_onset(case, words):
    """Real TF 2.21 CPU captures of the accuracy benchmark (benchmarks/accuracy/record.py)."""
    out = cli("report", str(ACCURACY / case))
    assert out.returncode == 0, out.stderr
    for w in words:
        assert w in out.stdout
    header = next(line for line in out.stdout.splitlines() if line.strip().startswith("kind "))
    assert header.split() == ["kind", "family", "dtype", "count", "bytes", "steps", "onset", "growth", "score", "where"]


def test_report_csv_carries_the_family_and_the_onset(tmp_path):
    out = cli("report", str(ACCURACY / "late_onset"), "--csv", str(tmp_path / "csv"))
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "csv" / "families.csv", newline="", encoding="utf-8") as f:
        (top, *_) = list(csv.DictReader(f))
    assert (top["label"], top["kind"], top["onset_step"], top["num_shapes"], top["regrown"]) == (
        "Mul [128,256] output",
        "growing",
        "20",
        "1",
        "false",
    )


def test_diff_markdown_names_the_new_family_and_its_onset(tmp_path):
    """A clean loop (A) against the same loop keeping one Mul output per step from step 20 on (B)."""
    summary = tmp_path / "diff.md"
    out = cli(
        "diff", str(ACCURACY), str(ACCURACY), "--run-a", "steady_temporaries", "--run-b", "late_onset", "--markdown", str(summary)
    )
    assert out.returncode == 1, out.stderr  # a regression
    text = summary.read_text(encoding="utf-8")
    assert "| status | family | dtype | A | B | A per step | B per step | B grows from |" in text
    row = next(line for line in text.splitlines() if "`Mul [128,256] output`" in line)
    assert row.startswith("| new |") and row.endswith("| step 20 |")
    assert "new growing family Mul [128,256] output (+128 KiB per step from step 20 on)" in text


def test_diff_markdown_leads_with_the_run_that_ran_out_of_memory(tmp_path):
    """helper_job's snapshot after the run (A) against the one at its out-of-memory error (B): B ran out of
    memory, never "no new leak"."""
    (tmp_path / "job").mkdir()
    helper_job("2.0", out_of_memory=False).write(tmp_path / "job" / "after_run.pickle")
    helper_job("2.0").write(tmp_path / "job" / "oom_snapshot.pickle")
    summary = tmp_path / "diff.md"
    logdir = str(tmp_path)
    runs = ["--run-a", "job/after_run", "--run-b", "job/oom_snapshot"]
    assert main(["diff", logdir, logdir, *runs, "--markdown", str(summary)]) == 0
    text = summary.read_text(encoding="utf-8")
    assert "**❌ B ran out of memory:** At the out-of-memory error 3.0 GiB of 3.1 GiB was held by: flex_opt.py:171" in text
    assert "no new leak" not in text and "A ran out of memory" not in text


def _exports(logdir: str, out, run_cli) -> None:
    """`report` and `diff` with every export, over a logdir whose names are those of tests/support/names.py."""
    for command in (["report", logdir], ["diff", logdir, logdir, "--markdown", str(out / "diff.md")]):
        code, stderr = run_cli([*command, "--html", str(out / f"{command[0]}.html"), "--csv", str(out / command[0])])
        assert code in (0, 1) and "Traceback" not in stderr, stderr
        assert (out / f"{command[0]}.html").stat().st_size > 0


def _expect_names(names, out) -> None:
    with open(out / "report" / "buffers.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert {tuple(row[:3]) for row in rows[1:]} == {(names.run, names.host, names.allocator)}
    with open(out / "report" / "static_buffers.csv", encoding="utf-8", newline="") as f:
        assert {row[2] for row in list(csv.reader(f))[1:]} == {names.module}
    page = (out / "report.html").read_text(encoding="utf-8")
    for name in (names.run, names.host, names.allocator, names.module):
        assert html.script_json(name)[1:-1] in page


def test_discovered_names_of_any_length_or_bytes_export_from_the_real_cli(tmp_path):
    """--html and --csv of a run 1,500 characters deep, a 245-character host, allocator and module of 5,000 with NUL."""
    names = local_logdir(str(tmp_path / "logs"))

    def run_cli(args: list[str]) -> tuple[int, str]:
        done = cli(*args)
        return done.returncode, done.stderr

    _exports(names.logdir, tmp_path, run_cli)
    _expect_names(names, tmp_path)


def test_discovered_names_with_nul_export_from_a_remote_logdir(tmp_path, capsys):
    """The same on memory:// (in this process: it is the process's own filesystem), every name 5,000 long with NUL."""
    names = memory_logdir("cli_names")
    try:

        def run_cli(args: list[str]) -> tuple[int, str]:
            code = main(args)
            return code, capsys.readouterr().err

        _exports(names.logdir, tmp_path, run_cli)
        _expect_names(names, tmp_path)
    finally:
        remove_memory_logdir("cli_names")


# Raw control characters a terminal would act on; the newlines the renderings write themselves are allowed.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def test_text_and_markdown_show_the_profiles_control_characters_escaped(tmp_path):
    """Allocator, module and op names carry NUL and ESC sequences that would retitle and clear the terminal."""
    names = local_logdir(str(tmp_path / "logs"))
    markdown = tmp_path / "diff.md"
    missing = str(tmp_path / f"gone{TERMINAL}" / "x.xplane.pb")
    for args in (
        ["report", names.logdir],
        ["check", names.logdir],
        ["diff", names.logdir, names.logdir, "--markdown", str(markdown)],
    ):
        out = cli(*args)
        assert out.returncode in (0, 1), out.stderr
        assert not RAW_CONTROL.search(out.stdout + out.stderr), args
        # The run folder's and the profile's names, as \x1b (the Markdown cells double each backslash).
        assert "\\x1b]0;pwned\\x07" in out.stdout.replace("\\\\", "\\")
        if args[0] != "check":  # `check` names runs and their reason, not allocators
            assert "\\x00" in out.stdout  # the allocator's NUL
    assert not RAW_CONTROL.search(markdown.read_text(encoding="utf-8"))
    out = cli("report", missing)
    assert out.returncode == 2 and visible(missing) in out.stderr and not RAW_CONTROL.search(out.stderr)


def test_visible_escapes_c0_del_and_c1_and_nothing_else():
    assert visible("a\x00b\x1b[2J\x7f\x85\x9f\n\t…é€") == "a\\x00b\\x1b[2J\\x7f\\x85\\x9f\\x0a\\x09…é€"


@pytest.mark.parametrize("profile_format", FORMATS)
def test_one_file_cut_short_hides_neither_good_run(tmp_path, capsys, profile_format):
    logdir = one_cut_short(tmp_path / "logs", profile_format)
    path, bad_file = str(logdir.path), str(logdir.bad_file)
    assert main(["report", path, "--no-cache"]) == EXIT_OK
    text = capsys.readouterr().out
    for run in logdir.good:
        assert f"run {run}: " in text and "Not analysed" not in text.split(f"run {run}: ")[1].split("\nrun ")[0]
    assert f"run {logdir.bad}: inconclusive" in text
    listed = text.split("could not read 1 file:\n")[1].splitlines()[0]
    assert listed.startswith(f"  {logdir.bad} host {logdir.bad_host}: {bad_file}: ")

    assert main(["report", path, "--no-cache", "--json"]) == EXIT_OK
    body = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in body["runs"]] == sorted([*logdir.good, logdir.bad])
    (error,) = body["errors"]
    assert conforms(error, wire.ERROR_SHAPE)
    assert (error["run"], error["host"], error["file"]) == (logdir.bad, logdir.bad_host, bad_file)
    assert error["reason"] and bad_file not in error["reason"]
    verdicts = {r["run"]: r["verdict"] for r in body["runs"]}
    if profile_format != "pprof":  # a device memory profile is one moment: its verdict waits for the history
        assert [verdicts[run] for run in logdir.good] == ["no_leak", "leak"]

    assert main(["check", path, "--no-cache"]) == EXIT_BAD_INPUT
    out = capsys.readouterr()
    assert sorted(line.split()[1].rstrip(":") for line in out.out.splitlines()) == sorted([*logdir.good, logdir.bad])
    assert out.err.count("\n") == 1 and bad_file in out.err and error["reason"] in out.err


def test_a_dangling_and_a_looping_trace_link_are_their_hosts_errors_not_the_runs(tmp_path, capsys):
    good, gone, loop = with_bad_links(tmp_path / "logs")
    assert main(["check", str(good.parent), "--no-cache"]) == EXIT_BAD_INPUT
    out = capsys.readouterr()
    assert out.out.split()[:2] == ["leak", "job:"] and "aten::mm" in out.out
    assert str(gone) in out.err and str(loop) in out.err and "Traceback" not in out.err
    assert main(["report", str(tmp_path / "logs"), "--no-cache", "--json"]) == EXIT_OK
    body = json.loads(capsys.readouterr().out)
    assert [(e["host"], e["file"]) for e in body["errors"]] == [("gone", str(gone)), ("loop", str(loop))]
    hosts = {h["host"]: h["verdict"] for h in body["runs"][0]["hosts"]}
    assert hosts == {"worker0_7": "leak", "gone": "inconclusive", "loop": "inconclusive"}


def test_a_logdir_none_of_whose_files_can_be_read_is_bad_input(tmp_path, capsys):
    logdir = one_cut_short(tmp_path / "logs", "torch_snapshot")
    for run in ("clean", "leak"):
        (logdir.path / run / "memory_snapshot.pickle").write_bytes(logdir.bad_file.read_bytes())
    for command in ("report", "check"):
        assert main([command, str(logdir.path), "--no-cache"]) == EXIT_BAD_INPUT
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1
        assert "none of the 3 profile files of these 3 runs can be read" in out.err and str(logdir.bad_file) in out.err


def _tpu_logdir(tmp_path, **kwargs):
    builder, planted = tpu_inference(**kwargs)
    write_session(tmp_path, "tpu", "session", {builder.hostname: builder})
    return tmp_path / "tpu", planted


def test_report_text_on_a_tpu_host_lists_its_chips_in_order_with_bare_shapes_and_each_output_once(tmp_path):
    logdir, planted = _tpu_logdir(tmp_path, chips=4)
    out = cli("report", str(logdir))
    assert out.returncode == 0, out.stderr
    chips = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("  allocator ")]
    assert chips == ["TPU:0", "TPU:1", "TPU:2", "TPU:3"]
    assert planted["output_shape"] in out.stdout and "{3,2,1,0:T(8,128)}" not in out.stdout
    # Each chip's peak row: the output once, not twice in 10 GiB.
    # Named by its program buffer, the row shows the shape's dimensions and its dtype apart.
    dtype, dims = planted["output_shape"].split("[", 1)
    rows = re.findall(rf"{re.escape('[' + dims)}\s+{dtype}\s+(\d+)\s+(\d+ \w+)\s", out.stdout, re.M)
    assert rows == [("1", "5 GiB")] * 4


def test_report_labels_cut_a_long_program_id(tmp_path):
    long_ids = (8_213_770_315_642_958_113, 8_213_770_315_642_951_207)
    builder, planted = jax_training(12, program_ids=long_ids)
    write_session(tmp_path, "gpu", "session", {builder.hostname: builder})
    out = cli("report", str(tmp_path / "gpu"))
    assert out.returncode == 0, out.stderr
    assert f"{planted['leaked_buffer']} of jit_train_step(…8113)" in out.stdout
    assert str(long_ids[0]) not in out.stdout
    report = json.loads(cli("report", str(tmp_path / "gpu"), "--json").stdout)
    (allocator,) = [a for a in report["runs"][0]["hosts"][0]["allocators"] if a["allocator"] == "GPU_0_bfc"]
    # The site keeps the program's key whole: it is what the static view is asked for.
    assert allocator["families"][0]["site"]["program"] == f"jit_train_step({long_ids[0]})"
    assert "(…8113)" in allocator["families"][0]["label"]


def test_a_repeated_warning_is_printed_once_with_its_count(tmp_path):
    logdir, _ = _tpu_logdir(tmp_path, chips=2, calls=2)
    report = analyze_logdir(str(logdir))
    host = report["runs"][0]["hosts"][0]
    # What a reader gives once per file or module can repeat word for word in one host.
    host["warnings"] = ["a warning", "another", "a warning", *["a warning"] * 10]
    lines = render_report(report).splitlines()
    assert "  warning: a warning (\u00d712)" in lines and "  warning: another" in lines
    assert sum("a warning" in line for line in lines) == 1
    assert lines.index("  warning: a warning (\u00d712)") < lines.index("  warning: another")


@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "-1", "lots"])
def test_a_cache_size_that_is_no_finite_number_in_range_is_a_usage_error(tmp_path, value):
    out = cli("report", str(tmp_path), "--cache-gb", value)
    assert out.returncode == 2
    why = f"argument --cache-gb: a number of GiB from 0 to 1048576, not {value!r}"
    assert out.stderr.splitlines()[-1] == f"tb-leakfinder report: error: {why}"
    assert "Traceback" not in out.stderr


TENSORBOARD_SIZES = [("--leakfinder_cache_dir_gb", "inf"), ("--leakfinder_cache_dir_gb", "nan"), ("--leakfinder_cache_mb", "-5")]


@pytest.mark.parametrize(("flag", "value"), TENSORBOARD_SIZES)
def test_tensorboards_size_flags_are_refused_when_parsed(flag, value, capsys):
    parser = argparse.ArgumentParser(prog="tensorboard")
    LeakfinderLoader().define_flags(parser)
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args([flag, value])
    assert exit_.value.code == 2
    assert f"argument {flag}: a number of " in capsys.readouterr().err


# What only some inputs reach: compiled programs (the static view), and a standalone page, which gathers every answer
# its views may ask for (each run's overview, each allocator's timeline, each TensorBoard run's history).
STATIC_VIEW = ["tb_leakfinder.analyses.heap_simulation", "tb_leakfinder.analyses.static_buffers"]
PAGE = ["tb_leakfinder.analyses.pod_ranking", "tb_leakfinder.analyses.timeline"]
HISTORY = [  # a history's points name the process's memory too
    "tb_leakfinder.analyses.history",
    "tb_leakfinder.analyses.history_points",
    "tb_leakfinder.model.history",
    "tb_leakfinder.analyses.process_memory",
]
_MODULES_AFTER = """
import contextlib, io, json, sys
from tb_leakfinder.views import cli

with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    cli.main(sys.argv[1:])
heavy = (
    "numpy", "tensorboard", "werkzeug", "tensorflow", "torch", "jax", "ray", "tqdm", "tb_leakfinder.analyses.diff",
    "tb_leakfinder.engine.precompute", "tb_leakfinder.read.formats.torch_snapshot.reader", "tb_leakfinder.capture",
    "tb_leakfinder.capture.torch_profiler", "tb_leakfinder.store.disk_cache", "tb_leakfinder.views.markdown",
    "tb_leakfinder.read.formats.torch_snapshot.unpickle", "tb_leakfinder.read.formats.torch_trace.stream",
    "tb_leakfinder.analyses.static_buffers", "tb_leakfinder.analyses.heap_simulation", "tb_leakfinder.analyses.history",
    "tb_leakfinder.model.history", "tb_leakfinder.analyses.history_points", "tb_leakfinder.analyses.holders",
    "tb_leakfinder.analyses.process_memory", "tb_leakfinder.analyses.pod_ranking", "tb_leakfinder.analyses.timeline",
)
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


@pytest.mark.parametrize(
    "argv, loaded",
    [
        (["--help"], []),
        (["report", "--help"], []),
        (["check"], []),  # a usage error
        (["report", "--json", "--no-cache", str(DEMO_LOGS / "tf_leak" / "plugins" / "profile")], ["numpy"]),
        (["report", "--no-cache", str(DEMO_LOGS / "tf_leak")], ["numpy"]),
        (["report", "--json", "--no-cache", str(DEMO_LOGS)], ["numpy", *STATIC_VIEW]),  # JAX's compiled programs
        (["check", "--no-cache", str(DEMO_LOGS)], ["numpy", *STATIC_VIEW]),
        (["report", "--no-cache", str(DEMO_LOGS / "tf_leak"), "--html", "OUT/page.html"], ["numpy", *PAGE]),
        (["report", "--no-cache", str(DEMO_LOGS / "tf_leak"), "--csv", "OUT/tables"], ["numpy"]),
        (
            ["diff", "--no-cache", str(DEMO_LOGS / "tf_fixed"), str(DEMO_LOGS / "tf_leak"), "--html", "OUT/diff.html"],
            # Its text is Markdown; the diff's own types name compiled programs.
            ["numpy", "tb_leakfinder.analyses.diff", "tb_leakfinder.views.markdown", *STATIC_VIEW, *PAGE, *HISTORY],
        ),
    ],
)
def test_a_command_imports_only_what_it_needs(argv, loaded, tmp_path):
    """`--help` and a usage error load neither numpy, TensorBoard, a framework nor the capture helper; a report
    loads numpy, not the diff engine nor Ray's precompute, nor the reader of a format it does not read, nor the
    disk cache it was told not to use, nor the Markdown it was not asked for, nor the progress bar when stderr is no
    terminal, nor an analysis its input does not reach: the static view without compiled programs (TensorFlow's
    demo runs have none), the history and its points without several captures of a run, holders and the process's
    memory without a companion file, a pod's ranking without several hosts; nor the timeline it does not draw. Its
    HTML and CSV files come from the queries, without TensorBoard or its web server."""
    argv = [arg.replace("OUT", str(tmp_path)) for arg in argv]
    out = subprocess.run([sys.executable, "-c", _MODULES_AFTER, *argv], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(out.stdout) == sorted(loaded)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) == ("--html" in argv) + 5 * ("--csv" in argv) and all(p.stat().st_size for p in written)


def test_allocator_keeps_the_process_verdict_beside_it_and_check_fails_on_it(tmp_path):
    """`--allocator` judges that allocator with the process's memory beside it, as the whole host is judged: a process
    growing outside a clean allocator still leaks (it once dropped the process's verdict)."""
    from tb_leakfinder.testing.recordings_builder import companion, write_companion

    shutil.copytree(DEMO_LOGS / "tf_fixed", tmp_path / "tf_fixed")
    (profile,) = (tmp_path / "tf_fixed").glob("plugins/profile/*/*.xplane.pb")
    steps = [s["step"] for s in analyze_logdir(str(profile), cache=False)["runs"][0]["hosts"][0]["steps"]]
    grows = 8 << 20  # per step, in the training process, far past the process-memory threshold
    samples = [
        {"step": n, "time_ns": 10**18 + i, "main": {"pid": 7, "rss": (300 << 20) + i * grows, "uss": None, "pss": None}}
        for i, n in enumerate(steps)
    ]
    write_companion(
        profile, companion(process_memory={"status": "complete", "warning": "", "source": "psutil", "samples": samples})
    )
    whole = analyze_logdir(str(tmp_path), cache=False)["runs"][0]["hosts"][0]
    (allocator,) = whole["allocators"]
    assert allocator["verdict"] == "no_leak" and whole["process_memory"]["verdict"] == "leak"
    assert whole["verdict"] == "leak" and whole["reason"].endswith(whole["process_memory"]["reason"])
    named = analyze_logdir(str(tmp_path), cache=False, allocator=allocator["memory_id"])["runs"][0]["hosts"][0]
    assert (named["verdict"], named["reason"]) == (whole["verdict"], whole["reason"])
    assert named["default_allocator"]["rule"] == "named" and named["default_allocator"]["memory_id"] == allocator["memory_id"]
    assert cli("check", str(tmp_path), "--allocator", allocator["memory_id"], "--no-cache").returncode == 1


@pytest.mark.skipif(scan.compiled_scanner() is None, reason="the compiled scanner is not built")
def test_a_report_reads_its_host_ahead_unless_the_disk_cache_holds_it(tmp_path, monkeypatch, capsys):
    """A cold report begins reading its host's file before numpy loads (read/read_ahead.py) and answers as one
    that does not; with the host's entry in the disk cache it reads no file at all."""
    path = str(demo_xplane("tf_leak"))
    scanned_on = record_scans(monkeypatch)
    answers = []
    for ahead in (True, False):
        with monkeypatch.context() as m:
            if not ahead:
                m.setattr(registry, "read_ahead", lambda *args: None)
            assert main(["report", "--json", "--no-cache", path]) == EXIT_OK
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1]
    assert scanned_on == [f"read ahead {path}", "MainThread"]

    cache = str(tmp_path / "cache")
    for _ in range(2):
        scanned_on.clear()
        assert main(["report", "--json", "--cache-dir", cache, path]) == EXIT_OK
        assert json.loads(capsys.readouterr().out) == answers[0]
    assert scanned_on == []  # the second report's host came from its entry


def test_a_report_discovers_its_runs_once_even_for_a_run_of_no_such_name(monkeypatch, capsys):
    """The runs found before numpy loads are the report's: the logdir is walked once, also when `--run` names
    none of them (the report's error then lists them)."""
    from tb_leakfinder.read import discovery

    walks: list[str] = []
    runs_for_path = discovery.runs_for_path
    monkeypatch.setattr(discovery, "runs_for_path", lambda p: walks.append(p) or runs_for_path(p))
    assert main(["report", "--no-cache", str(DEMO_LOGS / "tf_leak")]) == EXIT_OK
    assert main(["report", "--no-cache", str(DEMO_LOGS / "tf_leak"), "--run", "nope"]) == EXIT_BAD_INPUT
    assert walks == [str(DEMO_LOGS / "tf_leak")] * 2
    assert "nope" in capsys.readouterr().err
