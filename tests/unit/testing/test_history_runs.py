"""The runs of several captures the history's tests build: as a copy without times, they carry none."""

from __future__ import annotations

import pytest

from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.testing.history_runs import slow_leak_run, strip_times


def test_a_run_stripped_of_its_times_is_ordered_by_step_and_has_no_rate_per_hour(tmp_path):
    leak = slow_leak_run(tmp_path, "job", captures=4)
    names = strip_times(leak, 1_800_000_000)
    assert names == ["c4", "c3", "c2", "c1"]
    assert {p.stat().st_mtime for p in leak.run_dir.rglob("*")} == {1_800_000_000}
    (series,) = Engine.for_path(str(tmp_path)).history("job")["series"]
    assert [c["capture"] for c in series["captures"]] == [f"job/{n}" for n in names]
    assert {c["time_source"] for c in series["captures"]} == {"file_mtime"}
    assert series["bytes_per_hour"] is None and series["bytes_per_step"] == pytest.approx(leak.leak_bytes_per_step)
