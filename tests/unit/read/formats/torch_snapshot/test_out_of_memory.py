"""Snapshots taken at an out-of-memory error: their report (text, JSON) leads with what filled the memory."""

from __future__ import annotations

import pytest

from tb_leakfinder.analyses.capacity import BEFORE_TRACE, MAX_HELD_ROWS
from tb_leakfinder.engine.engine import analyze_file
from tb_leakfinder.read.formats.torch_snapshot.format import HOST
from tb_leakfinder.testing.torch_snapshot_builder import SnapshotBuilder, dying_job
from tb_leakfinder.views import cli

MIB = 1 << 20
GIB = 1 << 30
BASE = 0x7F00_0000_0000
USER = "/home/me/train.py"


def _kept(line: int) -> list[tuple[str, int, str]]:
    return [(USER, line, "train_step"), (USER, 90, "<module>")]


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_an_oom_snapshot_leads_with_what_held_the_memory(tmp_path, version):
    path = dying_job(version).write(tmp_path / "snap.pickle")
    (allocator,) = analyze_file(str(path), HOST, str(tmp_path)).json()["allocators"]
    oom = allocator["out_of_memory"]
    assert oom["cause"] == "its trace records 1 oom entry"
    assert oom["held_bytes"] == 4 * GIB + 4 * 256 * MIB + 512 * MIB
    assert oom["capacity_bytes"] == oom["held_bytes"]  # every segment full: all reserved is held
    assert [(h["where"], h["bytes"], h["count"]) for h in oom["held_at_error"]] == [
        ("train.py:40 in train_step", 4 * GIB, 4),
        ("BmmBackward0 (backward of bmm)", GIB, 4),
        (BEFORE_TRACE, 512 * MIB, 0),
    ]
    assert oom["description"] == (
        "At the out-of-memory error 5.5 GiB of 5.5 GiB was held by: train.py:40 in train_step 4 GiB (4 buffers); "
        "BmmBackward0 (backward of bmm) 1 GiB (4 buffers); allocated before the trace began 512 MiB "
        "(its trace records 1 oom entry)."
    )


def test_the_text_report_leads_with_it(tmp_path, capsys):
    path = dying_job("2.1").write(tmp_path / "snap.pickle")
    assert cli.main(["report", str(path), "--no-cache"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(k for k, line in enumerate(lines) if line.startswith("  allocator cuda:0"))
    assert lines[header + 1].startswith("    At the out-of-memory error 5.5 GiB of 5.5 GiB was held by: train.py:40")


def test_a_snapshot_not_at_an_error_says_nothing_of_one(tmp_path):
    b = dying_job("2.1")
    b.snapshot["device_traces"][0].pop()  # no oom entry
    b.segment(BASE + 64 * GIB, [(BASE + 64 * GIB, MIB, 0, "inactive", ())])  # a segment with room
    (allocator,) = analyze_file(str(b.write(tmp_path / "snap.pickle")), HOST, str(tmp_path)).json()["allocators"]
    assert allocator["out_of_memory"] is None


def test_many_places_fold_into_one_last_row(tmp_path):
    b = SnapshotBuilder()
    blocks = []
    for k in range(MAX_HELD_ROWS + 3):
        addr = BASE + k * MIB
        b.alloc(addr, MIB, _kept(100 + k), time_us=k)
        blocks.append((addr, MIB, MIB, "active_allocated", _kept(100 + k)))
    b.segment(BASE, blocks)
    (allocator,) = analyze_file(str(b.write(tmp_path / "oom.pickle")), HOST, str(tmp_path)).json()["allocators"]
    holders = allocator["out_of_memory"]["held_at_error"]
    assert len(holders) == MAX_HELD_ROWS
    assert holders[-1] == {"where": "4 more places", "bytes": 4 * MIB, "count": 4}
    assert allocator["out_of_memory"]["cause"] == "every segment of its memory is full"


def test_the_markdown_report_leads_with_it(tmp_path, capsys):
    path = dying_job("2.1").write(tmp_path / "snap.pickle")
    assert cli.main(["report", str(path), "--no-cache", "--markdown", str(tmp_path / "report.md")]) == 0
    text = (tmp_path / "report.md").read_text()
    lead = text.index("**At the out-of-memory error 5.5 GiB of 5.5 GiB was held by: train.py:40 in train_step")
    assert lead < text.index("Inconclusive: ")


def test_an_oom_capture_that_holds_nothing_says_so(tmp_path):
    b = SnapshotBuilder()
    b.alloc(BASE, MIB, _kept(40), time_us=1)
    b.free(BASE, MIB, time_us=2)
    (allocator,) = analyze_file(str(b.write(tmp_path / "oom.pickle")), HOST, str(tmp_path)).json()["allocators"]
    assert allocator["out_of_memory"]["held_at_error"] == []
    assert allocator["out_of_memory"]["description"] == (
        "At the out-of-memory error 0 B of 0 B was held by: nothing the capture names (its file name says so)."
    )
