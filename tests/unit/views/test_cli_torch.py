"""The CLI on real PyTorch 2.13 CPU captures: the accuracy benchmark's torch_* runs (benchmarks/accuracy/record_torch.py)."""

from __future__ import annotations

import csv
import gzip
import json
import re

from tests.support.cli_process import run_cli as cli
from tests.support.demo import DEMO_LOGS, ROOT

ACCURACY = ROOT / "benchmarks" / "accuracy" / "captures"


def recorded_line(case: str, function: str) -> str:
    """Where a function of the capture program was when the case was recorded, as the trace's with_stack names it."""
    (trace,) = (ACCURACY / case).glob("*.pt.trace.json.gz")
    names = {
        e["name"] for e in json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"] if e.get("cat") == "python_function"
    }
    (line,) = {m.group(1) for m in map(re.compile(rf".*torch_captures\.py\((\d+)\): {function}").fullmatch, names) if m}
    return f"torch_captures.py:{line} in {function}"


KEEP_LINE = recorded_line("torch_kept_every_step", "keep")
REGROW_LINE = recorded_line("torch_regrown", "regrow")


def truth(case: str) -> dict:
    return json.loads((ACCURACY / case / "truth.json").read_text(encoding="utf-8"))


def test_report_names_the_op_the_line_and_the_onset():
    out = cli("report", str(ACCURACY / "torch_late_onset"))
    assert out.returncode == 0, out.stderr
    onset = truth("torch_late_onset")["onset_step"]
    assert (
        f"Leak in PyTorch's CPU allocator: +128 KiB per step from aten::mul float[128,256] ({KEEP_LINE}) from step {onset} on"
        in out.stdout
    )
    assert "30 steps from ProfilerStep markers" in out.stdout
    assert "allocator CPU (memory id cpu): LEAK" in out.stdout


def test_report_names_the_regrown_buffer():
    out = cli("report", str(ACCURACY / "torch_regrown"))
    assert out.returncode == 0, out.stderr
    assert "Leak in PyTorch's CPU allocator: +16 KiB per step from one buffer regrown each step by aten::cat" in out.stdout
    assert REGROW_LINE in out.stdout


def test_check_exits_1_on_a_leaking_torch_run_and_0_on_the_clean_one():
    leaking = cli("check", str(ACCURACY / "torch_kept_every_step"))
    assert leaking.returncode == 1, leaking.stdout + leaking.stderr
    clean = cli("check", str(ACCURACY / "torch_clean"))
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_csv_carries_the_torch_family(tmp_path):
    out = cli("report", str(ACCURACY / "torch_late_onset"), "--csv", str(tmp_path / "csv"))
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "csv" / "families.csv", newline="", encoding="utf-8") as f:
        top = next(csv.DictReader(f))
    assert (top["kind"], top["op"], top["where"], top["onset_step"]) == ("growing", "aten::mul", KEEP_LINE, "16")


def test_html_page_of_a_torch_run(tmp_path):
    page = tmp_path / "report.html"
    out = cli("report", str(ACCURACY / "torch_kept_every_step"), "--html", str(page))
    assert out.returncode == 0, out.stderr
    text = page.read_text(encoding="utf-8")
    assert "aten::mul" in text and KEEP_LINE in text


def test_diff_of_a_clean_and_a_late_leak_names_the_new_family(tmp_path):
    summary = tmp_path / "diff.md"
    out = cli(
        "diff", str(ACCURACY), str(ACCURACY), "--run-a", "torch_clean", "--run-b", "torch_late_onset", "--markdown", str(summary)
    )
    assert out.returncode == 1, out.stderr  # a regression
    text = summary.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if f"`aten::mul float[128,256] ({KEEP_LINE})`" in line)
    assert row.startswith("| new |") and row.endswith("| step 16 |")


def test_a_logdir_mixing_xprof_and_pytorch_runs(tmp_path):
    logdir = tmp_path / "logs"
    (logdir / "torch").mkdir(parents=True)
    for case in ("torch_kept_every_step", "torch_clean"):
        (trace,) = (ACCURACY / case).glob("*.pt.trace.json.gz")
        (logdir / "torch" / case).mkdir()
        (logdir / "torch" / case / trace.name).write_bytes(trace.read_bytes())
    (logdir / "tf").symlink_to(DEMO_LOGS / "tf_leak")
    out = cli("report", str(logdir), "--json")
    assert out.returncode == 0, out.stderr
    verdicts = {run["run"]: run["verdict"] for run in json.loads(out.stdout)["runs"]}
    assert verdicts["torch/torch_kept_every_step"] == "leak"
    assert verdicts["torch/torch_clean"] == "no_leak"
    assert [v for name, v in verdicts.items() if name.startswith("tf/")] == ["leak"]
