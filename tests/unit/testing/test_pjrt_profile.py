"""The synthesized PJRT profiles follow the conventions of the format notes ("Which program made an allocation"),
read back with protobuf."""

from __future__ import annotations

from collections import Counter

from tb_leakfinder import proto
from tb_leakfinder.testing.pjrt_profile import CONV_IDS, jax_multi_gpu, tpu_psum


def _events(data: bytes) -> list[tuple[str, str, str, int, int, dict]]:
    """(plane, line, name, start, end, stats) of every event, in absolute picoseconds."""
    out = []
    for plane in proto.XSpace().FromString(data).planes:
        stat_names = {k: m.name for k, m in plane.stat_metadata.items()}
        names = {k: m.name for k, m in plane.event_metadata.items()}
        for line in plane.lines:
            for e in line.events:
                stats = {stat_names[s.metadata_id]: getattr(s, s.WhichOneof("value")) for s in e.stats}
                start = line.timestamp_ns * 1000 + e.offset_ps
                out.append((plane.name, line.name, names[e.metadata_id], start, start + e.duration_ps, stats))
    return out


def _flows(events) -> tuple[Counter, Counter]:
    producers = Counter(s["_p"] for *_, s in events if "_p" in s)
    consumers = Counter(s["_c"] for *_, s in events if "_c" in s)
    return producers, consumers


def test_several_gpus_one_producer_per_call_and_one_consumer_per_device():
    builder, planted = jax_multi_gpu(devices=4, steps=2, program_id=CONV_IDS[0])
    events = _events(builder.to_bytes())
    producers, consumers = _flows(events)
    assert set(producers.values()) == {1} and set(consumers.values()) == {4} and set(producers) == set(consumers)
    for _, line, name, start, _, _ in events:
        if name == "MemoryAllocation":
            # On a device's thread, inside `Build buffer allocations`, with no PjitFunction on that thread.
            assert line.startswith("py_xla_execute/")
            assert any(n == "Build buffer allocations" and ln == line and s <= start <= e for _, ln, n, s, e, _ in events)
    launched = {s["program_id"] for *_, n, _, _, s in events if n == "hipModuleLaunchKernel"}
    assert launched == {CONV_IDS[0]} and planted["program"] == f"jit_conv({CONV_IDS[0]})"
    assert not [e for e in events if e[1] == "XLA Modules"]  # ROCm: no XLA Modules line


def test_tpu_outputs_come_before_the_run_their_flows_reach():
    builder, planted = tpu_psum(chips=2, calls=2)
    events = _events(builder.to_bytes())
    producers, consumers = _flows(events)
    assert set(producers) == set(consumers)
    by_consumed = {s["_c"]: (plane, line, name, start) for plane, line, name, start, _, s in events if "_c" in s}
    runs = [e for e in events if e[1] == "XLA Modules" and "_c" in e[5]]
    assert {e[2] for e in runs} == {planted["program"]} and len(runs) == 4
    outputs = [e for e in events if e[2] == "MemoryAllocation" and e[1].startswith("py_xla_execute/")]
    assert len(outputs) == 4 and all(e[5]["tf_op"] for e in outputs)
    for chip in (0, 1):
        allocated = sorted(e[3] for e in outputs if e[5]["index_on_host"] == chip)
        ran = sorted(e[3] for e in runs if e[0] == f"/device:TPU:{chip}")
        for start, run_start in zip(allocated, ran, strict=True):
            assert run_start - start >= 300 * 10**6  # allocated 0.3 ms or more before the chip runs it
    # The last hop of each chain ends on a chip's `XLA Modules` line.
    assert all(plane.startswith("/device:TPU:") for plane, _, name, _ in by_consumed.values() if name == planted["program"])
