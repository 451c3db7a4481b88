"""views/html.py and views/standalone_page.py: `tb-leakfinder report/diff --html FILE` writes one self-contained page.

The page itself is opened from file:// in Chromium by frontend/tests/standalone.test.mjs.
"""

from __future__ import annotations

import base64
import json
import math
import pathlib
import re

import pytest

from tb_leakfinder.read.formats.xplane import reader as xplane_reader
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
from tb_leakfinder.views import cli, html
from tb_leakfinder.views.standalone_page import answer_key
from tests.support.cli_process import run_cli
from tests.support.demo import ROOT

DEMO = ROOT / "demo_logs"
EVIL_OP = "</script><script>alert(1)</script><!--<img src=x onerror=alert(2)>"


def page_parts(path: pathlib.Path) -> tuple[str, dict, bytes]:
    text = path.read_text(encoding="utf-8")
    data = re.search(rf'<script type="application/json" id="{html.DATA_ID}">(.*?)</script>', text, re.S)
    bundle = re.search(rf'<script type="text/plain" id="{html.BUNDLE_ID}">(.*?)</script>', text, re.S)
    assert data and bundle
    return text, json.loads(data.group(1)), base64.b64decode(bundle.group(1))


def test_report_html_inlines_the_bundle_and_every_answer_of_the_run(tmp_path):
    out = tmp_path / "report.html"
    assert cli.main(["report", str(DEMO / "tf_leak"), "--html", str(out)]) == cli.EXIT_OK
    text, data, code = page_parts(out)
    assert code == html.bundle()  # the tab's own bundle, as the plugin serves it
    assert "connect-src 'none'" in text and "default-src 'none'" in text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing loaded from anywhere
    answers = data["answers"]
    (run,) = answers["runs"]["runs"]
    report = answers[answer_key("report", {"run": run["run"]})]
    (host,) = report["runs"][0]["hosts"]
    assert report["runs"][0]["verdict"] == "leak"
    # The host's report is the run's: the page names one answer for both.
    assert data["aliases"][answer_key("report", {"run": run["run"], "host": host["host"]})] == answer_key(
        "report", {"run": run["run"]}
    )
    assert answers[answer_key("overview", {"run": run["run"]})]["num_hosts"] == 1
    (allocator,) = host["allocators"]
    where = {"run": run["run"], "host": host["host"], "allocator": allocator["allocator"]}
    timeline = answers[answer_key("timeline", where)]
    assert timeline["peak"]["bytes"] == allocator["peak_bytes_in_use"]
    for family in allocator["families"]:
        assert answers[answer_key("timeline", {**where, "family": family["family"]})]["family"] == family["family"]
    buffers = answers[answer_key("buffers", where)]
    assert buffers["total"] == len(buffers["buffers"]) >= allocator["num_allocations"]
    # The page refuses a family the allocator does not have, as the route does (inline.ts's queryBuffers).
    assert buffers["families"] == len(allocator["families"]) > 0
    assert data["view_hash"] == f"p.leakfinder.run={run['run']}"
    # A line above the tab says this is a snapshot, not TensorBoard.
    assert re.search(rf"<header role=\"note\"[^>]*><strong>tb-leakfinder: {run['run']}</strong> · a standalone report", text)


def test_static_view_of_every_program_is_inlined(tmp_path):
    out = tmp_path / "jax.html"
    assert cli.main(["report", str(DEMO / "jax_liveout"), "--html", str(out)]) == cli.EXIT_OK
    _, data, _ = page_parts(out)
    answers = data["answers"]
    (run,) = answers["runs"]["runs"]
    (host,) = answers[answer_key("report", {"run": run["run"]})]["runs"][0]["hosts"]
    assert len(host["modules"]) > 1
    for module in host["modules"]:
        args = {"run": run["run"], "host": host["host"], "module": module["name"]}
        detail = answers[answer_key("module", {**args, "memory_space": module.get("memory_space") or None})]
        assert detail["name"] == module["name"]


def test_profile_strings_cannot_break_out_of_the_page(tmp_path):
    builder, _ = synthesize_training(2000, 10, ("GPU_0_bfc",), leak_op=EVIL_OP, hostname="evil")
    write_session(tmp_path / "logs", "evil", "2026_11_30_00_00_00", {"evil": builder})
    out = tmp_path / "evil.html"
    assert cli.main(["report", str(tmp_path / "logs"), "--html", str(out)]) == cli.EXIT_OK
    text, data, _ = page_parts(out)
    # Three <script> elements only, each closed where the page closes it.
    assert text.count("<script") == 3 and text.count("</script>") == 3
    assert "<img" not in text and "<!--" not in text
    (run,) = data["answers"]["runs"]["runs"]
    report = data["answers"][answer_key("report", {"run": run["run"]})]
    (allocator,) = report["runs"][0]["hosts"][0]["allocators"]
    assert EVIL_OP in [g["op"] for g in allocator["families"]]


def test_an_unreadable_host_keeps_its_error_in_the_page(tmp_path):
    hosts = {name: synthesize_training(2000, 10, ("GPU_0_bfc",), hostname=name)[0] for name in ("good", "bad")}
    _, bad = write_session(tmp_path / "logs", "pod", "2026_11_30_00_00_00", hosts)
    pathlib.Path(bad).write_bytes(b"\x0a\xff\xff\xff not an XSpace")
    out = tmp_path / "pod.html"
    assert cli.main(["report", str(tmp_path / "logs"), "--html", str(out)]) == cli.EXIT_OK
    _, data, _ = page_parts(out)
    (run,) = data["answers"]["runs"]["runs"]
    refused = data["errors"][answer_key("report", {"run": run["run"], "host": "bad"})]
    assert refused["status"] == 422 and "bad.xplane.pb" in refused["error"]
    assert [(e["host"], e["file"]) for e in run["errors"]] == [("bad", bad)]  # the tab's run list marks it
    (good,) = data["answers"][answer_key("report", {"run": run["run"], "host": "good"})]["runs"][0]["hosts"]
    assert good["verdict"] == "leak"


def test_diff_html_holds_both_runs_and_their_comparison(tmp_path, capsys):
    out = tmp_path / "diff.html"
    code = cli.main(["diff", str(DEMO / "tf_fixed"), str(DEMO / "tf_leak"), "--html", str(out), "--json"])
    assert code == cli.EXIT_LEAK
    comparison = json.loads(capsys.readouterr().out)
    _, data, _ = page_parts(out)
    answers = data["answers"]
    assert [r["run"] for r in answers["runs"]["runs"]] == [comparison["run_a"], comparison["run_b"]]
    assert answers[answer_key("compare", {"run_a": comparison["run_a"], "run_b": comparison["run_b"]})] == comparison
    swapped = answers[answer_key("compare", {"run_a": comparison["run_b"], "run_b": comparison["run_a"]})]
    assert swapped["regression"] is False and swapped["run_a"] == comparison["run_b"]
    for run in (comparison["run_a"], comparison["run_b"]):
        assert answer_key("report", {"run": run}) in answers
    assert f"p.leakfinder.compare={comparison['run_b']}" in data["view_hash"]


def test_diff_of_a_run_with_itself_tells_the_sides_apart(tmp_path):
    out = tmp_path / "same.html"
    assert cli.main(["diff", str(DEMO / "tf_leak"), str(DEMO / "tf_leak"), "--html", str(out)]) == cli.EXIT_OK
    _, data, _ = page_parts(out)
    names = [r["run"] for r in data["answers"]["runs"]["runs"]]
    assert len(set(names)) == 2 and names[0].endswith(" (A)") and names[1].endswith(" (B)")


def test_a_logdir_of_several_runs_needs_run(tmp_path, capsys):
    assert cli.main(["report", str(DEMO), "--html", str(tmp_path / "x.html")]) == cli.EXIT_BAD_INPUT
    assert "an HTML report shows one: pick it with --run" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize(
    ("state", "expected"),
    [({"run": "a/b c"}, "p.leakfinder.run=a%2Fb%20c"), ({"run": "x", "compare": ""}, "p.leakfinder.run=x")],
)
def test_view_hash_is_encoded_as_the_tab_reads_it(state, expected):
    assert html.view_hash(state) == expected


def test_non_finite_numbers_are_inlined_as_the_route_sends_them():
    from tensorboard.backend import json_util  # what the route's answer goes through

    data = {"a": [math.nan, math.inf, -math.inf, 1.5, (2, -math.inf)], "b": {"c": math.nan, "d": None, "e": "x"}}
    assert json.loads(html.script_json(data)) == json.loads(json.dumps(json_util.Cleanse(data)))


def test_a_failed_write_leaves_the_previous_page_whole(tmp_path):
    """A page cut short by a file size limit (a disk that fills up) is never renamed over the one there."""
    out = tmp_path / "report.html"
    assert run_cli("report", str(DEMO / "tf_leak"), "--html", str(out), "--no-cache").returncode == 0
    before = out.read_bytes()
    done = run_cli("report", str(DEMO / "tf_fixed"), "--html", str(out), "--no-cache", file_size_limit=len(before) // 2)
    assert done.returncode == cli.EXIT_BAD_INPUT and "cannot write the HTML report (File too large)" in done.stderr, done.stderr
    assert out.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_diff_html_takes_the_analyses_from_the_disk_cache(tmp_path, monkeypatch):
    """As `report --html` does: each profile is decoded once, by the comparison, and none on a second run."""
    decoded: list[str] = []
    real = xplane_reader.read_host
    monkeypatch.setattr(xplane_reader, "read_host", lambda path, host: decoded.append(path) or real(path, host))
    args = ["diff", str(DEMO / "tf_fixed"), str(DEMO / "tf_leak"), "--cache-dir", str(tmp_path / "cache")]
    assert cli.main([*args, "--html", str(tmp_path / "cold.html")]) == cli.EXIT_LEAK
    assert sorted(pathlib.Path(p).parts[-5] for p in decoded) == ["tf_fixed", "tf_leak"]
    decoded.clear()
    assert cli.main([*args, "--html", str(tmp_path / "warm.html")]) == cli.EXIT_LEAK
    assert decoded == []
    assert page_parts(tmp_path / "warm.html")[1]["answers"] == page_parts(tmp_path / "cold.html")[1]["answers"]


def test_a_page_over_its_budget_keeps_the_overview_and_the_worst_hosts(write_pod, tmp_path):
    write_pod(tmp_path / "logs", 6)
    whole = tmp_path / "whole.html"
    assert cli.main(["report", str(tmp_path / "logs"), "--html", str(whole)]) == cli.EXIT_OK
    budget_mb = round(whole.stat().st_size * 0.45 / 1e6, 3)
    out = tmp_path / "budget.html"
    assert cli.main(["report", str(tmp_path / "logs"), "--html", str(out), "--html-max-mb", str(budget_mb)]) == cli.EXIT_OK
    assert whole.stat().st_size * 0.4 < out.stat().st_size <= budget_mb * 1e6
    text, data, _ = page_parts(out)
    (run,) = data["answers"]["runs"]["runs"]
    overview = data["answers"][answer_key("overview", {"run": run["run"]})]
    worst = [row["host"] for row in overview["rows"]]
    assert len(worst) == 6 and set(worst[:3]) == {"host1", "host3", "host5"}  # the leaking hosts first
    kept = [h for h in worst if answer_key("report", {"run": run["run"], "host": h}) in data["answers"]]
    left = [h for h in worst if answer_key("report", {"run": run["run"], "host": h}) in data["errors"]]
    assert kept == worst[: len(kept)] and left == worst[len(kept) :] and kept and left
    for host in left:
        refused = data["errors"][answer_key("report", {"run": run["run"], "host": host})]
        assert refused["status"] == 413 and "--html-max-mb" in refused["error"] and host in refused["error"]
    (note,) = [n for n in data["notes"] if "left out" in n]
    hosts = "1 host" if len(left) == 1 else f"{len(left)} hosts"
    assert note == f"{hosts} left out to keep the page under {budget_mb:g} MB (--html-max-mb): {', '.join(left)}"
    assert note in text  # above the tab too (it holds nothing HTML escapes)
    # The last host kept may keep only its largest buffers; those of the others are whole.
    for host in kept[:-1]:
        where = {"run": run["run"], "host": host, "allocator": "GPU_0_bfc"}
        assert data["answers"][answer_key("buffers", where)]["total"] > 2_000


def test_a_budget_too_small_for_one_host_refuses_and_names_the_flag(write_pod, tmp_path, capsys):
    write_pod(tmp_path / "logs", hosts=2)
    out = tmp_path / "small.html"
    for budget in ("0.3", "0.05"):  # room for the reports but not one host's timelines; not even for the bundle
        assert cli.main(["report", str(tmp_path / "logs"), "--html", str(out), "--html-max-mb", budget]) == cli.EXIT_BAD_INPUT
        error = capsys.readouterr().err
        assert f"over its budget of {budget} MB (--html-max-mb); raise --html-max-mb" in error and "Traceback" not in error
        assert not out.exists()
    assert "host 'host1'" in cli_error(tmp_path, "0.3") and "reports and overviews alone" in cli_error(tmp_path, "0.05")


def cli_error(tmp_path: pathlib.Path, budget: str) -> str:
    return run_cli("report", str(tmp_path / "logs"), "--html", str(tmp_path / "x.html"), "--html-max-mb", budget).stderr


@pytest.mark.parametrize("budget", ["0", "-5", "nan", "lots"])
def test_the_budget_is_a_positive_number(tmp_path, budget):
    done = run_cli("report", str(DEMO / "tf_leak"), "--html", str(tmp_path / "x.html"), "--html-max-mb", budget)
    assert done.returncode == 2 and "--html-max-mb" in done.stderr and "Traceback" not in done.stderr
    assert cli._parser().parse_args(["report", "x"]).html_max_mb == 100


def test_a_diff_over_its_budget_keeps_both_runs_comparison_and_their_worst_hosts_in_turn(write_pod, tmp_path):
    write_pod(tmp_path / "logs", hosts=4)
    logs, out = str(tmp_path / "logs"), tmp_path / "diff.html"
    assert cli.main(["diff", logs, logs, "--html", str(out), "--html-max-mb", "2"]) in (cli.EXIT_OK, cli.EXIT_LEAK)
    _, data, _ = page_parts(out)
    assert out.stat().st_size <= 2e6
    run_a, run_b = (r["run"] for r in data["answers"]["runs"]["runs"])
    assert answer_key("compare", {"run_a": run_a, "run_b": run_b}) in data["answers"]
    kept = {
        run: [k for k in data["answers"] if k.startswith("report\x00host=") and k.endswith(f"run={run}")]
        for run in (run_a, run_b)
    }
    assert len(kept[run_a]) - len(kept[run_b]) in (0, 1) and kept[run_b]  # A's worst, B's worst, A's next...
    assert any("left out" in note for note in data["notes"])
