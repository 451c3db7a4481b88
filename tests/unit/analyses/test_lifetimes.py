"""Pairing allocations with frees into buffer lifetimes, on profiles built here."""

from __future__ import annotations

import os
from dataclasses import fields

import numpy as np
import pytest

from tb_leakfinder import compiled
from tb_leakfinder.analyses.host_decisions import default_allocator
from tb_leakfinder.analyses.lifetimes import pair_events
from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.model.lifetimes import BEFORE_WINDOW, FREED, NEVER_FREED, NO_TIME, Buffers
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.read.formats.xplane.decoder import decode
from tb_leakfinder.testing.xspace_builder import ProfileBuilder
from tests.support.columns import memory_events, steps
from tests.support.fuzzing import REQUIRE_SCANNER_ENV

MIB = 1 << 20
_pairing = compiled.built("tb_leakfinder.analyses._pairing")
if _pairing is None and os.environ.get(REQUIRE_SCANNER_ENV) == "1":  # CI builds it: not skipping there
    raise RuntimeError(f"{REQUIRE_SCANNER_ENV}=1 but the pairing pass is not built (python setup.py build_ext --inplace)")


def _analyze(builder: ProfileBuilder):
    return analyze_host(decode(builder.to_bytes(), "host0", "memory.xplane.pb"))


def test_address_reuse_makes_new_buffers():
    b = ProfileBuilder()
    for i in range(3):  # the same address allocated and freed three times
        b.alloc(100 * i + 10, 0x1000, MIB, op=f"Op{i}")
        b.free(100 * i + 50, 0x1000, MIB)
    b.alloc(400, 0x1000, 2 * MIB, op="Kept")
    (a,) = _analyze(b).allocators
    buf = a.buffers
    assert len(buf) == 4
    assert buf.status.tolist() == [FREED, FREED, FREED, NEVER_FREED]
    assert buf.alloc_time_ps.tolist() == [10, 110, 210, 400]
    assert buf.free_time_ps.tolist() == [50, 150, 250, NO_TIME]
    assert [a.events.strings[o] for o in buf.op] == ["Op0", "Op1", "Op2", "Kept"]
    assert a.summary.never_freed_bytes == 2 * MIB


def test_free_without_alloc_is_before_the_window():
    b = ProfileBuilder()
    b.allocator("GPU_0_bfc", bytes_in_use=4 * MIB)  # allocated before the capture started
    b.free(10, 0xA000, 4 * MIB)
    b.alloc(20, 0xA000, MIB, op="Reuse")
    b.free(30, 0xA000, MIB)
    (a,) = _analyze(b).allocators
    assert a.buffers.status.tolist() == [BEFORE_WINDOW, FREED]
    assert a.buffers.alloc_time_ps[0] == NO_TIME and a.buffers.free_time_ps[0] == 10
    assert a.summary.freed_before_window_count == 1
    assert a.summary.num_allocations == 1 and a.summary.num_deallocations == 2


def test_allocators_are_paired_separately():
    b = ProfileBuilder()
    # The same address in two allocators is two buffers, not a pair.
    b.alloc(10, 0x10, MIB, allocator="GPU_0_bfc", op="A")
    b.alloc(20, 0x10, 3 * MIB, allocator="GPU_1_bfc", op="B")
    b.free(30, 0x10, MIB, allocator="GPU_0_bfc")
    host = _analyze(b)
    by_label = {a.label: a for a in host.allocators}
    assert [a.label for a in host.allocators] == ["GPU_0_bfc", "GPU_1_bfc"]  # natural order
    choice = default_allocator(host)  # no leak: the device memory with the highest peak
    assert choice is not None and choice.allocator.label == "GPU_1_bfc"
    assert by_label["GPU_0_bfc"].buffers.status.tolist() == [FREED]
    assert by_label["GPU_1_bfc"].buffers.status.tolist() == [NEVER_FREED]
    assert by_label["GPU_1_bfc"].summary.peak_bytes_in_use == 3 * MIB


def test_events_on_several_lines_merge_in_time_order():
    b = ProfileBuilder()
    b.alloc(10, 0x10, MIB, line="tf_Compute/1")
    b.free(40, 0x10, MIB, line="python")
    b.alloc(20, 0x20, MIB, line="python")
    b.free(30, 0x20, MIB, line="tf_Compute/2")
    (a,) = _analyze(b).allocators
    assert a.events.time_ps.tolist() == [10, 20, 30, 40]
    assert sorted(zip(a.buffers.alloc_time_ps.tolist(), a.buffers.free_time_ps.tolist(), strict=True)) == [(10, 40), (20, 30)]


def test_double_allocation_is_a_warning_not_a_leak():
    b = ProfileBuilder()
    b.alloc(10, 0x10, MIB)
    b.alloc(20, 0x10, MIB)  # the free between them was not recorded
    b.free(30, 0x10, MIB)
    (a,) = _analyze(b).allocators
    assert a.summary.never_freed_count == 0
    assert a.buffers.free_time_ps.tolist() == [20, 30]
    assert any("already in use" in w for w in a.warnings)


def test_uint64_stats_read_like_int64():
    def build(kind: str) -> ProfileBuilder:
        b = ProfileBuilder(int_kind=kind)
        b.alloc(10, 0xFFFF_FFFF_FFFF_FF00, MIB)  # an address above 2**63
        b.free(20, 0xFFFF_FFFF_FFFF_FF00, MIB)
        return b

    (signed,) = _analyze(build("int64")).allocators
    (unsigned,) = _analyze(build("uint64")).allocators
    assert np.array_equal(signed.events.addr, unsigned.events.addr)
    assert signed.buffers.status.tolist() == unsigned.buffers.status.tolist() == [FREED]
    assert int(unsigned.events.addr[0]) == 0xFFFF_FFFF_FFFF_FF00


def test_no_memory_events():
    b = ProfileBuilder()
    b.step(0, 0, 100)
    host = _analyze(b)
    assert host.allocators == [] and len(host.profile.steps) == 1


def test_events_get_the_step_whose_marker_contains_them():
    # Allocations before any step, in step 7, between steps and in step 8.
    events = memory_events([50, 150, 250, 350], ALLOC, [0x1, 0x2, 0x3, 0x4], MIB)
    buffers = pair_events(events, steps((7, 100, 200), (8, 300, 400))).buffers
    assert buffers.alloc_step.tolist() == [-1, 0, -1, 1]


def _paired_both_ways(events, marks, monkeypatch):
    """The pairing of the compiled pass (analyses/_pairing.c) and of numpy's path, on the same events."""
    compiled_pairing = pair_events(events, marks)
    monkeypatch.setenv(compiled.PURE_PYTHON_ENV, "1")
    numpy_pairing = pair_events(events, marks)
    monkeypatch.delenv(compiled.PURE_PYTHON_ENV)
    return compiled_pairing, numpy_pairing


def _assert_same_pairing(got, expected):
    assert (got.double_allocations, got.unmatched_frees) == (expected.double_allocations, expected.unmatched_frees)
    for name in fields(Buffers):
        column, want = getattr(got.buffers, name.name), getattr(expected.buffers, name.name)
        assert column.dtype == want.dtype, name.name
        assert np.array_equal(column, want), name.name


def _fuzzed_events(rng: np.random.Generator, n: int, addresses: int, times: int):
    """A stream as hostile as a profile's can be: few addresses (reuse, double allocations, frees of a free
    address, frees before any allocation), times with ties and negative ones (a clock run backwards)."""
    time_ps = np.sort(rng.integers(-3, times, n))
    kind = rng.integers(0, 2, n).astype(np.int8)
    addr = rng.integers(0, addresses, n).astype(np.uint64) * np.uint64(0x100) + np.uint64(0xFFFF_0000_0000_0000)
    return memory_events(time_ps, kind, addr, rng.integers(1, MIB, n), op=[f"Op{i % 7}" for i in range(n)])


@pytest.mark.skipif(_pairing is None, reason="the compiled pairing pass is not built")
def test_the_compiled_pass_pairs_as_numpy_does(monkeypatch):
    rng = np.random.default_rng(43)
    # A step from before the profile's start: an event at time -1 (NO_TIME's value) is in it.
    marks = steps((0, -5, 40), (1, 40, 90), (2, 120, 200))
    cases = [(0, 4, 10), (1, 1, 10), (2, 1, 10)]
    cases += [(int(rng.integers(2, 400)), int(rng.integers(1, 60)), int(rng.integers(1, 300))) for _ in range(300)]
    for n, addresses, times in cases:
        events = _fuzzed_events(rng, n, addresses, times)
        _assert_same_pairing(*_paired_both_ways(events, marks, monkeypatch))


@pytest.mark.skipif(_pairing is None, reason="the compiled pairing pass is not built")
def test_the_compiled_pass_holds_many_live_addresses(monkeypatch):
    # 20,000 buffers live at once, then freed in another order: the pass's table of live addresses grows and
    # empties again; addresses spaced by a power of two, as allocators hand them out.
    rng = np.random.default_rng(7)
    live = 20_000
    addr = (np.arange(live, dtype=np.uint64) << np.uint64(20)).repeat(2)
    kind = np.tile(np.array([ALLOC, FREE], np.int8), live)
    freed_order = rng.permutation(live)
    addr = np.concatenate([addr[0::2], addr[1::2][freed_order]])
    kind = np.concatenate([kind[0::2], kind[1::2]])
    events = memory_events(np.arange(2 * live), kind, addr, MIB)
    got, expected = _paired_both_ways(events, steps((0, 0, 2 * live)), monkeypatch)
    _assert_same_pairing(got, expected)
    assert (got.buffers.status == FREED).all() and len(got.buffers) == live


@pytest.mark.skipif(_pairing is None, reason="the compiled pairing pass is not built")
def test_an_event_of_neither_kind_is_paired_by_numpy(monkeypatch):
    # Not one a reader makes: the compiled pass leaves it to numpy's path, which pairs it as it always did.
    events = memory_events([10, 20, 30], [ALLOC, 2, FREE], [0x10, 0x10, 0x10], MIB)
    assert _pairing.link(events.addr, events.kind, ALLOC, FREE, 0, np.empty(3, np.intp), np.empty(3, np.uint8)) is None
    _assert_same_pairing(*_paired_both_ways(events, steps((0, 0, 40)), monkeypatch))


@pytest.mark.skipif(_pairing is None, reason="the compiled pairing pass is not built")
def test_the_compiled_pass_refuses_columns_of_the_wrong_size():
    n = 4
    with pytest.raises(ValueError, match="following"):
        _pairing.link(
            np.zeros(n, np.uint64), np.zeros(n, np.int8), ALLOC, FREE, 0, np.empty(n - 1, np.intp), np.empty(n, np.uint8)
        )
