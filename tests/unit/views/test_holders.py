"""Holders and the text of the lines named, in every view but the tab: the CLI's text, the Markdown, the CSV files
and the standalone page's data; and the CLI's local source file when no companion file recorded a line.

On a copy of the TF demo's leak (25 Mul outputs kept) with a companion file naming 20 of them, and on PyTorch traces
the tests build with a Python frame around the kept allocation."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tb_leakfinder.analyses.words import format_bytes
from tb_leakfinder.engine import queries
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.model.recordings import SHAPE
from tb_leakfinder.testing.recordings_builder import companion, holder, write_companion
from tb_leakfinder.views import cli, html
from tb_leakfinder.views.source_lines import MAX_SOURCE_BYTES, fill_where_texts
from tb_leakfinder.views.standalone_page import answer_key
from tb_leakfinder.views.text import search_text
from tests.support.demo import demo_run_dir
from tests.support.never_freed import never_freed
from tests.unit.read.formats.torch_trace.trace_files import complete, memory, write

CREATED = "/home/me/capture_tf.py:40 in main"
WARNING = "the 2 s bound was hit"


def _demo_leak(tmp_path: Path) -> tuple[Path, list[int], int, int]:
    """A copy of the demo's leak: (its profile, its 25 kept Mul outputs' addresses, the chunk bytes of the first 20, of
    the other 5)."""
    shutil.copytree(demo_run_dir("tf_leak"), tmp_path / "tf_leak")
    (profile,) = (tmp_path / "tf_leak").glob("plugins/profile/*/*.xplane.pb")
    live = never_freed(profile)
    muls = sorted(a for a, (op, _) in live.items() if op == "Mul")
    return profile, muls, sum(live[a][1] for a in muls[:20]), sum(live[a][1] for a in muls[20:])


@pytest.fixture
def tf_leak(tmp_path) -> tuple[Path, int, int]:
    """The demo's leak with a companion file naming 20 of its 25 kept Mul outputs: (its logdir, their chunk bytes,
    the other 5's)."""
    profile, muls, named, rest = _demo_leak(tmp_path)
    document = companion(
        holders=[holder("history", muls[:20], kind="frame_local", created=CREATED, count=25)],
        status="partial",
        warning=WARNING,
        unmatched_count=5,
        unmatched_bytes=rest,
        sources={"/home/me/capture_tf.py:40": "history = []"},
    )
    write_companion(profile, document)
    return tmp_path / "tf_leak", named, rest


def test_the_text_report_says_who_holds_the_leak_and_that_the_search_was_partial(tf_leak, capsys):
    logdir, named, rest = tf_leak
    assert cli.main(["report", str(logdir)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    held = f"held by `history`: list, at least 20 of 25 never-freed buffers, {format_bytes(named)}"
    assert f"Held by `history`: list, at least 20 of 25 never-freed buffers, {format_bytes(named)} (" in out  # the reason
    assert f"      {held} (a local of a running function, made at `{CREATED}`: `history = []`)\n" in out
    assert (
        f"  holders: partial, 1,000 objects in 0.05 s ({WARNING}): the holders named are true, but there may be more; "
        f"5 never-freed buffers ({format_bytes(rest)}) held by no reference it found\n"
    ) in out


def test_the_search_line_says_each_buffer_once_the_ambiguous_apart_from_those_held_by_nothing(tmp_path, capsys):
    """The helper counts the ambiguous buffers among those it found no holder for: of the 5 Mul outputs no holder
    names, 3 are ambiguous and 2 are held by no reference it found."""
    profile, muls, _, _ = _demo_leak(tmp_path)
    live = never_freed(profile)
    rest = [live[a][1] for a in muls[20:]]
    document = companion(
        holders=[holder("history", muls[:20], kind="frame_local", created=CREATED)],
        unmatched_count=5,
        unmatched_bytes=sum(rest),
        ambiguous_count=3,
        ambiguous_bytes=sum(rest[:3]),
    )
    write_companion(profile, document)
    assert cli.main(["report", str(tmp_path / "tf_leak")]) == cli.EXIT_OK
    out = capsys.readouterr().out
    held_by_nothing = f"2 never-freed buffers ({format_bytes(sum(rest[3:]))}) held by no reference it found"
    ambiguous = f"3 never-freed buffers ({format_bytes(sum(rest[:3]))}) are ambiguous"
    assert f"  holders: complete, 1,000 objects in 0.05 s; {held_by_nothing}; {ambiguous}: " in out


def test_markdown_and_csv_carry_the_holders(tf_leak, tmp_path):
    logdir, named, _ = tf_leak
    md, out = tmp_path / "report.md", tmp_path / "csv"
    assert cli.main(["report", str(logdir), "--markdown", str(md), "--csv", str(out)]) == cli.EXIT_OK
    text = md.read_text(encoding="utf-8")
    assert (
        f"- `Mul [128,1024] output`: held by `history`: list, at least 20 of 25 never-freed buffers, "
        f"{format_bytes(named)} (a local of a running function, made at `{CREATED}`: `history = []`)"
    ) in text
    assert f"holders: partial, 1,000 objects in 0.05 s ({WARNING})" in text
    with (out / "holders.csv").open(newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["family"], row["path"], row["kind"], row["type"], row["count"]) == ("0", "history", "frame_local", "list", "20")
    assert (row["chunk_bytes"], row["all_listed"], row["created_text"]) == (str(named), "false", "history = []")
    with (out / "families.csv").open(newline="", encoding="utf-8") as f:
        top = next(csv.DictReader(f))
    assert json.loads(top["holders"])[0]["path"] == "history"


def test_a_holder_matched_by_shape_and_the_ambiguous_buffers_are_said_in_text_markdown_and_csv(tmp_path, capsys):
    """As the capture helper writes on a GPU: 20 of the 25 Mul outputs matched by shape to `history`, the other 5
    ambiguous (more live tensors of their shape than buffers)."""
    profile, muls, named, rest = _demo_leak(tmp_path)
    shaped = companion(
        holders=[holder("history", muls[:20], kind="frame_local", match=SHAPE)],
        unmatched_count=5,
        unmatched_bytes=rest,
        ambiguous_count=5,
        ambiguous_bytes=rest,
    )
    write_companion(profile, shaped)
    md, out = tmp_path / "report.md", tmp_path / "csv"
    logdir = str(tmp_path / "tf_leak")
    assert cli.main(["report", logdir, "--markdown", str(md), "--csv", str(out)]) == cli.EXIT_OK
    held = f"held by `history`: list, 20 of 25 never-freed buffers, {format_bytes(named)} (a local of a running function)"
    said = f"{held} (matched by shape and dtype: which of that shape's buffers it keeps is not known)"
    ambiguous = (
        f"5 never-freed buffers ({format_bytes(rest)}) are ambiguous: more live objects share their shape and dtype"
        " than there are buffers, so no holder is named"
    )
    assert cli.main(["report", logdir]) == cli.EXIT_OK
    text = capsys.readouterr().out
    assert f"      {said}\n" in text
    # All 5 unmatched are the ambiguous: none is said to be held by no reference (each buffer is counted once).
    assert f"  holders: complete, 1,000 objects in 0.05 s; {ambiguous}\n" in text
    markdown = md.read_text(encoding="utf-8")
    assert f"- `Mul [128,1024] output`: {said}" in markdown
    assert ambiguous in markdown
    with (out / "holders.csv").open(newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["path"], row["count"], row["match"]) == ("history", "20", "shape")
    # By address (the default), the holder's line says nothing of shapes and the CSV says `address`.
    write_companion(profile, companion(holders=[holder("history", muls[:20], kind="frame_local")]))
    assert cli.main(["report", logdir, "--csv", str(out)]) == cli.EXIT_OK
    text = capsys.readouterr().out
    assert f"      {held}\n" in text
    assert "shape and dtype" not in text
    with (out / "holders.csv").open(newline="", encoding="utf-8") as f:
        assert [r["match"] for r in csv.DictReader(f)] == ["address"]


def test_the_standalone_pages_data_holds_the_holders(tf_leak, tmp_path):
    logdir, _, _ = tf_leak
    page = tmp_path / "page.html"
    assert cli.main(["report", str(logdir), "--html", str(page)]) == cli.EXIT_OK
    found = re.search(rf'<script type="application/json" id="{html.DATA_ID}">(.*?)</script>', page.read_text(), re.S)
    assert found is not None
    answers = json.loads(found.group(1))["answers"]
    (run,) = answers["runs"]["runs"]
    (host,) = answers[answer_key("report", {"run": run["run"]})]["runs"][0]["hosts"]
    assert host["holder_search"]["status"] == "partial"
    assert host["allocators"][0]["families"][0]["holders"][0]["path"] == "history"


def test_a_failed_search_says_no_holder_is_known(tf_leak, capsys):
    logdir, _, _ = tf_leak
    (path,) = logdir.glob("plugins/profile/*/*.leakfinder.json")
    path.write_text(json.dumps(companion(holders=[], status="failed", warning="RuntimeError: gc is disabled")))
    assert cli.main(["report", str(logdir)]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert "  holders: the search failed (RuntimeError: gc is disabled); no holder is known\n" in out
    assert "held by" not in out.lower()


KEPT_LINE = 3
SOURCE = "def keep(kept, x):\n    y = x * 2\n    kept.append(y)  # the leak\n"


def _traced(folder: Path) -> Path:
    """A trace of 12 steps whose each keeps a 1 MiB buffer made under `train.py(3): keep`."""
    events, total = [], 0
    for n in range(12):
        start = 1000.0 * n
        total += 1 << 20
        events += [
            complete(f"ProfilerStep#{n}", start, 900.0, cat="user_annotation"),
            complete(f"train.py({KEPT_LINE}): keep", start + 100.0, 300.0, cat="python_function"),
            complete("aten::mul", start + 150.0, 100.0),
            memory(start + 200.0, 1 << 20, Addr=0x10_0000_0000 + n * (1 << 24), **{"Total Allocated": total}),
        ]
    folder.mkdir()
    return write(folder / "w_1.1700000000000.pt.trace.json.gz", events)


def test_the_cli_reads_a_local_source_line_when_no_companion_recorded_it_and_the_plugin_never_does(tmp_path, monkeypatch, capsys):
    trace = _traced(tmp_path / "run")
    (tmp_path / "train.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", str(trace), "--json"]) == cli.EXIT_OK
    family = json.loads(capsys.readouterr().out)["runs"][0]["hosts"][0]["allocators"][0]["families"][0]
    assert family["where"] == f"train.py:{KEPT_LINE} in keep"
    assert family["where_text"] == "kept.append(y)  # the leak"
    assert cli.main(["report", str(trace)]) == cli.EXIT_OK
    assert f"      train.py:{KEPT_LINE} in keep: kept.append(y)  # the leak\n" in capsys.readouterr().out
    served = queries.report(Engine.for_path(str(trace)), None, None)
    assert served["runs"][0]["hosts"][0]["allocators"][0]["families"][0]["where_text"] == ""


def test_a_companion_files_line_wins_and_a_local_file_is_not_read_then(tmp_path, monkeypatch, capsys):
    trace = _traced(tmp_path / "run")
    write_companion(trace, companion(sources={f"/src/train.py:{KEPT_LINE}": "kept.append(y)  # at capture time"}))
    (tmp_path / "train.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["report", str(trace), "--json"]) == cli.EXIT_OK
    family = json.loads(capsys.readouterr().out)["runs"][0]["hosts"][0]["allocators"][0]["families"][0]
    assert family["where_text"] == "kept.append(y)  # at capture time"


@pytest.mark.parametrize("kind", ["missing", "a folder", "a FIFO", "too large", "too short", "not UTF-8"])
def test_a_local_source_that_cannot_give_the_line_leaves_it_empty(tmp_path, kind):
    source = tmp_path / "train.py"
    if kind == "a folder":
        source.mkdir()
    elif kind == "a FIFO":
        os.mkfifo(source)
    elif kind == "too large":
        source.write_text(SOURCE + "#" * MAX_SOURCE_BYTES)
    elif kind == "too short":
        source.write_text("pass\n")
    elif kind == "not UTF-8":
        source.write_bytes(b"\xff\xfe\n\xff\n\xff\xfe kept\n")
    family = {"where": f"train.py:{KEPT_LINE} in keep", "where_text": "", "site": {"source": ""}}
    report = {"runs": [{"hosts": [{"recordings_file": "", "allocators": [{"families": [family]}]}]}]}
    fill_where_texts(report, str(tmp_path))
    assert family["where_text"] == ("\ufffd\ufffd kept" if kind == "not UTF-8" else "")


@pytest.mark.parametrize(
    ("count", "said"),
    [
        (1, "1 never-freed buffer (4 KiB) held by no reference it found; 1 address its holders list is no never-freed"),
        (3, "3 never-freed buffers (4 KiB) held by no reference it found; 3 addresses its holders list are no never-freed"),
    ],
)
def test_the_search_line_counts_in_words(count, said):
    search = {"status": "complete", "objects_visited": 10, "elapsed_s": 0.5, "warning": ""}
    search |= {"unmatched_count": count, "unmatched_bytes": 4096, "not_in_profile": count}
    search |= {"ambiguous_count": 0, "ambiguous_bytes": 0}
    assert said in str(search_text({"holder_search": search}))
