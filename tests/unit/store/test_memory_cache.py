"""The analysis cache: keyed by file identity, one computation per key however many ask, bounded by an LRU."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tb_leakfinder.analyses.pipeline import HostAnalysis
from tb_leakfinder.engine.engine import Engine, _weight
from tb_leakfinder.model.memory import EVENT_COLUMNS
from tb_leakfinder.store.memory_cache import ComputeCache
from tb_leakfinder.testing.plugin_client import make_client
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session

MIB = 1 << 20


def _write_run(logdir: Path, run: str, events: int, seed: int = 0) -> Path:
    builder, _ = synthesize_training(num_events=events, steps=8, allocators=("GPU_0_bfc",), seed=seed)
    (path,) = write_session(logdir, run, "session", {"host0": builder})
    return Path(path)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cache_logdir")
    for i in range(3):
        _write_run(root, f"run{i}", 30_000, seed=i)
    return root


def test_parallel_cold_requests_compute_once(logdir):
    engine = Engine.for_logdir(str(logdir))
    run = engine.run("run0/session")
    barrier = threading.Barrier(16)
    results: list[object] = []
    reports: list[dict] = []

    def ask() -> None:
        barrier.wait()
        results.append(engine.host(run, "host0"))
        reports.append(engine.run_report(run))

    threads = [threading.Thread(target=ask) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert engine.computations == 1
    assert len(results) == 16 and all(r is results[0] for r in results)
    assert all(r == reports[0] for r in reports) and reports[0]["verdict"] == "leak"


def test_a_changed_file_is_recomputed(tmp_path):
    path = _write_run(tmp_path, "r", 2_000)
    engine = Engine.for_logdir(str(tmp_path))
    run = engine.run("r/session")
    before = engine.host(run, "host0").unwrap()
    assert engine.host(run, "host0").unwrap() is before and engine.computations == 1

    builder, planted = synthesize_training(num_events=3_000, steps=8, allocators=("GPU_0_bfc",))
    builder.write(path)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))
    after = engine.host(run, "host0").unwrap()
    assert engine.computations == 2

    def num_events(analysis: HostAnalysis) -> int:
        return sum(len(a.events) for a in analysis.allocators)

    assert num_events(after) == planted["num_events"] != num_events(before)

    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns + 10**9))  # same bytes, new mtime
    engine.host(run, "host0")
    assert engine.computations == 3


def test_the_plugin_flag_bounds_the_cache(logdir):
    probe = Engine.for_logdir(str(logdir))
    weight = _weight(probe.host(probe.run("run0/session"), "host0"))
    event_bytes = sum(np.dtype(dtype).itemsize for dtype in EVENT_COLUMNS.values())
    assert weight > 30_000 * event_bytes  # the columns of 30,000 events, and their buffers on top
    cache_mb = (weight * 3 // 2) // MIB + 1  # room for one analysis, not two
    _, plugin = make_client(str(logdir), leakfinder_cache_mb=cache_mb)
    engine = plugin.engine
    assert engine._cache.max_weight == cache_mb * MIB
    for i in range(3):
        engine.run_report(engine.run(f"run{i}/session"))
    assert engine.computations == 3 and len(engine._cache) == 1
    engine.run_report(engine.run("run2/session"))  # the most recent is kept
    assert engine.computations == 3
    engine.run_report(engine.run("run0/session"))  # the oldest was evicted
    assert engine.computations == 4 and len(engine._cache) == 1


def test_lru_evicts_least_recently_used_past_the_limit():
    cache: ComputeCache[str] = ComputeCache(max_weight=10)
    for key in "abc":
        cache.get(key, lambda k=key: k * 2, lambda v: 4)
    assert len(cache) == 2 and cache.computations == 3  # a went: 12 > 10
    cache.get("b", lambda: "never", lambda v: 4)  # b is now the most recent
    cache.get("d", lambda: "dd", lambda v: 4)
    assert cache.get("b", lambda: "never", lambda v: 4) == "bb"
    assert cache.get("c", lambda: "c again", lambda v: 4) == "c again"  # c was the least recent
    assert cache.computations == 5


def test_a_value_larger_than_the_limit_is_still_served():
    cache: ComputeCache[str] = ComputeCache(max_weight=10)
    assert cache.get("big", lambda: "x", lambda v: 100) == "x"
    assert len(cache) == 1
    cache.get("next", lambda: "y", lambda v: 1)
    assert len(cache) == 1 and cache.get("next", lambda: "z", lambda v: 1) == "y"


def test_an_error_reaches_every_waiter_and_is_not_cached():
    cache: ComputeCache[str] = ComputeCache(max_weight=10)
    started, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def failing() -> str:
        started.set()
        release.wait(10)
        raise ValueError("broken")

    def ask(compute) -> None:
        try:
            cache.get("k", compute, lambda v: 1)
        except ValueError as exc:
            errors.append(exc)

    first = threading.Thread(target=ask, args=(failing,))
    first.start()
    started.wait(10)
    waiters = [threading.Thread(target=ask, args=(failing,)) for _ in range(4)]
    for t in waiters:
        t.start()
    deadline = time.monotonic() + 10
    while cache._pending["k"].waiters < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    for t in [first, *waiters]:
        t.join()
    # One computation: its error reached the caller that ran it and the 4 that waited.
    assert len(errors) == 5 and len({id(e) for e in errors}) == 1 and cache.computations == 1
    assert len(cache) == 0  # not cached: the next caller computes again
    assert cache.get("k", lambda: "ok", lambda v: 1) == "ok" and cache.computations == 2
