"""Pairing allocations with frees into buffer lifetimes, on profiles built here."""

from __future__ import annotations

import numpy as np

from tb_leakfinder.analyses.host_decisions import default_allocator
from tb_leakfinder.analyses.lifetimes import pair_events
from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.model.lifetimes import BEFORE_WINDOW, FREED, NEVER_FREED, NO_TIME
from tb_leakfinder.model.memory import ALLOC
from tb_leakfinder.read.formats.xplane.decoder import decode
from tb_leakfinder.testing.xspace_builder import ProfileBuilder
from tests.support.columns import memory_events, steps

MIB = 1 << 20


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
