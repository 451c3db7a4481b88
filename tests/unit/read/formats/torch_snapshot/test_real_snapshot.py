"""The real snapshot of ../shared/profiles/torch/snapshot_cs336_bcrafton (bcrafton/assignment2-systems, MIT; see
its README and licences/): a CS336 assignment's training step on one GPU, recorded with stacks="all".

Figures counted by hand, from the pickle loaded by the project's unpickler and walked in plain Python:
- device_traces[0] holds 6,486 entries: 2,162 each of alloc, free_requested and free_completed, time_us from
  1773270053858957 to 1773270053909604 (50,647 µs); no segment_alloc, segment_free or oom entry.
- segments: 96, of 550 blocks 447 active_allocated; their allocated_size adds to 3,072,871,424 bytes, which is
  the heap at the dump (the allocator's own count, not this reader's pairing).
- Live before the trace began: 225 active blocks whose address no entry names (block sizes 1,545,204,736 B)
  and 222 free_completed entries whose alloc is not in the trace (sizes 1,523,681,280 B, all multiples of
  512): 447 buffers, 3,068,886,016 B.
- The running sum of the trace's own alloc and free_completed sizes (requested bytes, nothing before the
  window) peaks at 1,999,716,608 B.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from tb_leakfinder.engine.engine import analyze_file
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.read.formats.registry import format_of
from tb_leakfinder.read.formats.torch_snapshot import reader, unpickle
from tb_leakfinder.read.formats.torch_snapshot.format import HOST, TORCH_SNAPSHOT

SNAPSHOT = (
    Path(__file__).resolve().parents[5].parent
    / "shared"
    / "profiles"
    / "torch"
    / "snapshot_cs336_bcrafton"
    / "memory_snapshot.pickle"
)

pytestmark = pytest.mark.skipif(not SNAPSHOT.exists(), reason="the shared real snapshot is absent")


def _snapshot() -> dict:
    loaded = unpickle.load(SNAPSHOT.read_bytes(), str(SNAPSHOT))
    assert isinstance(loaded, dict)
    return loaded


def test_it_is_a_snapshot_of_builtins_only():
    assert format_of(str(SNAPSHOT)) is TORCH_SNAPSHOT
    snapshot = _snapshot()
    assert sorted(snapshot) == ["allocator_settings", "device_traces", "external_annotations", "segments"]
    assert len(snapshot["segments"]) == 96 and [len(t) for t in snapshot["device_traces"]] == [6486]


def test_counts_and_peak_against_plain_python():
    snapshot = _snapshot()
    trace = snapshot["device_traces"][0]
    counts: dict[str, int] = {}
    running = peak = 0
    sizes: dict[int, int] = {}
    for entry in trace:
        counts[entry["action"]] = counts.get(entry["action"], 0) + 1
        if entry["action"] == "alloc":
            sizes[entry["addr"]] = entry["size"]
            running += entry["size"]
        elif entry["action"] == "free_completed" and entry["addr"] in sizes:
            running -= sizes.pop(entry["addr"])
        peak = max(peak, running)
    assert counts == {"alloc": 2162, "free_requested": 2162, "free_completed": 2162}
    assert peak == 1_999_716_608

    profile = reader.read_host(str(SNAPSHOT), HOST)
    events = profile.events
    assert events.allocator_names == ["cuda:0"]
    assert (int((events.kind == ALLOC).sum()), int((events.kind == FREE).sum())) == (2162, 2162)
    # The same running sum of requested bytes from the model's columns, counting only frees of the window's allocations.
    seen: set[int] = set()
    signed = []
    for kind, addr, size in zip(events.kind.tolist(), events.addr.tolist(), events.requested_bytes.tolist(), strict=True):
        if kind == ALLOC:
            seen.add(addr)
            signed.append(size)
        else:
            signed.append(-size if addr in seen else 0)
            seen.discard(addr)
    assert int(np.cumsum(signed).max()) == 1_999_716_608


def test_hand_checked_figures():
    profile = reader.read_host(str(SNAPSHOT), HOST)
    events = profile.events
    assert profile.duration_ps == 50_647 * 1_000_000 + reader.STRIDE_PS  # no µs held more than 1000 entries
    assert profile.start_time_ns == 1_773_270_053_858_957_000
    assert int(events.heap_bytes[-1]) == 3_072_871_424  # the segments' allocated_size at the dump
    first = int(events.chunk_bytes[0]) if events.kind[0] == ALLOC else -int(events.chunk_bytes[0])
    assert int(events.heap_bytes[0]) - first == 3_068_886_016
    began = "max_entries): 447 (3,068,886,016 bytes); of them freed in the trace: 222, live at the dump without an entry: 225"
    assert any(began in w for w in profile.warnings)
    # Its one annotation is AdamW's Optimizer.step (END at 1773270053896695 µs), no ProfilerStep: one training step,
    # from the trace's first entry to the optimizer step's end.
    assert profile.steps.step_num.tolist() == [0]
    assert (profile.steps.start_ps.tolist(), profile.steps.end_ps.tolist()) == ([0], [37_738_000_000])


def test_the_report_names_the_users_optimizer_lines():
    result = analyze_file(str(SNAPSHOT), HOST, str(SNAPSHOT.parent))
    host = result.json()
    assert not host.get("error"), host
    # Its one annotation, AdamW's step, ends the one training step the capture holds.
    assert host["step_source"]["description"] == "1 step from Optimizer.step#AdamW.step markers"
    (allocator,) = host["allocators"]
    assert allocator["verdict"] == "inconclusive"  # one step cannot tell growth from warm-up
    assert allocator["peak_heap_bytes"] == int(reader.read_host(str(SNAPSHOT), HOST).events.heap_bytes.max())
    top = allocator["families"][0]
    # The user's own AdamW (cs336_basics/optimizer.py), through torch's optimizer wrapper, from the benchmark.
    assert top["where"] == "optimizer.py:75 in step"
    assert top["site"]["stack"][:3] == [
        "optimizer.py:75 in step",
        "benchmarking_script.py:54 in fake_train",
        "benchmarking_script.py:67 in <module>",
    ]
    assert {g["where"] for g in allocator["families"][:2]} == {"optimizer.py:75 in step", "optimizer.py:74 in step"}


def test_it_is_no_out_of_memory_snapshot():
    # 87 of its 96 segments hold an inactive block, its trace has no oom entry, and its name says nothing of one.
    profile = reader.read_host(str(SNAPSHOT), HOST)
    assert profile.allocators["cuda:0"].out_of_memory == ""
    assert profile.allocators["cuda:0"].reserved_bytes == 4_238_344_192  # the segments' total_size
    (allocator,) = analyze_file(str(SNAPSHOT), HOST, str(SNAPSHOT.parent)).json()["allocators"]
    assert allocator["out_of_memory"] is None


@pytest.mark.parametrize("version", ["1.13", "2.0"])
def test_rewritten_in_an_older_shape_it_reads_the_same(tmp_path, version):
    """The real snapshot rewritten as PyTorch 1.13 / 2.0 wrote theirs (tb_leakfinder.testing.torch_snapshot_builder
    says how): its blocks' addresses, dropped, are found again from their segments; without time_us its entries
    are in trace order, which here is time order."""
    snapshot = _snapshot()
    for segment in snapshot["segments"]:
        offset = segment["address"]
        for block in segment["blocks"]:
            assert block["address"] == offset  # the rule the older shapes rely on, true of the real blocks
            offset += block["size"]
            if block["state"] != "inactive":
                block["history"] = [{"addr": block["address"], "real_size": block["requested_size"], "frames": block["frames"]}]
            for key in ("address", "requested_size", "frames"):
                del block[key]
    for entry in snapshot["device_traces"][0]:
        del entry["time_us"]
    del snapshot["external_annotations"]
    old = tmp_path / "memory_snapshot.pickle"
    old.write_bytes(pickle.dumps(snapshot, protocol=2 if version == "1.13" else 4))
    new_events, old_events = reader.read_host(str(SNAPSHOT), HOST).events, reader.read_host(str(old), HOST).events
    for column in ("kind", "addr", "requested_bytes", "chunk_bytes", "heap_bytes"):
        assert getattr(old_events, column).tolist() == getattr(new_events, column).tolist(), column


def test_its_shared_frames_load_as_pickle_loads_them():
    """It lists each frame dict up to 16,928 times and frames lists thousands of times through the memo: what the
    unpickler lets a reference name again, checked at each name's first reference."""
    data = SNAPSHOT.read_bytes()
    assert _snapshot() == pickle.loads(data)
