"""read/formats/xplane/reader.py: a profile cut short while it is read is the project's error, never a crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tb_leakfinder.read import files
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session, write_training

# The CLI's report, with the file cut to half its size once it is mapped and before the scan reads it (the scan then
# faults on the first page past the new end, in one of its threads).
_CUT_UNDER_THE_CLI = """
import os, sys
from tb_leakfinder.read.formats.xplane import reader
from tb_leakfinder.views.cli import main
path = sys.argv[1]
start_ns = reader.clock.profile_start_ns

def cut_then_read(data):
    os.truncate(path, len(data) // 2)
    return start_ns(data)

reader.clock.profile_start_ns = cut_then_read
sys.exit(main(["report", path, "--no-cache"]))
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    builder, _ = synthesize_training(num_events=40_000, steps=10, allocators=("GPU_0_bfc",), hostname="host0")
    return write_session(tmp_path_factory.mktemp("logs"), "train", "session", {"host0": builder})


def test_a_profile_cut_while_the_cli_reads_it_exits_2_with_the_projects_error(session, tmp_path):
    path = tmp_path / "host0.xplane.pb"
    shutil.copyfile(session[0], path)
    size = path.stat().st_size
    child = subprocess.run([sys.executable, "-c", _CUT_UNDER_THE_CLI, str(path)], capture_output=True, text=True, timeout=120)
    assert child.returncode == 2, child.stderr
    assert f"{path}: the file changed while it was read: truncated to {size // 2} bytes" in child.stderr
    assert "Traceback" not in child.stderr


def test_a_profile_cut_while_tensorboard_reads_it_is_its_runs_error(session, monkeypatch):
    logdir = session[0].split("/train/")[0]
    client, plugin = make_client(logdir)
    assert files.ALLOW_MAP is False  # TensorBoard's reads copy
    (run,) = [r.name for r in plugin.engine.runs()]
    read_into = files._read_into

    def cut_first(path: str, *args: object) -> int:
        os.truncate(path, 1000)
        return read_into(path, *args)

    monkeypatch.setattr(files, "_read_into", cut_first)
    response = client.get(f"{PREFIX}/report", query_string={"run": run})
    body = json.loads(response.get_data())
    assert response.status_code == 422
    assert f"{session[0]}: the file changed while it was read: truncated to 1000 bytes" in body["error"]


# Reads of a profile while another thread cuts it at a time spread over the read: each one's outcome.
_RACE = """
import json, os, shutil, sys, threading, time
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.xplane import reader
source, work, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
start = time.perf_counter()
reader.read_host(source, "h")
took = time.perf_counter() - start
outcomes = []
for k in range(repeats):
    shutil.copyfile(source, work)
    cut = threading.Timer(took * k / repeats, os.truncate, (work, os.path.getsize(work) // 3))
    cut.start()
    try:
        reader.read_host(work, "h")
        outcomes.append("whole")
    except LeakfinderError as exc:
        outcomes.append(exc.message.replace(work, "FILE"))
    cut.join()
print(json.dumps(outcomes))
"""


def test_a_profile_cut_by_another_thread_during_the_scan_never_kills_the_reader(tmp_path):
    source = tmp_path / "big.xplane.pb"
    write_training(source, num_events=400_000, steps=20, allocators=("GPU_0_bfc", "GPU_1_bfc"))
    child = subprocess.run(
        [sys.executable, "-c", _RACE, str(source), str(tmp_path / "cut.xplane.pb"), "12"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr  # not -SIGBUS
    outcomes = json.loads(child.stdout)
    third = source.stat().st_size // 3
    changed = f"FILE: the file changed while it was read: truncated to {third} bytes"
    assert changed in outcomes, outcomes  # at least one cut landed during a read
    # Cut before the file was opened, the scan finds a profile cut short; after its read, the profile is whole.
    assert all(o in (changed, "whole") or o.startswith("FILE: ") for o in outcomes), outcomes
