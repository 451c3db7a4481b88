"""The CLI leads with the history of a run of several captures: its report text, and `check` with its exit code."""

from __future__ import annotations

import json
import re

from tb_leakfinder.testing.history_runs import slow_leak_run
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.pprof_builder import PprofBuilder
from tb_leakfinder.views import cli, html
from tb_leakfinder.views.standalone_page import answer_key


def test_the_text_report_leads_with_the_history_of_a_run_of_several_captures(tmp_path, capsys):
    leak = slow_leak_run(tmp_path / "logs", captures=4)
    assert cli.main(["report", str(tmp_path / "logs"), "--no-cache"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    history = out[out.index("history of job: LEAK, 4 captures") :].splitlines()
    assert history[1].startswith(" Leak: +11.7 MiB over 30 min across 4 captures, +4.0 KiB per step, from Mul [256] output")
    rows = [line for line in history if line.strip().startswith("20") and "job/" in line]
    assert [row.split()[2] for row in rows] == [f"job/{s}" for s in leak.sessions]
    assert any(line.split()[:3] == ["Mul", "[256]", "output"] and "+4 KiB/step" in line for line in history)


def test_a_comparison_page_of_two_captures_of_a_run_holds_their_history(tmp_path):
    # An HTML report shows one run; the comparison of two captures of one job holds both, and the tab's
    # History panel then asks for their history.
    leak = slow_leak_run(tmp_path / "logs", captures=3)
    out, logs = tmp_path / "page.html", str(tmp_path / "logs")
    a, b = (f"job/{s}" for s in leak.sessions[:2])
    assert cli.main(["diff", logs, logs, "--run-a", a, "--run-b", b, "--no-cache", "--html", str(out)]) in (0, 1)
    page = out.read_text(encoding="utf-8")
    data = json.loads(re.search(rf'<script type="application/json" id="{html.DATA_ID}">(.*?)</script>', page, re.S).group(1))
    history = data["answers"][answer_key("history", {"tb_run": "job"})]
    # The page's engine knows the two captures it holds: two are too few for a verdict, and it says so.
    assert (history["verdict"], history["num_captures"]) == ("inconclusive", 2) and "at least 3" in history["reason"]


def test_the_history_command_exits_1_on_a_leak_and_its_json_is_the_routes(tmp_path, capsys):
    logs = tmp_path / "logs"
    slow_leak_run(logs, "job", captures=3)
    slow_leak_run(logs, "clean", captures=3, leak_bytes_per_step=0)
    assert cli.main(["history", str(logs), "--tb-run", "job", "--no-cache", "--json"]) == cli.EXIT_LEAK
    printed = json.loads(capsys.readouterr().out)
    client, _ = make_client(str(logs), leakfinder_cache_dir=str(tmp_path / "cache"))
    assert printed == json.loads(client.get(f"{PREFIX}/history", query_string={"tb_run": "job"}).get_data())
    assert cli.main(["history", str(logs), "--tb-run", "clean", "--no-cache"]) == cli.EXIT_OK
    assert cli.main(["history", str(logs), "--tb-run", "nope", "--no-cache"]) == cli.EXIT_BAD_INPUT
    assert cli.main(["history", str(logs), "--no-cache"]) == cli.EXIT_BAD_INPUT  # two runs of several captures
    assert "choose a TensorBoard run with --tb-run" in capsys.readouterr().err


def test_history_exits_2_naming_each_unreadable_capture(tmp_path, capsys):
    run = slow_leak_run(tmp_path / "logs", "job", captures=10, leak_bytes_per_step=0)
    cut = [next((run.run_dir / "plugins" / "profile" / s).glob("*.xplane.pb")) for s in run.sessions[::2]]
    for path in cut:
        path.write_bytes(b"")
    assert cli.main(["history", str(tmp_path / "logs"), "--no-cache"]) == cli.EXIT_BAD_INPUT
    out = capsys.readouterr()
    head = out.out.splitlines()
    assert head[0] == "history of job: no leak, 10 captures" and head[1].endswith("(5 of 10 captures could not be read)")
    assert head[2] == " could not read 5 files:" and all(str(p) in "\n".join(head[3:8]) for p in cut)
    assert [line.split(": ")[2] for line in out.err.splitlines()] == [str(p) for p in cut]


def test_check_leads_with_the_history_and_fails_on_it_though_each_capture_alone_is_clean(tmp_path, capsys):
    logs = tmp_path / "logs"
    leak = slow_leak_run(logs, "job", captures=4, kept_in_window=False)
    assert cli.main(["check", str(logs), "--no-cache"]) == cli.EXIT_LEAK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["leak", "job:"] and "history of 4 captures: Leak: +11.7 MiB over 30 min" in lines[0]
    assert "the growth is unexplained" in lines[0] and "allocated before the windows" in lines[0]
    assert [line.split()[:3] for line in lines[1:]] == [["no_leak", "capture", f"job/{s}:"] for s in leak.sessions]
    assert cli.main(["report", str(logs), "--no-cache"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("history of job: LEAK, 4 captures\n")
    assert f"capture job/{leak.sessions[0]} (its own verdict; the history of job is above): no leak" in out
    markdown = tmp_path / "check.md"
    assert cli.main(["report", str(logs), "--no-cache", "--markdown", str(markdown)]) == cli.EXIT_OK
    capsys.readouterr()
    headings = [line for line in markdown.read_text(encoding="utf-8").splitlines() if line.startswith("## ")]
    assert headings[0] == "## tb-leakfinder: history of `job` (4 captures): 🔴 leak"
    assert headings[1:] == [f"## capture `job/{s}` (on its own): 🟢 no leak" for s in leak.sessions]
    # Two captures tell no growth: their own verdicts decide.
    slow_leak_run(tmp_path / "two", "job", captures=2)
    assert cli.main(["check", str(tmp_path / "two"), "--no-cache"]) == cli.EXIT_LEAK
    assert capsys.readouterr().out.splitlines()[0].split()[:2] == ["inconclusive", "job:"]


def _memory_profiles(logs, programs_per_step: int, steps: int = 5):
    """JAX's device memory profiles of steps 1..steps, as `capture(memory_profile_every=1)` names them: a live
    buffer, two programs compiled once at load time, and `programs_per_step` more each step from train.py:12."""
    folder = logs / "memory_profiles"
    folder.mkdir(parents=True)
    compile_frames = [("/site-packages/jax/_src/compiler.py", "backend_compile_and_load", 340, 353)]
    for step in range(1, steps + 1):
        b = PprofBuilder()
        b.sample(1 << 20, [("/src/train.py", "<module>", 1, 8)], device="cpu:0")
        b.sample(0, [*compile_frames, ("/src/data.py", "load", 1, 3)], kind="executable", count=2, device="")
        made = 1 + programs_per_step * step
        b.sample(0, [*compile_frames, ("/src/train.py", "<module>", 1, 12)], kind="executable", count=made, device="")
        b.write(folder / f"step_{step}.prof")


def test_the_history_of_programs_compiled_every_step_names_the_likely_cause_in_text_json_and_markdown(tmp_path, capsys):
    logs = tmp_path / "logs"
    _memory_profiles(logs, programs_per_step=1)
    assert cli.main(["history", str(logs), "--no-cache", "--json"]) == cli.EXIT_OK  # its bytes do not grow
    (series,) = json.loads(capsys.readouterr().out)["series"]
    assert series["cause"]["id"] == "recompile_per_step"
    evidence = (
        "compiled programs grew from 4 to 8 over 5 device memory profiles of steps 1..5, one per step:"
        " 4 more compiled from train.py:12 in <module>"
    )
    assert series["cause"]["evidence"] == evidence
    assert cli.main(["history", str(logs), "--no-cache"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"   likely cause: a function compiled again every step ({evidence}) — fix: make the argument" in out
    assert out.rstrip().count("see docs/causes.md#recompile_per_step") == 1
    page = tmp_path / "report.md"
    assert cli.main(["report", str(logs), "--no-cache", "--markdown", str(page)]) == cli.EXIT_OK
    markdown = page.read_text(encoding="utf-8")
    assert f"- cpu:0 on memory_profile: **likely cause: a function compiled again every step** ({evidence})" in markdown
    assert "[docs/causes.md#recompile_per_step](docs/causes.md#recompile_per_step)" in markdown
    # Each capture's own programs, 0 bytes on CPU: the two of load time and the step's, 1 + step of them.
    assert "compiled programs (their code and constants, not buffers): 8 programs on device unknown (0 B)" in markdown


def test_programs_compiled_once_give_no_cause(tmp_path, capsys):
    logs = tmp_path / "logs"
    _memory_profiles(logs, programs_per_step=0)
    assert cli.main(["history", str(logs), "--no-cache", "--json"]) == cli.EXIT_OK
    (series,) = json.loads(capsys.readouterr().out)["series"]
    assert series["cause"] is None
    assert cli.main(["history", str(logs), "--no-cache"]) == cli.EXIT_OK
    assert "likely cause" not in capsys.readouterr().out
