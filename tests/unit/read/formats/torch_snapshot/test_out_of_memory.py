"""Snapshots taken at an out-of-memory error: their report (text, JSON) leads with what filled the memory."""

from __future__ import annotations

import pytest

from tb_leakfinder.analyses.capacity import BEFORE_TRACE, MAX_HELD_ROWS
from tb_leakfinder.engine.engine import analyze_file
from tb_leakfinder.read.formats.torch_snapshot.format import HOST
from tb_leakfinder.testing.torch_snapshot_builder import INIT_WEIGHTS, SnapshotBuilder, dying_job, helper_job
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
        "(its trace records 1 oom entry). It failed to allocate 2 GiB, with 64 MiB free on the device."
    )
    # dying_job asks for 2 GiB with 64 MiB free; its segments are full, so nothing is reserved and free.
    assert (oom["request_bytes"], oom["device_free_bytes"], oom["reserved_free_bytes"]) == (2 * GIB, 64 * MIB, 0)
    assert oom["held_at_error"][0]["stack"] == ["train.py:40 in train_step", "train.py:90 in <module>"]


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
    assert holders[-1] == {"where": "4 more places", "bytes": 4 * MIB, "count": 4, "stack": []}
    assert allocator["out_of_memory"]["cause"] == "every segment of its memory is full"


def test_the_markdown_report_leads_with_it(tmp_path, capsys):
    path = dying_job("2.1").write(tmp_path / "snap.pickle")
    assert cli.main(["report", str(path), "--no-cache", "--markdown", str(tmp_path / "report.md")]) == 0
    text = (tmp_path / "report.md").read_text()
    lead = text.index("**At the out-of-memory error 5.5 GiB of 5.5 GiB was held by: train.py:40 in train_step")
    assert lead < text.index("Inconclusive in ")


def test_an_oom_capture_that_holds_nothing_says_so(tmp_path):
    b = SnapshotBuilder()
    b.alloc(BASE, MIB, _kept(40), time_us=1)
    b.free(BASE, MIB, time_us=2)
    (allocator,) = analyze_file(str(b.write(tmp_path / "oom.pickle")), HOST, str(tmp_path)).json()["allocators"]
    assert allocator["out_of_memory"]["held_at_error"] == []
    assert allocator["out_of_memory"]["description"] == (
        "At the out-of-memory error 0 B of 0 B was held by: nothing the capture names (its file name says so)."
    )


def test_a_helper_many_weights_share_gives_way_to_the_lines_that_called_it(tmp_path):
    """helper_job makes every weight through pytorch_backend.py:190 in allocate: the holders are the three
    init_weight lines that call it, each with its whole stack, not the helper."""
    layers = 6
    path = helper_job("2.0", layers=layers).write(tmp_path / "oom_snapshot.pickle")
    (allocator,) = analyze_file(str(path), HOST, str(tmp_path)).json()["allocators"]
    oom = allocator["out_of_memory"]
    weights = [(f"flex_opt.py:{line} in {name}", layers * count * 64 * MIB, layers * count) for line, name, count in INIT_WEIGHTS]
    expected = sorted([*weights, ("flex_opt.py:702 in forward", 16 * MIB, 1)], key=lambda r: (-r[1], r[0]))
    assert [(h["where"], h["bytes"], h["count"]) for h in oom["held_at_error"]] == expected
    assert oom["held_at_error"][0]["stack"] == [
        "pytorch_backend.py:190 in allocate",
        "flex_opt.py:171 in init_weight",
        "flex_opt.py:640 in init_all_weights",
    ]
    # It asked for 1 GiB with 32 MiB free; 48 MiB of its segment was cached, held by no buffer.
    assert (oom["request_bytes"], oom["device_free_bytes"], oom["reserved_free_bytes"]) == (GIB, 32 * MIB, 48 * MIB)
    assert "It failed to allocate 1 GiB, with 32 MiB free on the device. 48 MiB was reserved" in oom["description"]


def test_the_after_run_twin_is_its_live_blocks_named_by_their_frames(tmp_path):
    """The same job's snapshot after the run: PyTorch 2.0 kept one trace entry (a free), so its live blocks, with
    their frames, are one moment, not memory allocated before a window."""
    path = helper_job("2.0", out_of_memory=False).write(tmp_path / "after_run.pickle")
    result = analyze_file(str(path), HOST, str(tmp_path))
    assert result.json()["one_moment"]
    (allocator,) = result.json()["allocators"]
    assert allocator["out_of_memory"] is None
    rows = {(r["category"], r["where"]) for r in allocator["peak_breakdown"]}
    assert ("before_window", "") not in rows
    assert ("buffers", "flex_opt.py:171 in init_weight") in rows


@pytest.mark.parametrize("out_of_memory", [True, False], ids=["at_the_error", "after_the_run"])
def test_families_and_the_breakdown_name_the_weights_by_the_lines_that_called_the_helper(tmp_path, out_of_memory):
    """As the post-mortem does: every weight is made through pytorch_backend.py:190 in allocate, so the line that
    tells them apart is its caller's; the helper stays the innermost frame of their stack."""
    layers = 6
    path = helper_job("2.0", out_of_memory=out_of_memory, layers=layers).write(tmp_path / "snapshot.pickle")
    (allocator,) = analyze_file(str(path), HOST, str(tmp_path)).json()["allocators"]
    weights = {f"flex_opt.py:{line} in {name}": layers * count for line, name, count in INIT_WEIGHTS}
    expected = {where: (count, count * 64 * MIB) for where, count in weights.items()}
    expected["flex_opt.py:702 in forward"] = (1, 16 * MIB)
    families = allocator["families"]
    assert {f["where"]: (f["count"], f["chunk_bytes"]) for f in families} == expected
    assert {f["label"] for f in families} == {f"made at {where}" for where in expected}
    helped = [f for f in families if f["where"] in weights]
    assert {f["site"]["stack"][0] for f in helped} == {"pytorch_backend.py:190 in allocate"}
    rows = [r for r in allocator["peak_breakdown"] if r["category"] == "buffers"]
    assert {r["where"]: (r["count"], r["bytes"]) for r in rows} == expected
