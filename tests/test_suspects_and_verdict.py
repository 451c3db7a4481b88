"""Leak suspects' kinds and the verdict, on training loops built here."""

from __future__ import annotations

import itertools

import pytest

from tb_leakfinder.analyses.host import analyze_host
from tb_leakfinder.read.xspace_proto import decode
from tests.synthetic import ProfileBuilder

KIB = 1024
STEP_PS = 1_000_000


class Loop:
    """A training loop: each step allocates and frees temporaries; hooks add what stays."""

    def __init__(self, steps: int = 20) -> None:
        self.b = ProfileBuilder()
        self.steps = steps
        self.addr = itertools.count(0x10_0000, 0x1_0000)

    def run(self, keep=lambda step, t: None, markers: bool = True) -> ProfileBuilder:
        for step in range(self.steps):
            t0 = step * STEP_PS
            if markers:
                self.b.step(step, t0, t0 + STEP_PS - 1)
            tmp = next(self.addr)
            self.b.alloc(t0 + 10, tmp, 256 * KIB, op="MatMul", shape="[64,1024]", region="temp")
            keep(step, t0 + 20)
            self.b.free(t0 + 30, tmp, 256 * KIB)
        return self.b

    def alloc(self, t: int, nbytes: int, op: str, shape: str, region: str = "output") -> int:
        a = next(self.addr)
        self.b.alloc(t, a, nbytes, op=op, shape=shape, region=region)
        return a


def _analyze(builder: ProfileBuilder):
    (a,) = analyze_host(decode(builder.to_bytes(), "host0", "memory.xplane.pb")).allocators
    return a


def _kinds(a) -> dict[str, str]:
    s = a.events.strings
    return {s[g.op]: g.kind for g in a.suspects.groups}


def test_growing_leak_is_found_with_its_rate():
    loop = Loop(20)
    b = loop.run(lambda step, t: loop.alloc(t, 64 * KIB, "Concat", "[16,1024]"))
    a = _analyze(b)
    assert a.verdict.verdict == "leak"
    (top, *_) = a.suspects.groups
    assert a.events.strings[top.op] == "Concat" and top.kind == "growing"
    assert top.bytes_per_step == 64 * KIB and top.steps == 20 and top.score == 1.0
    assert a.verdict.reason == (
        "Leak: +64 KiB per step from Concat [16,1024] output, 20 of 20 steps never freed (20 steps from step_num markers)"
    )
    assert a.summary.growth_bytes_per_step == pytest.approx(64 * KIB)


def test_weights_made_once_are_persistent():
    loop = Loop(20)
    b = loop.run(
        lambda step, t: (
            [loop.alloc(t, 4096 * KIB, "VarHandleOp", "[1024,1024]", "persist") for _ in range(3)] if step == 0 else None
        )
    )
    a = _analyze(b)
    assert _kinds(a) == {"VarHandleOp": "persistent"}
    assert a.verdict.verdict == "no_leak"
    assert a.suspects.groups[0].bytes_per_step == 0


def test_rolling_cache_is_bounded():
    loop = Loop(20)
    window: list[int] = []

    def keep(step: int, t: int) -> None:
        window.append(loop.alloc(t, 32 * KIB, "CacheEntry", "[8,1024]"))
        if len(window) > 4:  # keeps the last four steps
            loop.b.free(t + 1, window.pop(0), 32 * KIB)

    a = _analyze(loop.run(keep))
    assert _kinds(a) == {"CacheEntry": "bounded"}
    assert a.suspects.groups[0].count == 4
    assert a.verdict.verdict == "no_leak"


def test_cache_that_fills_then_stops_is_bounded():
    loop = Loop(20)
    b = loop.run(lambda step, t: loop.alloc(t, 32 * KIB, "Lookup", "[8,1024]") if step < 8 else None)
    a = _analyze(b)
    assert _kinds(a) == {"Lookup": "bounded"}
    assert a.verdict.verdict == "no_leak"


def test_last_step_outputs_are_window_end():
    loop = Loop(20)
    b = loop.run(lambda step, t: loop.alloc(t, 8 * KIB, "Loss", "[]") if step == 19 else None)
    a = _analyze(b)
    assert _kinds(a) == {"Loss": "window_end"}
    assert a.verdict.verdict == "no_leak"


def test_leak_ranks_above_persistent_and_window_end():
    loop = Loop(30)

    def keep(step: int, t: int) -> None:
        if step == 0:
            loop.alloc(t, 64 * 1024 * KIB, "Weights", "[4096,4096]", "persist")  # far more bytes
        if step == 29:
            loop.alloc(t + 1, 8 * KIB, "Loss", "[]")
        loop.alloc(t + 2, 4 * KIB, "Append", "[1024]")

    a = _analyze(loop.run(keep))
    assert a.events.strings[a.suspects.groups[0].op] == "Append"
    assert a.verdict.verdict == "leak"


def test_too_few_steps_is_inconclusive():
    loop = Loop(2)
    a = _analyze(loop.run(lambda step, t: loop.alloc(t, 64 * KIB, "Concat", "[16,1024]")))
    assert a.verdict.verdict == "inconclusive"
    assert a.verdict.reason.startswith("Inconclusive: 2 steps from step_num markers, too few")
    assert "capture at least 3 steps" in a.verdict.reason and "Concat [16,1024] output" in a.verdict.reason


def test_without_step_information_time_windows_find_steady_growth():
    loop = Loop(10)
    a = _analyze(loop.run(lambda step, t: loop.alloc(t, 64 * KIB, "Concat", "[16,1024]"), markers=False))
    assert a.verdict.verdict == "leak"
    assert "10 of 10 windows never freed (10 equal time windows of" in a.verdict.reason


@pytest.mark.parametrize("every", [3, 10])
def test_periodic_leak_is_growing(every):
    """Kept every Nth step (e.g. metrics appended when logging) still grows without bound."""
    loop = Loop(40)
    b = loop.run(lambda step, t: loop.alloc(t, 96 * KIB, "Pack", "[24,1024]") if step % every == 0 else None)
    a = _analyze(b)
    (top,) = a.suspects.groups
    assert top.kind == "growing" and a.verdict.verdict == "leak"
    kept = len(range(0, 40, every))
    assert top.steps == kept
    assert top.bytes_per_step == pytest.approx(96 * KIB / every)  # fitted: not kept * 96 KiB / (last - first + 1)
    assert f"{kept} of 40 steps" in a.verdict.reason


def test_leak_that_starts_after_warm_up_is_growing():
    loop = Loop(30)
    b = loop.run(lambda step, t: loop.alloc(t, 16 * KIB, "Stack", "[4,1024]") if step >= 20 else None)
    a = _analyze(b)
    (top,) = a.suspects.groups
    assert top.kind == "growing" and top.first_step == 20 and top.bytes_per_step == 16 * KIB
    assert 0.5 <= top.score < 1.0  # ten steps of growth: less certain than a whole window of it
