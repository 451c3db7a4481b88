"""The CLI's report prints each run history after the runs."""

from __future__ import annotations

from tb_leakfinder.testing.history_runs import slow_leak_run
from tb_leakfinder.views import cli


def test_the_text_report_ends_with_the_history_of_a_run_of_several_captures(tmp_path, capsys):
    leak = slow_leak_run(tmp_path / "logs", captures=4)
    assert cli.main(["report", str(tmp_path / "logs"), "--no-cache"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    history = out[out.index("history of job: LEAK, 4 captures") :].splitlines()
    assert history[1].startswith(" Leak: +11.7 MiB over 30 min across 4 captures, +4.0 KiB per step, from Mul [256] output")
    rows = [line for line in history if line.strip().startswith("20") and "job/" in line]
    assert [row.split()[2] for row in rows] == [f"job/{s}" for s in leak.sessions]
    assert any(line.split()[:3] == ["Mul", "[256]", "output"] and "+4 KiB/step" in line for line in history)
