"""The peak breakdown (analyses/breakdown.py): each buffer live at the peak once, the rows adding up to it."""

from __future__ import annotations

import pytest

import tb_leakfinder
from tb_leakfinder.testing.tpu_profile import LAYOUT_SHAPE, tpu_inference
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session

MIB = 1 << 20


def analysed(tmp_path, *, deferred: bool) -> tuple[dict, dict]:
    builder, planted = tpu_inference(deferred=deferred)
    write_session(tmp_path, "run", "session", {builder.hostname: builder})
    (run,) = tb_leakfinder.analyze(str(tmp_path / "run"))["runs"]
    (host,) = run["hosts"]
    return host, planted


def dims(shape: str) -> str:
    """A shape's dimensions: a buffer named by its program buffer shows its dtype apart ("[5,1024]", dtype "f32")."""
    return shape[shape.find("[") :]


def output_rows(allocator: dict, planted: dict) -> list[dict]:
    want = dims(planted["output_shape"])
    return [r for r in allocator["peak_breakdown"] if r["category"] == "buffers" and dims(r["shape"]) == want]


def test_a_deferred_tpu_output_shows_once_and_the_rows_add_up_to_the_peak(tmp_path):
    # Each call's 5 GiB output is allocated while the last call's is still held, but the chip's heap count
    # holds one of them: paired by address alone, the output showed twice (10 GiB in a 5 GiB heap).
    host, planted = analysed(tmp_path, deferred=True)
    assert len(host["allocators"]) == planted["chips"]
    for a, heap_peak in zip(host["allocators"], planted["peak_heap_bytes"], strict=True):
        assert a["peak_heap_bytes"] == heap_peak
        (row,) = output_rows(a, planted)
        assert (row["count"], row["bytes"]) == (1, planted["output_bytes"]), a["allocator"]
        assert sum(r["bytes"] for r in a["peak_breakdown"]) == a["peak_bytes_in_use"], a["allocator"]
        assert {r["category"] for r in a["peak_breakdown"]} == {"buffers", "stack"}


def test_two_outputs_the_heap_counts_both_stay_two(tmp_path):
    host, planted = analysed(tmp_path, deferred=False)
    for a in host["allocators"]:
        (row,) = output_rows(a, planted)
        assert (row["count"], row["bytes"]) == (2, 2 * planted["output_bytes"]), a["allocator"]
        assert sum(r["bytes"] for r in a["peak_breakdown"]) == a["peak_bytes_in_use"], a["allocator"]


@pytest.mark.parametrize("deferred", [True, False])
def test_shapes_show_without_their_layout(tmp_path, deferred):
    host, planted = analysed(tmp_path, deferred=deferred)
    shapes = {r["shape"] for a in host["allocators"] for r in a["peak_breakdown"]} | {
        g["shape"] for a in host["allocators"] for g in a["families"]
    }
    assert dims(planted["output_shape"]) in {dims(s) for s in shapes} and LAYOUT_SHAPE not in shapes
    assert not any("{" in s for s in shapes)


def test_a_count_out_of_step_with_time_drops_no_buffer_it_holds(tmp_path):
    # Events written to the file out of time order (one thread's after another's): the count at the 64 MiB
    # buffer's allocation rose by 63 MiB in time order, not by 0. It was counted: it stays.
    b = ProfileBuilder("host0")
    for s in range(3):
        b.alloc(s * 1000 + 10, 0x1000 + s * 0x100000, MIB, op="Relu", shape="[256,1024]")
        b.free(s * 1000 + 500, 0x1000 + s * 0x100000, MIB)
    b.alloc(1000 + 50, 0x9000000, 64 * MIB, op="BiasAdd", shape="[16384,1024]")
    b.free(1000 + 100, 0x9000000, 64 * MIB)
    write_session(tmp_path, "run", "session", {"host0": b})
    (run,) = tb_leakfinder.analyze(str(tmp_path / "run"))["runs"]
    (a,) = run["hosts"][0]["allocators"]
    rows = {r["op"]: (r["count"], r["bytes"]) for r in a["peak_breakdown"]}
    assert rows["BiasAdd"] == (1, 64 * MIB)
