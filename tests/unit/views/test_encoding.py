"""Every text the views write takes any string (issue 31): lone surrogates from a profile, a file name that is not
UTF-8, under a strict stdout; and `check` says what undermines a no-leak."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tb_leakfinder.testing import hostile
from tests.unit.read.formats.torch_trace.trace_files import memory, training, write

STRICT = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}


def cli(*args: str, cwd: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "tb_leakfinder.views.cli", *args, "--no-cache"]
    pythonpath = os.pathsep.join(filter(None, (os.getcwd(), os.environ.get("PYTHONPATH"))))
    return subprocess.run(command, capture_output=True, timeout=120, cwd=cwd, env={**(env or STRICT), "PYTHONPATH": pythonpath})


def test_surrogates_in_names_are_written_escaped_by_every_export(tmp_path):
    (tmp_path / "run").mkdir()
    hostile.surrogate_names(tmp_path / "run" / "w.pt.trace.json")
    out = cli("report", "run", "--csv", "csv", "--markdown", "r.md", "--html", "r.html", cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert b"aten::\\ud800 (train\\ud800.py:7 in step)" in out.stdout
    assert b"aten::\\ud800" in (tmp_path / "csv" / "buffers.csv").read_bytes()
    assert b"aten::\\\\ud800" in (tmp_path / "r.md").read_bytes()  # a backslash, escaped as Markdown escapes it
    assert b"aten::\\ud800" in (tmp_path / "r.html").read_bytes()
    listed = cli("report", "run", "--json", cwd=str(tmp_path))
    assert json.loads(listed.stdout)["runs"][0]["verdict"] == "leak"  # JSON escapes them as JSON does
    (tmp_path / "clean").mkdir()
    write(tmp_path / "clean" / "w.pt.trace.json", training(kept_bytes=0))
    diff = cli("diff", "clean", "run", "--markdown", "d.md", "--csv", "dcsv", cwd=str(tmp_path))
    assert diff.returncode == 1, diff.stderr  # B brings the leak
    assert b"aten::\\\\ud800" in diff.stdout and b"aten::\\\\ud800" in (tmp_path / "d.md").read_bytes()
    assert b"aten::\\ud800" in (tmp_path / "dcsv" / "compare_families.csv").read_bytes()


def test_a_file_name_that_is_not_utf8_is_printed_escaped_under_a_strict_stdout(tmp_path):
    folder = os.path.join(os.fsencode(tmp_path), b"run\xff")
    os.mkdir(folder)
    hostile.reused_address(tmp_path / os.fsdecode(b"run\xff") / "w.pt.trace.json")
    checked = cli("check", str(tmp_path))
    assert checked.returncode == 1, checked.stderr
    assert b"inconclusive  run\\udcff: Cannot tell" in checked.stdout
    missing = cli("report", os.fsdecode(os.path.join(folder, b"gone\xfe.prof")))
    assert missing.returncode == 2 and b"gone\\udcfe.prof" in missing.stderr and b"Traceback" not in missing.stderr


def test_check_says_what_undermines_a_no_leak_and_exits_1(tmp_path):
    # Frees paired by size (no Addr: PyTorch before 1.10): which allocation a free ends, so which buffer stays live,
    # is a guess. One buffer made once and kept stays live.
    events = training(kept_bytes=0)
    for event in events:
        event["args"].pop("Addr", None)
    write(tmp_path / "w.pt.trace.json", [*events, memory(50.0, 4096)])
    checked = cli("check", str(tmp_path / "w.pt.trace.json"))
    lines = checked.stdout.decode().splitlines()
    assert checked.returncode == 1, checked.stderr
    doubt = "its frees are paired with allocations by size, having no address"
    assert f"Cannot tell: {doubt}. Taken at face value: No leak" in lines[0]
    assert lines[-1] == " cannot tell  1 host: a warning above undermines their verdict"
    # With addresses, the same trace passes; and so does one without whose every buffer is freed (nothing to misplace).
    write(tmp_path / "a.pt.trace.json", [*training(kept_bytes=0), memory(50.0, 4096, Addr=0x30)])
    assert cli("check", str(tmp_path / "a.pt.trace.json")).returncode == 0
    write(tmp_path / "w.pt.trace.json", events)
    assert cli("check", str(tmp_path / "w.pt.trace.json")).returncode == 0
