"""Periodic capture (`every`), JAX's device memory profiles (`memory_profile_every`) and the staging of sessions,
against a fake JAX whose profiler names a session by the second it is written, as the real ones do.

The real TensorFlow, Keras and JAX runs are in tests/integration/test_capture.py.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import sys
import types

import pytest

import tb_leakfinder
from tb_leakfinder.capture import CaptureError
from tb_leakfinder.capture.sessions import STAGING_PREFIX, Staging, new_session_id
from tests.support.fake_jax import STAMP, FakeJaxProfiler, install_fake_jax


@pytest.fixture
def fake_jax(monkeypatch) -> FakeJaxProfiler:
    return install_fake_jax(monkeypatch)


def marks(session_dir: pathlib.Path) -> list[int]:
    return json.loads((session_dir / "host.xplane.pb").read_text())


def run(cap: tb_leakfinder.Capture, steps) -> None:
    with cap:
        for i in steps:
            with cap.step(i):
                pass


def test_every_captures_each_window_as_a_session_of_its_own(fake_jax, tmp_path):
    cap = tb_leakfinder.capture(tmp_path, start=2, count=3, every=5, framework="jax")
    run(cap, range(17))
    # Session k covers steps 2+5k .. 4+5k; all within a second or two, yet each is a folder of its own.
    assert [s.steps for s in cap.sessions] == [(2, 3, 4), (7, 8, 9), (12, 13, 14)]
    assert [marks(s.path) for s in cap.sessions] == [[2, 3, 4], [7, 8, 9], [12, 13, 14]]
    assert cap.steps == [2, 3, 4, 7, 8, 9, 12, 13, 14]
    folders = sorted((tmp_path / "plugins" / "profile").iterdir())
    assert folders == [s.path for s in cap.sessions]  # names sort in capture order
    assert [p.name for p in folders] == [STAMP, f"{STAMP}_2", f"{STAMP}_3"]
    assert cap.session_dir == cap.sessions[-1].path
    assert [p.name for p in (tmp_path / "plugins").iterdir()] == ["profile"]  # no staging folder left
    assert cap.window() == "steps 2..4 and every 5 steps after"


def test_a_window_the_loop_cuts_short_is_still_a_session(fake_jax, tmp_path):
    cap = tb_leakfinder.capture(tmp_path, start=0, count=2, every=4, framework="jax")
    run(cap, range(9))  # windows 0-1, 4-5, 8 (the loop ends within it)
    assert [s.steps for s in cap.sessions] == [(0, 1), (4, 5), (8,)]


def test_a_step_of_the_next_window_ends_the_last_ones_session(fake_jax, tmp_path):
    cap = tb_leakfinder.capture(tmp_path, start=0, count=3, every=10, framework="jax")
    run(cap, [0, 1, 11, 12, 13, 20])  # the loop skips step 2 (window 0's last) and step 10
    assert [s.steps for s in cap.sessions] == [(0, 1), (11, 12), (20,)]
    assert [marks(s.path) for s in cap.sessions] == [[0, 1], [11, 12], [20]]


def test_count_equal_to_every_records_back_to_back(fake_jax, tmp_path):
    cap = tb_leakfinder.capture(tmp_path, start=1, count=2, every=2, framework="jax")
    run(cap, range(6))
    assert [s.steps for s in cap.sessions] == [(1, 2), (3, 4), (5,)]


def test_without_every_one_session_as_before(fake_jax, tmp_path):
    cap = tb_leakfinder.capture(tmp_path, start=3, count=4, framework="jax")
    run(cap, range(12))
    assert [s.steps for s in cap.sessions] == [(3, 4, 5, 6)]
    # A second capture into the same logdir within the same second is a session of its own too.
    again = tb_leakfinder.capture(tmp_path, count=1, framework="jax")
    run(again, range(2))
    assert (again.session_dir.name, marks(again.session_dir)) == (f"{STAMP}_2", [0])
    assert marks(cap.session_dir) == [3, 4, 5, 6]


def test_reports_are_each_sessions(fake_jax, tmp_path, monkeypatch):
    monkeypatch.setattr(tb_leakfinder.api, "analyze", lambda path: {"path": path})
    cap = tb_leakfinder.capture(tmp_path, count=1, every=2, framework="jax")
    run(cap, range(5))
    assert cap.report() == {"path": str(cap.sessions[-1].path)}
    assert cap.reports() == [{"path": str(s.path)} for s in cap.sessions]
    assert len(cap.reports()) == 3


def test_memory_profile_every_saves_jax_device_memory_profiles(fake_jax, tmp_path):
    cap = tb_leakfinder.capture(tmp_path, start=1, count=2, framework="jax", memory_profile_every=3)
    run(cap, range(11))
    # From `start` on, every 3 steps, past the profile's window too; written whole (no .partial left).
    folder = tmp_path / "memory_profiles"
    assert cap.memory_profiles == [folder / f"step_{n}.prof" for n in (1, 4, 7, 10)]
    assert sorted(p.name for p in folder.iterdir()) == ["step_1.prof", "step_10.prof", "step_4.prof", "step_7.prof"]
    assert all(gzip.decompress(p.read_bytes()) == b"a pprof Profile" for p in cap.memory_profiles)
    assert [s.steps for s in cap.sessions] == [(1, 2)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"every": 5}, "every=5 needs count, the steps of each capture"),
        ({"every": 2, "count": 3}, r"count \(3\) must be at most every \(2\)"),
        ({"every": 0, "count": 1}, "every must be at least 1"),
        ({"memory_profile_every": 0}, "memory_profile_every must be at least 1"),
    ],
)
def test_periodic_arguments_are_checked(fake_jax, tmp_path, kwargs, message):
    with pytest.raises(CaptureError, match=message):
        tb_leakfinder.capture(tmp_path, framework="jax", **kwargs)


def test_memory_profiles_are_jaxs_only(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
    with pytest.raises(CaptureError, match="memory_profile_every needs JAX"):
        tb_leakfinder.capture(tmp_path, framework="tensorflow", memory_profile_every=2)


def test_staging_publishes_a_session_whole_under_a_free_name(tmp_path):
    taken = tmp_path / "plugins" / "profile" / STAMP
    taken.mkdir(parents=True)
    staging = Staging(tmp_path)
    assert staging.path.parent == tmp_path / "plugins" and staging.path.name.startswith(STAGING_PREFIX)
    assert staging.publish() is None  # nothing written yet
    written = staging.path / "plugins" / "profile" / STAMP
    written.mkdir(parents=True)
    (written / "h.xplane.pb").write_bytes(b"x")
    published = staging.publish()
    assert published == taken.with_name(f"{STAMP}_2")
    assert (published / "h.xplane.pb").read_bytes() == b"x"
    staging.remove()
    assert not staging.path.exists()
    assert new_session_id(tmp_path, STAMP) == f"{STAMP}_3"
    assert new_session_id(tmp_path, "2026_12_01_10_00_01") == "2026_12_01_10_00_01"
