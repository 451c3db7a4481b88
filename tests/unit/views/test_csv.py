"""views/csv.py and `tb-leakfinder report/diff --csv DIR`: one file per table, whole tables, no formulas."""

from __future__ import annotations

import csv
import io
import json
import pathlib

import pytest

import tb_leakfinder
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
from tb_leakfinder.views import cli
from tb_leakfinder.views.csv import Table, cause_columns, neutralise
from tests.support.cli_process import run_cli
from tests.support.demo import ROOT

DEMO = ROOT / "demo_logs"
EVIL_OP = '=HYPERLINK("http://example.invalid","x")<img src=x onerror=alert(1)>'


def read_csv(path: pathlib.Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", '=HYPERLINK("a")'])
def test_formula_looking_strings_are_quoted(text):
    assert neutralise(text) == "'" + text


def test_other_cells_are_as_they_are():
    assert neutralise("Mul") == "Mul"
    assert neutralise("[128,1024]") == "[128,1024]"
    assert neutralise(-5) == "-5"  # a number is not a formula
    assert neutralise(0.25) == "0.25"
    assert neutralise(133781.0) == "133781"  # as the tab's CSV prints a JSON number
    assert neutralise(2.0**70) == "1.1805916207174113e+21"
    assert neutralise(1e-7) == "1e-7"
    assert neutralise(None) == ""
    assert neutralise(True) == "true"
    assert neutralise({"a": [1, "-x"]}) == '{"a":[1,"-x"]}'
    assert neutralise(["=x"]) == '["=x"]'


def test_table_header_is_context_then_every_key_in_order_met():
    table = Table(("run",))
    table.add(("r1",), [{"op": "a", "bytes": 1}])
    table.add(("r2",), [{"op": "b", "kind": "growing"}])
    rows = list(csv.reader(io.StringIO(table.text())))
    assert rows == [["run", "op", "bytes", "kind"], ["r1", "a", "1", ""], ["r2", "b", "", "growing"]]


def test_report_csv_writes_every_table_whole(tmp_path):
    out = tmp_path / "csv"
    assert cli.main(["report", str(DEMO / "tf_leak"), "--csv", str(out)]) == cli.EXIT_OK
    tables = ["buffers.csv", "families.csv", "holders.csv", "peak_breakdown.csv", "static_buffers.csv"]
    assert sorted(p.name for p in out.iterdir()) == tables
    report = tb_leakfinder.analyze(str(DEMO / "tf_leak"))
    (host,) = report["runs"][0]["hosts"]
    (allocator,) = host["allocators"]

    groups = read_csv(out / "families.csv")
    assert len(groups) == len(allocator["families"])
    assert list(groups[0])[:3] == ["run", "host", "allocator"]
    # The report's own keys, its site's in the place of `site`, its cause's id, evidence and fix in the place of `cause`.
    columns = {"site": list(allocator["families"][0]["site"]), "cause": ["cause", "cause_evidence", "cause_fix"]}
    expected = [column for key in allocator["families"][0] for column in columns.get(key, [key])]
    assert list(groups[0])[3:] == expected
    top = groups[0]
    assert (top["op"], top["shape"], top["kind"], top["count"]) == ("Mul", "[128,1024]", "growing", "25")

    breakdown = read_csv(out / "peak_breakdown.csv")
    assert sum(int(r["bytes"]) for r in breakdown) == sum(r["bytes"] for r in allocator["peak_breakdown"])

    # All buffers, not a page: as many rows as allocations the profile holds a buffer for.
    buffers = read_csv(out / "buffers.csv")
    assert len(buffers) > 100
    assert len(buffers) >= allocator["num_allocations"]
    assert len({b["id"] for b in buffers}) == len(buffers)
    assert [int(b["chunk_bytes"]) for b in buffers] == sorted((int(b["chunk_bytes"]) for b in buffers), reverse=True)


def test_static_buffers_csv_lists_each_modules_whole_program_buffers(tmp_path):
    out = tmp_path / "csv"
    assert cli.main(["report", str(DEMO / "jax_liveout"), "--csv", str(out)]) == cli.EXIT_OK
    rows = read_csv(out / "static_buffers.csv")
    report = tb_leakfinder.analyze(str(DEMO / "jax_liveout"))
    (host,) = report["runs"][0]["hosts"]
    assert len(rows) == sum(len(m["whole_program_buffers"]) for m in host["modules"])
    step = [r for r in rows if r["module"].startswith("jit_train_step_liveout(")]
    assert {"live_out", "parameter"} <= {r["reason"] for r in step}
    assert read_csv(out / "families.csv") == []  # JAX on CPU: no memory events, no groups


def test_profile_strings_cannot_become_formulas(tmp_path):
    builder, _ = synthesize_training(2000, 10, ("GPU_0_bfc",), leak_op=EVIL_OP, hostname="evil")
    write_session(tmp_path / "logs", "evil", "2026_11_30_00_00_00", {"evil": builder})
    out = tmp_path / "csv"
    assert cli.main(["report", str(tmp_path / "logs"), "--csv", str(out)]) == cli.EXIT_OK
    (leak,) = [r for r in read_csv(out / "families.csv") if EVIL_OP in r["op"]]
    assert leak["op"] == "'" + EVIL_OP
    evil_buffers = [r for r in read_csv(out / "buffers.csv") if EVIL_OP in r["op"]]
    assert len(evil_buffers) == 10 and all(r["op"].startswith("'=") for r in evil_buffers)
    for path in out.iterdir():
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        for row in rows:
            assert not any(cell.startswith(("=", "+", "@")) for cell in row), (path.name, row)


def test_diff_csv_writes_the_compare_families(tmp_path, capsys):
    out = tmp_path / "csv"
    code = cli.main(["diff", str(DEMO / "tf_fixed"), str(DEMO / "tf_leak"), "--csv", str(out), "--json"])
    assert code == cli.EXIT_LEAK
    comparison = json.loads(capsys.readouterr().out)
    assert [p.name for p in out.iterdir()] == ["compare_families.csv"]
    rows = read_csv(out / "compare_families.csv")
    expected = [g for h in comparison["hosts"] for a in h["allocators"] for g in a["families"]]
    assert len(rows) == len(expected) > 0
    (new,) = [r for r in rows if r["new_leak"] == "true"]
    assert (new["op"], new["status"], new["run_b"]) == ("Mul", "new", comparison["run_b"])


def test_unwritable_csv_folder_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cli.main(["report", str(DEMO / "tf_leak"), "--csv", str(blocker)]) == cli.EXIT_BAD_INPUT
    assert "cannot write the CSV files" in capsys.readouterr().err


def test_a_failed_write_leaves_the_previous_files_whole(tmp_path):
    """Under a file size limit that buffers.csv passes (a disk that fills up), every CSV there stays as it was."""
    out = tmp_path / "csv"
    assert run_cli("report", str(DEMO / "tf_leak"), "--csv", str(out), "--no-cache").returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    done = run_cli(
        "report", str(DEMO / "tf_fixed"), "--csv", str(out), "--no-cache", file_size_limit=len(before["buffers.csv"]) // 2
    )
    assert done.returncode == cli.EXIT_BAD_INPUT and "cannot write the CSV files (File too large)" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no file changed, no temporary file left
    assert run_cli("report", str(DEMO / "tf_fixed"), "--csv", str(out), "--no-cache").returncode == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} != before and sorted(p.name for p in out.iterdir()) == sorted(before)


def test_a_family_cause_is_three_columns_in_its_place_and_empty_without_one():
    family = {"op": "aten::cat", "site": {"stack": []}, "cause": {"id": "regrown", "evidence": "one buffer", "fix": "bound it"}}
    assert cause_columns(family) == {
        "op": "aten::cat",
        "site": {"stack": []},
        "cause": "regrown",
        "cause_evidence": "one buffer",
        "cause_fix": "bound it",
    }
    plain = cause_columns({"op": "Mul", "cause": None, "score": 1.0})
    assert list(plain) == ["op", "cause", "cause_evidence", "cause_fix", "score"]
    assert [neutralise(plain[k]) for k in ("cause", "cause_evidence", "cause_fix")] == ["", "", ""]
