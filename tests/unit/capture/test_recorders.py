"""The recorder seam and the companion file, against the fake JAX of tests/support/fake_jax.py: the calls a companion
recorder gets, the file written beside each window's profile, a recorder that fails, the switches, the size bound.

The holder finder, a real companion recorder on real frameworks, is tested in tests/integration/test_holders.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sys

import pytest

import tb_leakfinder
from tb_leakfinder.capture import CaptureWarning, companion
from tb_leakfinder.capture.recorder import Section, Window
from tb_leakfinder.capture.recorders import RECORDERS
from tb_leakfinder.capture.sessions import Staging
from tb_leakfinder.errors import CaptureError
from tb_leakfinder.model.recordings import MAX_COMPANION_BYTES, RECORDINGS_FORMAT, RECORDINGS_VERSION
from tests.support.fake_jax import install_fake_jax

# A line of this file, whose text the companion file's `sources` must hold.
SOURCE_LINE = sys._getframe().f_lineno


class Tally:
    """A companion recorder that writes what it was called with: the calls, in order, and each window."""

    name = "tally"

    def __init__(self, fail_in: str = "", available: bool = True) -> None:
        self.calls: list[str] = []
        self.windows: list[Window] = []
        self.fail_in = fail_in
        self._available = available

    def _call(self, what: str) -> None:
        self.calls.append(what)
        if what == self.fail_in:
            raise RuntimeError(f"broken in {what}")

    def available(self) -> bool:
        return self._available

    def start(self, directory: pathlib.Path) -> None:
        assert directory.is_dir()
        self._call("start")

    @contextlib.contextmanager
    def _step(self, step_num: int):
        self._call(f"enter {step_num}")
        yield
        self._call(f"exit {step_num}")

    def step(self, step_num: int) -> contextlib.AbstractContextManager[object]:
        return self._step(step_num)

    def stop(self) -> None:
        self._call("stop")

    def section(self, window: Window) -> Section | None:
        self._call("section")
        assert window.profile.is_file(), "the profile is written before the sections are asked for"
        self.windows.append(window)
        return Section({"steps": list(window.steps)}, lines=(f"{__file__}:{SOURCE_LINE}",))


@pytest.fixture
def fake_jax(monkeypatch):
    return install_fake_jax(monkeypatch)


def run(cap: tb_leakfinder.Capture, steps) -> None:
    with cap:
        for i in steps:
            with cap.step(i):
                pass


def test_a_companion_recorder_writes_beside_each_windows_profile(fake_jax, tmp_path):
    tally = Tally()
    cap = tb_leakfinder.capture(tmp_path, start=1, count=2, every=4, framework="jax", recorders=[tally])
    run(cap, range(7))
    assert tally.calls == [
        *("start", "enter 1", "exit 1", "enter 2", "exit 2", "stop", "section"),
        *("start", "enter 5", "exit 5", "enter 6", "exit 6", "stop", "section"),
    ]
    assert [w.steps for w in tally.windows] == [(1, 2), (5, 6)]
    assert cap.warnings == []
    for session in cap.sessions:
        # Published with its profile, in the session folder: <host>.xplane.pb -> <host>.leakfinder.json.
        assert session.recordings == session.path / "host.leakfinder.json"
        assert sorted(p.name for p in session.path.iterdir()) == ["host.leakfinder.json", "host.xplane.pb"]
        doc = json.loads(session.recordings.read_text())
        assert doc == {
            "format": RECORDINGS_FORMAT,
            "version": RECORDINGS_VERSION,
            "host": "host",
            "pid": os.getpid(),
            "framework": "jax",
            "tally": {"steps": list(session.steps)},
            "sources": {f"{__file__}:{SOURCE_LINE}": "SOURCE_LINE = sys._getframe().f_lineno"},
        }


@pytest.mark.parametrize("broken", ["start", "enter 1", "exit 2", "stop", "section"])
def test_a_recorder_that_fails_is_a_warning_and_the_loop_goes_on(fake_jax, tmp_path, broken):
    tally = Tally(fail_in=broken)
    cap = tb_leakfinder.capture(tmp_path, start=1, count=2, framework="jax", recorders=[tally])
    with pytest.warns(CaptureWarning, match=f"the tally recorder failed in .*broken in {broken}"):
        run(cap, range(4))
    assert len(cap.warnings) == 1 and "RuntimeError: broken in" in cap.warnings[0]
    (session,) = cap.sessions
    assert fake_jax.logdir is None and session.steps == (1, 2), "the profile is whole"
    assert (session.recordings is None) == (broken == "section")


def test_a_step_that_raises_passes_through_the_recorders(fake_jax, tmp_path):
    tally = Tally()
    cap = tb_leakfinder.capture(tmp_path, framework="jax", recorders=[tally])
    with pytest.raises(ZeroDivisionError), cap, cap.step(0):
        1 / 0  # noqa: B018 - the user's own error
    assert tally.calls == ["start", "enter 0", "stop", "section"]
    assert cap.warnings == [], "the step's own error is no recorder's failure"


def test_recorders_can_be_turned_off_and_are_checked(fake_jax, tmp_path):
    cap = tb_leakfinder.capture(tmp_path, framework="jax", recorders=())
    run(cap, [0])
    assert cap.sessions[0].recordings is None
    assert not list(cap.sessions[0].path.glob("*.leakfinder.json"))
    with pytest.raises(CaptureError, match=r"no recorder is named 'tallies'; the recorders are "):
        tb_leakfinder.capture(tmp_path, framework="jax", recorders=["tallies"])
    with pytest.raises(CaptureError, match="no recorder is named 'jax'"):  # a profiler is the framework's, not chosen
        tb_leakfinder.capture(tmp_path, framework="jax", recorders=["jax"])
    with pytest.raises(CaptureError, match="each recorder at most once"):
        tb_leakfinder.capture(tmp_path, framework="jax", recorders=[Tally(), Tally()])
    off = tb_leakfinder.capture(tmp_path / "off", framework="jax", recorders=[Tally(available=False)])
    with pytest.warns(CaptureWarning, match="the tally recorder cannot record with jax here: it is off"):
        run(off, [0])
    assert off.sessions[0].recordings is None


def test_every_framework_has_one_profiler_in_the_registry():
    profilers = [entry.name for entry in RECORDERS if entry.role == "profiler"]
    assert sorted(profilers) == ["jax", "tensorflow", "torch"]
    assert len({entry.name for entry in RECORDERS}) == len(RECORDERS)


def test_the_companion_name_replaces_the_profiles_suffix():
    assert companion.companion_path(pathlib.Path("s/host0.xplane.pb")) == pathlib.Path("s/host0.leakfinder.json")
    trace = pathlib.Path("run/vm_12.1765.pt.trace.json.gz")
    assert companion.companion_path(trace) == pathlib.Path("run/vm_12.1765.leakfinder.json")


def test_a_pytorch_trace_is_published_after_its_companion(tmp_path):
    staging = Staging(tmp_path)
    (staging.path / "w_1.5.pt.trace.json.gz").write_bytes(b"trace")
    (staging.path / "w_1.5.leakfinder.json").write_text("{}")
    moved = []
    real_rename = os.rename

    def rename(source, target):
        moved.append(pathlib.Path(source).name)
        real_rename(source, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "rename", rename)
        assert staging.publish_file(".pt.trace.json.gz") == tmp_path / "w_1.5.pt.trace.json.gz"
    assert moved == ["w_1.5.leakfinder.json", "w_1.5.pt.trace.json.gz"]
    staging.remove()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w_1.5.leakfinder.json", "w_1.5.pt.trace.json.gz"]


def test_the_file_stays_under_its_bound_dropping_addresses_then_sources():
    holders = [{"path": f"h{i}", "count": 1000, "addresses": list(range(1 << 40, (1 << 40) + 1000))} for i in range(100)]
    sources = {f"/src/train.py:{i}": "x = y" for i in range(10)}
    doc = companion.document("host", "torch", {"holders": {"holders": holders}}, sources)
    small = companion.encode(json.loads(json.dumps(doc)), limit=MAX_COMPANION_BYTES)
    assert len(small) <= MAX_COMPANION_BYTES
    kept = json.loads(small)
    assert kept["sources"] == sources, "addresses go first"
    assert [h["path"] for h in kept["holders"]["holders"]] == [f"h{i}" for i in range(100)]
    assert all(h["count"] == 1000 and len(h["addresses"]) < 1000 for h in kept["holders"]["holders"])
    tiny = json.loads(companion.encode(json.loads(json.dumps(doc)), limit=1500))
    assert tiny["sources"] == {} and all(h["addresses"] == [] for h in tiny["holders"]["holders"])
    assert len(json.dumps(tiny, separators=(",", ":"))) <= 1500


def test_the_file_is_written_whole(tmp_path):
    path = tmp_path / "host.leakfinder.json"
    path.write_text("old")
    companion.write(path, b"new")
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == [path.name], "no temporary file is left"


def test_a_holder_search_that_fails_is_written_as_failed_and_warned(fake_jax, tmp_path):
    from tb_leakfinder.capture.holders.finder import HolderFinder

    jax = sys.modules["jax"]
    jax.Array = type("Array", (), {})  # what the JAX matcher asks of JAX
    jax.live_arrays = list
    cap = tb_leakfinder.capture(tmp_path, framework="jax", recorders=[HolderFinder("jax", jax)])
    with pytest.warns(CaptureWarning, match=r"holders: the holder search failed \(LeakfinderError: .*host.xplane.pb"):
        run(cap, [0, 1])  # the fake profiler's file is no XSpace: reading it back fails
    (session,) = cap.sessions
    assert session.steps == (0, 1)
    search = json.loads(session.recordings.read_text())["holders"]
    assert search["status"] == "failed" and search["holders"] == []
    assert cap.warnings == [f"holders: {search['warning']}"]
