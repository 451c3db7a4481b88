"""`tb-leakfinder watch` of real jobs that serve their profiler, each in a process of its own (as is the watch).

A TensorFlow CPU job that keeps one tensor a step, the same job clean (tests/support/capture_programs.py's
watched_tf_job, which the history across captures reuses), an address with no server, and Ctrl-C of a watched
JAX job. Without the framework installed these tests skip, unless TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI).
"""

from __future__ import annotations

import concurrent.futures
import os
import select
import shutil
import signal
import socket
import subprocess
import sys

import pytest

import tb_leakfinder
from tb_leakfinder import proto
from tb_leakfinder.engine.engine import Engine
from tests.support.capture_programs import (
    SLOW_KEEP_EVERY,
    WATCH_COUNT,
    WatchedJob,
    need,
    program_env,
    run_watch,
    served_job,
    watched_tf_job,
)
from tests.support.python_tracer_captures import python_events


@pytest.fixture(scope="module")
def watched_jobs(tmp_path_factory) -> dict[str, WatchedJob]:
    """The leaking and the clean job, watched at the same time (some 20 s: they mostly wait for the watch)."""
    need("tensorflow")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        jobs = {
            name: pool.submit(watched_tf_job, tmp_path_factory.mktemp(f"watched_{name}"), name == "leak")
            for name in ("leak", "clean")
        }
        return {name: job.result() for name, job in jobs.items()}


@pytest.fixture
def leaking_job(watched_jobs) -> WatchedJob:
    return watched_jobs["leak"]


@pytest.fixture
def clean_job(watched_jobs) -> WatchedJob:
    return watched_jobs["clean"]


def session_hosts(job: WatchedJob) -> list[dict]:
    """Each session's own report (its one host), after checking what the watch wrote and said."""
    assert job.watch.returncode == 0, job.watch.stderr[-3000:]
    assert len(job.sessions) == WATCH_COUNT
    assert [p.parent for p in job.profiles] == job.sessions  # one profile a session
    address = job.profiles[0].name.removesuffix(".xplane.pb").replace("_", ":")
    assert all(p.name == job.profiles[0].name for p in job.profiles)  # <host>_<port>.xplane.pb, named by the address
    lines = job.watch.stdout.splitlines()
    summary = f"{WATCH_COUNT} captures of {address} in {job.logdir} (--count {WATCH_COUNT} reached)"
    assert lines[-1 - WATCH_COUNT :] == [summary, *map(str, job.sessions)]
    assert [p.name for p in (job.logdir / "plugins").iterdir()] == ["profile"]  # no staging folder left
    hosts = []
    for session in job.sessions:
        # Python events (python_tracer_level 1): the job's step function, once a step.
        assert python_events(session)[job.step_function] >= 3
        (run,) = tb_leakfinder.analyze(str(session), cache=False)["runs"]
        (host,) = run["hosts"]
        assert host["allocators"], "memory events (host_tracer_level 2)"
        assert host["num_steps"] >= 5 and "steps from step_num markers" in host["reason"]
        hosts.append(host)
    return hosts


def test_watching_a_leaking_tensorflow_job_gives_sessions_that_each_find_the_leak(leaking_job):
    job = leaking_job
    for host in session_hosts(job):
        assert host["verdict"] == "leak", host["reason"]
        top = host["allocators"][0]["families"][0]
        assert (top["op"], top["shape"], top["dtype"], top["region"], top["kind"]) == (
            job.leak_op,
            job.leak_shape,
            "float",
            "output",
            "growing",
        )
        # One kept tensor a step. The window opens and closes at any moment: a step cut at either end keeps its
        # tensor in the window without its whole marker (seen: 20 tensors for 19 steps).
        assert host["num_steps"] <= top["count"] <= host["num_steps"] + 2
        assert top["bytes_per_step"] == pytest.approx(job.leak_bytes_per_step, rel=0.05)
        assert top["where"].endswith(" in served_step")  # named by the job's Python function


def test_watching_a_clean_tensorflow_job_finds_no_leak(clean_job):
    assert clean_job.leak_bytes_per_step == 0
    for host in session_hosts(clean_job):
        assert host["verdict"] == "no_leak", host["reason"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


def test_watching_an_address_with_no_server_logs_each_failure_until_the_timeout(tmp_path):
    need("xprof")
    address = f"localhost:{free_port()}"
    done = run_watch(
        address, "--logdir", str(tmp_path), "--every", "1s", "--duration", "500ms", "--count", "10", "--timeout", "3500ms"
    )
    # --timeout came before --count 10 attempts: exit 1, and a summary; never a traceback.
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    failures = done.stderr.splitlines()
    assert len(failures) >= 3
    for line in failures:
        assert line.startswith("tb-leakfinder watch: ") and " capture failed: " in line
        assert f"{address} returned UNAVAILABLE" in line  # the client's reason: nothing listens there
    assert (
        done.stdout.splitlines()[-1] == f"0 captures of {address} in {tmp_path}, {len(failures)} failed (--timeout 3.5s reached)"
    )
    assert not (tmp_path / "plugins" / "profile").exists()


def test_ctrl_c_between_captures_stops_the_watch_and_says_what_it_captured(tmp_path):
    need("jax")
    command = [sys.executable, "-m", "tb_leakfinder.views.cli", "watch"]
    with served_job("jax") as port:  # JAX's profiler server (jax.profiler.start_server)
        args = [f"localhost:{port}", "--logdir", str(tmp_path), "--every", "30s", "--duration", "500ms"]
        watch = subprocess.Popen([*command, *args], env=program_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        while not any(" capture 1: " in line for line in lines):
            ready, _, _ = select.select([watch.stdout], [], [], 60)
            assert ready, "no capture in 60 s"
            lines.append(watch.stdout.readline())
        watch.send_signal(signal.SIGINT)  # 30 s before the next capture
        out, err = watch.communicate(timeout=30)
    assert watch.returncode == 0, err
    assert "Traceback" not in err
    (session,) = (tmp_path / "plugins" / "profile").iterdir()
    assert out.splitlines()[-2:] == [f"1 capture of localhost:{port} in {tmp_path} (stopped by SIGINT)", str(session)]
    assert list(session.glob("*.xplane.pb"))


def test_the_history_of_the_watched_captures_finds_the_slow_leak_at_its_rate(leaking_job, clean_job):
    """Issue #22: the captures of one job as one history (the watch's sessions are the logdir's top run, "")."""
    history = Engine.for_path(str(leaking_job.logdir)).history("")
    assert history["num_captures"] == WATCH_COUNT and history["verdict"] == "leak", history["reason"]
    (series,) = history["series"]
    assert series["bytes_per_step"] == pytest.approx(leaking_job.leak_bytes_per_step, rel=0.10)
    culprit = series["families"][0]
    assert culprit["label"].startswith(f"{leaking_job.leak_op} {leaking_job.leak_shape} output")
    assert culprit["growing_captures"] == WATCH_COUNT and "served_step" in culprit["where"]
    clean = Engine.for_path(str(clean_job.logdir)).history("")
    assert clean["verdict"] == "no_leak", clean["reason"]


def profile_start_s(path) -> float:
    """The Task Environment plane's profile_start_time, read with protobuf (not with the reader under test)."""
    space = proto.XSpace().FromString(path.read_bytes())
    (plane,) = [p for p in space.planes if p.name == "Task Environment"]
    names = {key: m.name for key, m in plane.stat_metadata.items()}
    (start,) = [s.uint64_value or s.int64_value for s in plane.stats if names[s.metadata_id] == "profile_start_time"]
    return start / 1e9


def test_sessions_copied_without_their_times_keep_the_profiles_own_times_rate_and_order(leaking_job, tmp_path):
    """Issue #30: sessions copied as `cp` does (every mtime the copy's), into folders whose names sort backwards:
    the history's times, order and rate per hour are the profiles' own."""
    job = leaking_job
    copies = tmp_path / "copies"
    for k, profile in enumerate(job.profiles):
        folder = copies / "job" / "plugins" / "profile" / f"copy_{len(job.profiles) - k}"
        folder.mkdir(parents=True)
        shutil.copy(profile, folder / profile.name)
    for path in copies.rglob("*"):
        os.utime(path, (1_800_000_000, 1_800_000_000))
    history = Engine.for_path(str(copies)).history("job")
    assert history["verdict"] == "leak", history["reason"]
    (series,) = history["series"]
    captures = series["captures"]
    assert [c["capture"] for c in captures] == [f"job/copy_{len(job.profiles) - k}" for k in range(len(job.profiles))]
    assert {c["time_source"] for c in captures} == {"profile"} and series["time_note"] is None
    starts = [profile_start_s(p) for p in job.profiles]
    assert [c["time_s"] for c in captures] == pytest.approx(starts, abs=0.01)
    # The truth: the kept bytes per step at the job's pace, steps over the profiles' own start times.
    steps_per_hour = (captures[-1]["first_step"] - captures[0]["first_step"]) / (starts[-1] - starts[0]) * 3600
    assert series["bytes_per_hour"] == pytest.approx(job.leak_bytes_per_step * steps_per_hour, rel=0.10)


@pytest.fixture(scope="module")
def slow_job(tmp_path_factory) -> WatchedJob:
    need("tensorflow")
    return watched_tf_job(tmp_path_factory.mktemp("watched_slow"), True, SLOW_KEEP_EVERY)


def test_a_slow_leak_kept_every_50th_step_is_named_by_its_family_and_line_across_the_captures(slow_job):
    """Issue #30: one tensor kept every 50th step, windows of some 80 steps: no capture sees it grow (one or two
    kept in each), the history names it by what each window kept, at the rate the captures grew."""
    job = slow_job
    assert job.watch.returncode == 0, job.watch.stderr[-3000:]
    assert len(job.sessions) == WATCH_COUNT
    for session in job.sessions:
        (run,) = tb_leakfinder.analyze(str(session), cache=False)["runs"]
        (host,) = run["hosts"]
        (mine,) = [g for a in host["allocators"] for g in a["families"] if (g["op"], g["shape"]) == (job.leak_op, job.leak_shape)]
        assert mine["kind"] != "growing" and 1 <= mine["count"] <= 2, mine
    history = Engine.for_path(str(job.logdir)).history("")
    assert history["verdict"] == "leak", history["reason"]
    (series,) = history["series"]
    culprit = series["families"][0]
    assert culprit["label"].startswith(f"{job.leak_op} {job.leak_shape} output") and culprit["agrees"]
    assert culprit["growing_captures"] == WATCH_COUNT and len(culprit["captures"]) == WATCH_COUNT
    assert culprit["where"].endswith(" in served_step") and "capture_programs.py:" in culprit["where"]
    assert f"from {culprit['label']}, " in history["reason"] and culprit["where"] in culprit["label"]
    # One rate in the sentence: the history's, never the family's again beside it.
    assert f", in {WATCH_COUNT} captures ({', '.join(s.name for s in job.sessions)})" in history["reason"]
    assert history["reason"].count(" per step") == 1
    assert series["bytes_per_step"] == pytest.approx(job.leak_bytes_per_step, rel=0.25)
    assert series["unexplained"] is None
