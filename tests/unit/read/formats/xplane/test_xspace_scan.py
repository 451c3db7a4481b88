"""The compiled XSpace scanner against the reference decoder over protobuf objects.

Both must give identical HostProfiles (every column, string table, allocator
name, step, duration, warning and HLO module) on real captures, synthesised
training profiles and odd hand-made ones, and must agree on which damaged
files are unreadable.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import random
import struct
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from google.protobuf import descriptor

from tb_leakfinder import compiled, proto
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import (
    ALLOC,
    EVENT_COLUMNS,
    FREE,
    SPAN_DEVICE_PROGRAM,
    SPAN_DEVICE_STEP,
    SPAN_HOST_CALL,
    SPAN_HOST_ROOT,
    SPAN_HOST_RUNTIME,
    HostProfile,
)
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.read.formats.xplane import reader, scan, stat_spec
from tb_leakfinder.testing.pjrt_profile import jax_training
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, synthesize_devices, synthesize_training
from tests.support.demo import DEMO_LOGS, ROOT
from tests.support.xprof_oracle import xprof_tool

scanner = scan.compiled_scanner()
if scanner is None and os.environ.get("TB_LEAKFINDER_REQUIRE_SCANNER") == "1":  # CI builds it: not skipping there
    raise RuntimeError("TB_LEAKFINDER_REQUIRE_SCANNER=1 but the C scanner is not built (python setup.py build_ext --inplace)")
pytestmark = pytest.mark.skipif(scanner is None, reason="the C scanner (read/formats/xplane/_xspace_scan.c) is not built")

PATH = "/logs/run/plugins/profile/s/host0.xplane.pb"
SPAN_COLUMNS = {
    "source": np.int8,
    "name": np.int32,
    "device": np.int32,
    "root": bool,
    "start_ps": np.int64,
    "end_ps": np.int64,
    "line": np.int32,
    "flow_out": np.int64,
    "flow_in": np.int64,
    "program_id": np.int64,
}
MESSAGES = ("XSpace", "XPlane", "XLine", "XEvent", "XStat", "XEventMetadata", "XStatMetadata")


# --- wire bytes by hand, for what protobuf itself never writes ---------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def vi(field: int, value: int) -> bytes:
    return varint(field << 3) + varint(value)


def ld(field: int, payload: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def f64(field: int, value: float) -> bytes:
    return varint(field << 3 | 1) + struct.pack("<d", value)


def stat(mid: int, body: bytes) -> bytes:
    return vi(1, mid) + body


def entry(field: int, key: int, value: bytes) -> bytes:
    """A map entry of XPlane.event_metadata (4) or .stat_metadata (5)."""
    return ld(field, vi(1, key) + ld(2, value))


def named(field: int, names: dict[int, str]) -> bytes:
    return b"".join(entry(field, key, vi(1, key) + ld(2, name.encode())) for key, name in names.items())


STAT_NAMES = {
    1: "allocator_name",
    2: "bytes_allocated",
    3: "addr",
    4: "tf_op",
    5: "requested_bytes",
    6: "allocation_bytes",
    7: "fragmentation",
    8: "region_type",
    9: "shape",
    10: "data_type",
    11: "step_num",
    12: "bytes_reserved",
    13: "peak_bytes_in_use",
    20: "GPU_0_bfc",
    21: "Mul",
    22: "[8]",
    23: "output",
    24: "7",
}
EVENT_NAMES = {1: "MemoryAllocation", 2: "MemoryDeallocation", 3: "train", 4: "Other"}


def mem_event(mid: int, offset: int, *stats: bytes, extra: bytes = b"") -> bytes:
    return ld(4, vi(1, mid) + vi(2, offset) + b"".join(ld(4, s) for s in stats) + extra)


def cpu_plane(*lines: bytes, stat_names: dict[int, str] = STAT_NAMES, tail: bytes = b"") -> bytes:
    return ld(
        1, ld(2, b"/host:CPU") + b"".join(ld(3, line) for line in lines) + named(4, EVENT_NAMES) + named(5, stat_names) + tail
    )


# --- comparing the two decoders --------------------------------------------------------


def decode_both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[HostProfile | str, HostProfile | str]:
    """Each decoder's HostProfile, or its LeakfinderError message."""
    out = []
    for pure in ("", "1"):
        monkeypatch.setenv(compiled.PURE_PYTHON_ENV, pure)
        try:
            out.append(reader.decode(data, "host0", PATH))
        except LeakfinderError as exc:
            out.append(exc.message)
    monkeypatch.delenv(compiled.PURE_PYTHON_ENV)
    return out[0], out[1]


def assert_same(fast: HostProfile | str, ref: HostProfile | str) -> None:
    if isinstance(ref, str) or isinstance(fast, str):
        assert isinstance(fast, str) and isinstance(ref, str), (fast, ref)
        assert fast.startswith(f"{PATH}: ") and ref.startswith(f"{PATH}: ")
        assert ("incomplete or corrupt profile" in fast) == ("incomplete or corrupt profile" in ref)
        return
    assert (fast.host, fast.path, fast.duration_ps, fast.warnings) == (ref.host, ref.path, ref.duration_ps, ref.warnings)
    assert fast.start_time_ns == ref.start_time_ns
    assert fast.hlo_protos == ref.hlo_protos
    assert fast.events.strings == ref.events.strings
    assert fast.events.allocator_names == ref.events.allocator_names
    for name, dtype in EVENT_COLUMNS.items():
        a, b = getattr(fast.events, name), getattr(ref.events, name)
        assert a.dtype == b.dtype == dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    for name in ("step_num", "start_ps", "end_ps"):
        np.testing.assert_array_equal(getattr(fast.steps, name), getattr(ref.steps, name), err_msg=name)
    assert fast.device_planes == ref.device_planes
    assert fast.spans.names == ref.spans.names
    for name, dtype in SPAN_COLUMNS.items():
        a, b = getattr(fast.spans, name), getattr(ref.spans, name)
        assert a.dtype == b.dtype == dtype, name
        np.testing.assert_array_equal(a, b, err_msg=f"spans.{name}")
    for name in ("group_id", "start_ps", "end_ps"):
        a, b = getattr(fast.groups, name), getattr(ref.groups, name)
        assert a.dtype == b.dtype == np.int64, name
        np.testing.assert_array_equal(a, b, err_msg=f"groups.{name}")


def same(data: bytes, monkeypatch: pytest.MonkeyPatch) -> HostProfile:
    fast, ref = decode_both(data, monkeypatch)
    assert_same(fast, ref)
    assert not isinstance(fast, str), fast
    return fast


# --- the schema --------------------------------------------------------------------------


def _descriptor(message: str) -> descriptor.Descriptor:
    return proto.message_class(f"tb_leakfinder.xplane.{message}").DESCRIPTOR


def test_field_numbers_are_the_schemas():
    for name, number in scanner.FIELDS.items():
        message, field = name.split(".")
        assert _descriptor(message).fields_by_name[field].number == number, name


def test_every_string_and_message_field_of_the_schema_is_walked():
    """What protobuf checks (UTF-8 of strings, the wire format of submessages) the scanner checks too."""
    walked = set(scanner.FIELDS)
    for message in MESSAGES:
        for field in _descriptor(message).fields:
            if field.type in (field.TYPE_STRING, field.TYPE_MESSAGE):
                assert f"{message}.{field.name}" in walked, f"{message}.{field.name}"


def test_pure_python_env_forces_the_reference_decoder(monkeypatch):
    monkeypatch.setenv(compiled.PURE_PYTHON_ENV, "1")
    assert scan.compiled_scanner() is None
    monkeypatch.setenv(compiled.PURE_PYTHON_ENV, "0")
    assert scan.compiled_scanner() is scanner


# --- identical results -------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(DEMO_LOGS.glob("*/plugins/profile/*/*.xplane.pb")), ids=lambda p: p.parts[-5])
def test_demo_captures_decode_identically(path: Path, monkeypatch):
    profile = same(path.read_bytes(), monkeypatch)
    assert len(profile.steps) > 0
    if path.parts[-5].startswith("tf_"):
        assert len(profile.events) > 1000
    else:
        assert profile.hlo_protos


def test_synthesised_training_decodes_identically(monkeypatch):
    builder, planted = synthesize_training(num_events=20_000, steps=12, allocators=("GPU_0_bfc", "GPU_1_bfc", "cpu"))
    builder.add_hlo_module("jit_step(3)", b"\x0a\x02\x0a\x00")
    builder.add_hlo_module("bare", b"\x12\x00", program_id=9)
    profile = same(builder.to_bytes(), monkeypatch)
    assert len(profile.events) == planted["num_events"]
    assert profile.events.allocator_names == ["GPU_0_bfc", "GPU_1_bfc", "cpu"]
    assert set(profile.hlo_protos) == {"jit_step(3)", "bare(9)"}
    # Grouped by allocator, each allocator's events in time order.
    events = profile.events
    assert bool(np.all(np.diff(events.allocator) >= 0)) and len(set(events.allocator.tolist())) == 3
    for allocator in range(3):
        assert bool(np.all(np.diff(events.time_ps[events.allocator == allocator]) >= 0))


@pytest.mark.parametrize("int_kind", ["int64", "uint64"])
def test_builder_odd_kinds_and_missing_stats_decode_identically(int_kind, monkeypatch):
    b = ProfileBuilder(int_kind=int_kind)
    for s in range(4):
        b.step(s, s * 1000, s * 1000 + 999)
    high = (1 << 64) - 4096  # an address past 2**63: negative as int64
    b.add_memory_events(
        [10, 20, 30], [ALLOC, ALLOC, FREE], [high, 64, high], [256, 512, 256], allocator=["a", "b", "a"], line=["l1", "l2", "l1"]
    )
    b.add_memory_events([1500, 1600], [ALLOC, FREE], [8, 8], [16, 16], omit=("allocator_name", "tf_op", "addr", "fragmentation"))
    b.add_memory_events(
        [2500],
        [ALLOC],
        [9],
        [32],
        kinds={"fragmentation": "int64", "data_type": "uint64"},
        overrides={"fragmentation": 3, "data_type": 7},
        op="Op",
        line="l3",
    )
    # Allocator names given as numbers (the builder writes the ref ids as values): "", as XProf reads them.
    b.add_memory_events([2600, 2700], [ALLOC, ALLOC], [1, 2], [4, 4], kinds={"allocator_name": int_kind})
    b.add_memory_events([2800], [ALLOC], [3], [4], kinds={"allocator_name": "double"}, shape="[2]")
    b.event("odd", 3000, 5, stats={"step_num": 2.5})  # a double step number marks nothing
    b.event("odd", 3100, 5, stats={"step_num": "7"})  # nor does a ref
    b.event("train", 3200, 50, stats={"step_num": ("uint64", (1 << 64) - 1)})
    b.step(1, 3300, 3400)  # a step given twice: one interval, their union
    profile = same(b.to_bytes(), monkeypatch)
    assert len(profile.events) == 9
    assert int(profile.events.addr[0]) == high
    assert "" in profile.events.allocator_names


def test_wire_quirks_decode_identically(monkeypatch):
    """What protobuf accepts but never writes: repeated scalars, late fields, oneof switches, duplicate keys."""
    alloc = (stat(1, vi(7, 20)), stat(2, vi(4, 100)), stat(3, vi(3, 0xABC)), stat(4, vi(7, 21)), stat(6, vi(4, 64)))
    line1 = (
        vi(3, 5_000)  # timestamp_ns, written again after the events below
        + mem_event(1, 10, *alloc)
        + mem_event(2, 20, stat(3, vi(4, 0xABC)), stat(2, vi(4, 0)), stat(1, ld(5, b"GPU_0_bfc")))
        + mem_event(4, 30, *alloc, extra=vi(1, 1))  # metadata_id given twice: the last (an allocation) wins
        + mem_event(1, 40, *alloc, extra=vi(5, 3))  # num_occurrences clears offset_ps (same oneof)
        + ld(4, vi(1, 3) + vi(2, 0) + vi(3, 10_000) + ld(4, stat(11, vi(3, 1))))
        + vi(3, 4_000)
    )
    line2 = vi(3, 3_000) + mem_event(1, 7, stat(1, vi(4, 7)), stat(3, vi(4, -1)), stat(10, vi(3, 1 << 40)))
    line3 = vi(3, 1) + ld(2, b"no events: not the time base")
    odd_stats = (
        stat(1, vi(7, 24)),  # allocator "7" by ref...
        stat(99, vi(4, 5)),  # a stat with no metadata
        stat(2, b""),  # a stat with no value
        stat(4, vi(7, 1 << 63)),  # a ref past int64: no such metadata, ""
        stat(7, vi(4, -3)),  # an integral fragmentation
        stat(9, ld(5, "形状".encode())),  # a str shape
        stat(12, vi(2, 5)),  # a known field with the wrong wire type is an unknown field
    )
    line4 = (
        vi(3, 4_500)
        + mem_event(1, 1, *odd_stats)
        + mem_event(1, 2, stat(1, vi(4, 3)), stat(1, f64(2, 7.0)))  # two allocator names: the last counts
        + mem_event(1, 3, stat(1, ld(6, b"\x00b")))
    )
    tail = entry(5, 24, vi(1, 24) + ld(2, b"seven")) + entry(5, 24, ld(2, b"7"))  # a repeated key: the last entry wins
    data = cpu_plane(line1, line2, line3, line4, tail=tail) + ld(4, b"host0")
    profile = same(data, monkeypatch)
    # As XProf reads an allocator_name (StrOrRefValue): a string or ref is the name, any other kind is "".
    assert profile.events.allocator_names == ["GPU_0_bfc", "", "7"]
    in_time_order = profile.events.allocator[np.argsort(profile.events.time_ps, kind="stable")]
    names = [profile.events.allocator_names[i] for i in in_time_order.tolist()]
    assert names == ["", "GPU_0_bfc", "GPU_0_bfc", "GPU_0_bfc", "GPU_0_bfc", "7", "", ""]
    assert profile.events.time_ps.min() == 7 and len(profile.steps) == 1


def test_events_off_the_one_pass_shape_decode_identically(monkeypatch):
    """The scanner decodes an event in one pass only when its metadata_id comes first and once, and every other
    field has the common shape; any other event is decoded again from its start, with the same result."""
    alloc = (stat(1, vi(7, 20)), stat(4, vi(7, 21)), stat(9, vi(7, 22)), stat(6, vi(4, 64)), stat(3, vi(4, 0xA0)))
    line = (
        vi(3, 1_000)
        + mem_event(1, 10, *alloc)  # the one-pass shape
        + mem_event(1, 20, *alloc, extra=vi(1, 3))  # an allocation, then named a step marker: no row
        + mem_event(3, 30, stat(11, vi(3, 4)), extra=vi(1, 2) + ld(4, stat(3, vi(4, 0xA0))))  # a marker, then a free
        + ld(4, b"".join(ld(4, s) for s in alloc) + vi(1, 1) + vi(2, 40))  # stats before the metadata_id
        + ld(4, vi(1, 1) + vi(2, 50) + ld(4, stat(1, vi(7, 20))) + vi(9, 7))  # an unknown field
        + ld(4, vi(1, 1) + vi(2, 60) + ld(4, stat(2, vi(4, 1 << 62))))  # a value of 9 bytes
        + ld(4, vi(1, 1) + vi(2, 70) + ld(4, stat(2, vi(4, -5))))  # of 10 bytes
        + ld(4, vi(1, 1) + vi(2, 80) + ld(4, stat(6, vi(4, 300)) + vi(3, 0)))  # a stat with a second value
        + ld(4, vi(1, 1) + vi(2, 90) + ld(4, stat(4, ld(5, b"StrOp"))))  # a str stat
        + ld(4, vi(1, 1) + vi(2, 100) + vi(3, 5) + ld(4, stat(1, vi(7, 20))))  # a duration
        + ld(4, vi(1, 3) + vi(2, 110) + ld(4, stat(11, vi(3, 6))))  # a step marker in one pass
    )
    profile = same(cpu_plane(line) + ld(4, b"host0"), monkeypatch)
    events = profile.events.take(np.argsort(profile.events.time_ps, kind="stable"))  # grouped by allocator: in time order
    assert events.time_ps.tolist() == [10, 30, 40, 50, 60, 70, 80, 90, 100]
    assert events.kind.tolist() == [ALLOC, FREE] + [ALLOC] * 7
    assert profile.steps.step_num.tolist() == [6]
    assert events.heap_bytes.tolist()[4:6] == [1 << 62, -5]


def test_an_event_that_ends_inside_a_stats_tag_is_refused_by_both(monkeypatch):
    """The one-pass decoder reads a stat's head four bytes at once, past the event when it is cut short: the line's
    next fields must not be taken as the rest of the event's stat. Here they read as one: the line's id 8 is a
    stat length of 8, its name's tag a metadata_id, the name's length (24) a uint64 tag, and the name's first
    bytes ("éé" then "a") a five-byte varint."""
    cut = ld(4, vi(1, 1) + vi(2, 10) + b"\x22")
    after = vi(1, 8) + ld(2, ("ééa" + "x" * 19).encode())
    assert after[:5] == bytes([0x08, 0x08, 0x12, 0x18, 0xC3])
    fast, ref = decode_both(cpu_plane(cut + after), monkeypatch)
    assert_same(fast, ref)
    assert isinstance(fast, str) and "incomplete or corrupt profile" in fast


def test_planes_metadata_and_hlo_identically(monkeypatch):
    hlo_stats = named(5, {1: "Hlo Proto", 2: "program_id"})

    def module(key: int, name: str, *stats: bytes) -> bytes:
        return entry(4, key, vi(1, key) + ld(2, name.encode()) + b"".join(ld(5, s) for s in stats))

    meta = (
        ld(2, b"/host:metadata")
        + module(1, "jit_a(4)", stat(1, ld(6, b"A")), stat(2, vi(4, 4)))
        + module(2, "bare", stat(1, ld(6, b"B")), stat(2, vi(3, 11)))  # named with its program_id: bare(11)
        + module(3, "bare_str", stat(1, ld(6, b"C")), stat(2, vi(4, 1)), stat(2, ld(5, b"x")))  # program_id reset
        + module(4, "no_hlo", stat(1, ld(5, b"not bytes")))
        + module(5, "twice", stat(1, ld(6, b"D1")), stat(1, ld(6, b"D2")))  # the last Hlo Proto wins
        + module(6, "dup", stat(1, ld(6, b"E1")))
        + module(6, "dup", stat(1, ld(6, b"E2")))
        + hlo_stats
    )
    first_cpu = cpu_plane(mem_event(1, 5, stat(1, vi(7, 20))))
    last_cpu = cpu_plane(mem_event(1, 9, stat(1, vi(7, 20)), stat(6, vi(4, 1))))  # two /host:CPU planes: the last
    data = first_cpu + ld(1, ld(2, b"/device:GPU:0") + ld(3, mem_event(1, 1))) + ld(1, meta) + last_cpu
    profile = same(data, monkeypatch)
    assert profile.hlo_protos == {"jit_a(4)": b"A", "bare(11)": b"B", "bare_str": b"C", "twice": b"D2", "dup": b"E2"}
    assert profile.events.time_ps.tolist() == [9] and profile.events.chunk_bytes.tolist() == [1]
    assert same(ld(1, meta), monkeypatch).hlo_protos == profile.hlo_protos
    assert same(ld(4, b"host0"), monkeypatch).warnings == [f"{PATH}: the profile has no planes"]


def test_the_scanners_columns_are_the_models():
    """The scanner was built from the current tables: its columns are the model's, and the stats that fill them the spec's."""
    assert {name: np.dtype(dtype).str for name, dtype in EVENT_COLUMNS.items()} == scanner.COLUMNS
    assert {stat: fill.column for stat, fill in stat_spec.FILL_OF_STAT.items()} == scanner.STAT_COLUMNS


# --- accelerator profiles (the format notes, "Accelerator profiles") ----------------------


@pytest.mark.parametrize(
    ("id_stat", "platform", "memory_ids"),
    [
        ("index_on_host", "TPU", ["0", "1", "2", "3"]),
        ("device_ordinal", "GPU", ["0", "1", "2", "3"]),
        ("allocator_name", "GPU", ["GPU_0_bfc", "GPU_1_bfc", "GPU_2_bfc", "GPU_3_bfc"]),
    ],
)
def test_accelerator_profiles_decode_identically(id_stat, platform, memory_ids, monkeypatch):
    builder, planted = synthesize_devices(
        4, 6, platform=platform, id_stat=id_stat, leak_device=1, group_ids=True, stack_bytes=3 << 30
    )
    profile = same(builder.to_bytes(), monkeypatch)
    events = profile.events
    assert events.allocator_names == memory_ids == planted["memory_ids"]
    assert profile.device_planes == planted["devices"]
    # Every device has its own address space: the same addresses on all four.
    addrs = [set(events.addr[events.allocator == k].tolist()) for k in range(4)]
    assert addrs[0] == addrs[2] == addrs[3] and addrs[0] < addrs[1]
    assert set(events.stack_bytes.tolist()) == {3 << 30}
    assert bool(np.all(events.free_bytes == planted["limit_bytes"] - (3 << 30) - events.heap_bytes))
    assert sorted(set(events.group_id.tolist())) == [-1, *range(6)]  # the weights come before the first step
    np.testing.assert_array_equal(profile.groups.group_id, np.arange(6))
    assert bool(np.all(profile.groups.start_ps[1:] > profile.groups.end_ps[:-1]))
    spans = profile.spans
    per_source = {
        source: int((spans.source == source).sum()) for source in (SPAN_HOST_ROOT, SPAN_DEVICE_PROGRAM, SPAN_DEVICE_STEP)
    }
    assert per_source == {SPAN_HOST_ROOT: 6, SPAN_DEVICE_PROGRAM: 24, SPAN_DEVICE_STEP: 24 if platform == "TPU" else 0}
    programs = spans.source == SPAN_DEVICE_PROGRAM
    assert {spans.names[i] for i in spans.name[programs]} == {"jit_train_step(7)"}
    assert sorted(set(spans.device[programs].tolist())) == [0, 1, 2, 3]
    assert set(spans.device[spans.source == SPAN_HOST_ROOT].tolist()) == {-1}
    assert bool(np.all(spans.start_ps[1:] >= spans.start_ps[:-1]))


def test_memory_ids_are_xprofs(tmp_path, monkeypatch):
    """XProf's converter, run on the same file, keys its allocators exactly by the decoders' memory ids."""
    builder, _ = synthesize_devices(4, 4, id_stat="index_on_host", leak_device=3, stack_bytes=21 << 30)
    odd = {  # each event's id stats, in order, and the id XProf gives it (checked against xprof 2.24.2)
        ("int64 index", "5"): {"index_on_host": ("int64", 5)},
        ("negative", "-4"): {"device_ordinal": ("int64", -4)},
        ("string index", "0"): {"index_on_host": ("str", "7")},  # XProf's IntValue of a string is 0
        ("double index", "0"): {"index_on_host": ("double", 7.5)},
        ("ref index", "0"): {"index_on_host": ("ref", "7")},
        ("integer name", ""): {"allocator_name": ("int64", 9)},  # its StrOrRefValue of an integer is ""
        ("str name", "pinned"): {"allocator_name": ("str", "pinned")},
        ("name last", "GPU_0_bfc"): {"index_on_host": ("int64", 12), "allocator_name": ("ref", "GPU_0_bfc")},
        ("index last", "13"): {"allocator_name": ("ref", "other"), "index_on_host": ("int64", 13)},
        ("string 0 is 0", "0"): {"allocator_name": ("str", "0")},
    }
    for k, stats in enumerate(odd.values()):
        builder.event("MemoryAllocation", 10**12 + k, line="odd", stats={**stats, "addr": 64 * k, "bytes_allocated": 64})
    path = tmp_path / "host0.xplane.pb"
    builder.write(path)
    profile = same(path.read_bytes(), monkeypatch)
    events = profile.events
    odd_rows = np.flatnonzero(events.time_ps >= 10**12)
    odd_rows = odd_rows[np.argsort(events.time_ps[odd_rows], kind="stable")]  # grouped by allocator: in time order
    assert [events.allocator_names[i] for i in events.allocator[odd_rows]] == [want for _, want in odd]
    expected = ["0", "1", "2", "3", "5", "-4", "", "pinned", "GPU_0_bfc", "13"]
    assert events.allocator_names == expected
    assert set(xprof_tool(str(path), "memory_profile")["memoryProfilePerAllocator"]) == set(expected)


def test_uint64_ids_are_integers_too(monkeypatch):
    """XProf reads a uint64 id as 0; this project reads uint64 as an integer everywhere, ids included."""
    b = ProfileBuilder(int_kind="uint64")
    b.add_memory_events([1, 2, 3], ALLOC, [8, 8, 8], 16, allocator=["2", "3", "2"], id_stat="index_on_host")
    b.event("MemoryDeallocation", 5, stats={"device_ordinal": ("uint64", (1 << 64) - 1), "addr": 8})
    profile = same(b.to_bytes(), monkeypatch)
    assert profile.events.allocator_names == ["2", "3", str((1 << 64) - 1)]


def test_spans_groups_and_device_planes_decode_identically(monkeypatch):
    b = ProfileBuilder(timestamp_ns=1_000)
    b.span("FunctionRun", 100, 900, group_id=1)
    b.span("__inference_train_step_41", 120, 880, line="tf_Compute", group_id=("uint64", 1))
    b.span("PjitFunction(step)", 1_000, 1_800, group_id=2)
    b.span("PjitFunction(step", 1_000, 1_800, group_id=("str", "3"))  # not a call: no closing parenthesis; no group
    b.span("TraceContext", 2_000, 2_500, group_id=-5)
    b.span("my_step", 3_000, 3_900, root=True, group_id=(1 << 63) - 1)
    b.span("not_root", 4_000, 4_100, stats={"_r": 0})
    b.span("root_by_uint", 4_200, 4_300, stats={"_r": ("uint64", 2)})
    b.span("not_root_str", 4_400, 4_500, stats={"_r": ("str", "1")})
    b.span("last_r_counts", 4_600, 4_700, stats={"_r": 1, "group_id": ("double", 4.0)})
    b.step(0, 5_000, 6_000)  # a step marker with _r=1: a root span too
    b.add_memory_events([150, 1_100, 1_200], [ALLOC, ALLOC, FREE], [8, 16, 8], 4, group_id=[1, None, -(1 << 63)])
    b.device_plane("/device:TPU:0", timestamp_ns=1_002)  # its lines start 2 ns after the host's
    b.xla_module("/device:TPU:0", "jit_step(3)", 100, 700, run_id=1)
    b.xla_module("/device:TPU:0", "jit_step(3)", 1_100, 1_700, run_id=2)
    b.device_step("/device:TPU:0", 0, 50, 750)
    b.device_event("/device:TPU:0", "XLA Ops", "fusion.1", 100, 10, stats={"group_id": 9, "_r": 1})  # not a span line
    b.device_event("/device:GPU:1", "XLA Modules", "jit_other(4)", 300, 50)
    b.device_event("/device:GPU:1", "Steps", "garbage", -40, -10, stats={"step_num": ("str", "x")})
    profile = same(b.to_bytes(), monkeypatch)
    spans = profile.spans
    rows = [
        (spans.names[n], int(src), int(dev), bool(root), int(a), int(z))
        for n, src, dev, root, a, z in zip(
            spans.name, spans.source, spans.device, spans.root, spans.start_ps, spans.end_ps, strict=True
        )
    ]
    assert profile.device_planes == ["/device:TPU:0", "/device:GPU:1"]
    # Device lines in the host's time base (TPU:0's start 2 ns = 2,000 ps later); no XLA Ops, no host call without
    # its ")", no `_r` of 0 or of a string; sorted by start.
    assert rows == [
        ("garbage", SPAN_DEVICE_STEP, 1, False, -40, -50),
        ("FunctionRun", SPAN_HOST_ROOT, -1, False, 100, 900),
        ("__inference_train_step_41", SPAN_HOST_ROOT, -1, False, 120, 880),
        ("jit_other(4)", SPAN_DEVICE_PROGRAM, 1, False, 300, 350),
        ("PjitFunction(step)", SPAN_HOST_ROOT, -1, False, 1_000, 1_800),
        ("TraceContext", SPAN_HOST_ROOT, -1, False, 2_000, 2_500),
        ("0", SPAN_DEVICE_STEP, 0, False, 2_050, 2_750),
        ("jit_step(3)", SPAN_DEVICE_PROGRAM, 0, False, 2_100, 2_700),
        ("my_step", SPAN_HOST_ROOT, -1, True, 3_000, 3_900),
        ("jit_step(3)", SPAN_DEVICE_PROGRAM, 0, False, 3_100, 3_700),
        ("root_by_uint", SPAN_HOST_ROOT, -1, True, 4_200, 4_300),
        ("last_r_counts", SPAN_HOST_ROOT, -1, True, 4_600, 4_700),
        ("train", SPAN_HOST_ROOT, -1, True, 5_000, 6_000),
    ]
    assert spans.names == sorted(spans.names)
    # A host span's line is its thread's position among the /host:CPU lines; device spans have none.
    lines = {spans.names[n]: int(line) for n, line in zip(spans.name, spans.line, strict=True)}
    assert (lines["FunctionRun"], lines["__inference_train_step_41"], lines["jit_step(3)"]) == (0, 1, -1)
    # Integer group ids of host events and memory events (not of device events), whatever their value.
    groups = profile.groups
    assert groups.group_id.tolist() == [1, 2, -(1 << 63), -5, (1 << 63) - 1]
    assert groups.start_ps.tolist() == [100, 1_000, 1_200, 2_000, 3_000]
    assert groups.end_ps.tolist() == [900, 1_800, 1_200, 2_500, 3_900]
    assert profile.events.group_id.tolist() == [1, -1, -(1 << 63)]


# --- damaged files: the same verdict as protobuf's -----------------------------------------


def _small_profile() -> bytes:
    builder, _ = synthesize_training(
        num_events=300, steps=4, allocators=("GPU_0_bfc", "cpu"), weights_per_allocator=2, cache_entries=2, live_temporaries=4
    )
    builder.add_hlo_module("jit_f(1)", b"\x0a\x00")
    return builder.to_bytes()


def test_truncated_files_fail_alike_and_name_the_file(monkeypatch):
    data = _small_profile()
    cuts = sorted(set(range(1, 300)) | set(range(300, len(data), max(1, len(data) // 400))))
    refused = 0
    for cut in cuts:
        fast, ref = decode_both(data[:cut], monkeypatch)
        assert_same(fast, ref)
        refused += isinstance(fast, str)
    assert refused > len(cuts) * 0.9
    fast, _ = decode_both(data[:-1], monkeypatch)
    assert isinstance(fast, str) and "incomplete or corrupt profile" in fast and PATH in fast
    # Cut anywhere, both say so with the bytes there are and at least those its last plane needs, and what to do.
    half = len(data) // 2
    fast, ref = decode_both(data[:half], monkeypatch)
    assert fast == ref and isinstance(fast, str)
    assert f"truncated ({half:,} of at least " in fast and files.TRUNCATED_ADVICE in fast


@pytest.mark.slow
def test_mutated_files_fail_or_decode_alike(monkeypatch):
    data = _small_profile()
    rng = random.Random(20261129)
    outcomes = {"refused": 0, "decoded": 0}
    for _ in range(400):
        mutated = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4))):
            at = rng.randrange(len(mutated))
            op = rng.random()
            if op < 0.5:
                mutated[at] ^= 1 << rng.randrange(8)
            elif op < 0.8:
                mutated[at] = rng.choice((0x00, 0x7F, 0x80, 0xFF, 0x0B, 0x0C, 0x13))
            else:
                del mutated[at : at + rng.randrange(1, 8)]
        fast, ref = decode_both(bytes(mutated), monkeypatch)
        assert_same(fast, ref)
        outcomes["refused" if isinstance(fast, str) else "decoded"] += 1
    assert min(outcomes.values()) > 20, outcomes


@pytest.mark.parametrize("length", [2**31 - 1, 2**32 + 5, 2**62, 2**64 - 1])
def test_huge_declared_lengths_are_refused(length, monkeypatch):
    data = cpu_plane(mem_event(1, 5)) + varint(1 << 3 | 2) + varint(length) + b"\x00" * 16
    fast, ref = decode_both(data, monkeypatch)
    assert_same(fast, ref)
    assert isinstance(fast, str) and "past the end" in fast


@pytest.mark.parametrize(("depth", "readable"), [(99, True), (100, True), (101, False)])
def test_nesting_limit_is_protobufs(depth, readable, monkeypatch):
    """Groups nested in an unknown field of the root: protobuf allows 100 levels."""
    data = varint(9 << 3 | 3) * depth + varint(9 << 3 | 4) * depth
    fast, ref = decode_both(data, monkeypatch)
    assert_same(fast, ref)
    assert isinstance(fast, str) != readable


def test_invalid_utf8_in_any_string_field_is_refused(monkeypatch):
    bad = b"\xc3\x28"
    for data in (
        ld(1, ld(2, bad)),  # plane name
        cpu_plane(ld(2, bad)),  # line name
        cpu_plane(mem_event(1, 5, stat(9, ld(5, bad)))),  # str stat of a memory event
        ld(1, ld(2, b"/other") + entry(5, 1, ld(3, bad))),  # a stat description on another plane
        ld(2, bad),  # XSpace.errors
    ):
        fast, ref = decode_both(data, monkeypatch)
        assert_same(fast, ref)
        assert isinstance(fast, str) and "incomplete or corrupt profile" in fast, (data, fast)
    # An unknown field is skipped unread, so its bytes are not checked: the profile is readable.
    readable = same(ld(9, bad) + ld(4, b"h"), monkeypatch)
    assert readable.host == "host0"


@pytest.mark.parametrize(
    "extra",
    [vi(3, 1), ld(1, b"\x01"), vi(2, 7), varint(9 << 3 | 3) + varint(9 << 3 | 4)],
    ids=["unknown field", "key as bytes", "value as varint", "group"],
)
def test_a_map_entry_with_another_field_is_dropped(extra, monkeypatch):
    """protobuf leaves such an entry out of the map: the stat it names is then unknown."""
    named_addr = vi(1, 30) + ld(2, vi(1, 30) + ld(2, b"addr"))
    kept = same(cpu_plane(mem_event(1, 5, stat(30, vi(4, 77))), tail=ld(5, named_addr)), monkeypatch)
    dropped = same(cpu_plane(mem_event(1, 5, stat(30, vi(4, 77))), tail=ld(5, named_addr + extra)), monkeypatch)
    assert kept.events.addr.tolist() == [77] and dropped.events.addr.tolist() == [0]


def _scanned(data: bytes | mmap.mmap | memoryview, **options: int) -> dict | str:
    """The scanner's raw output with its buffers as bytes, or its error message."""
    try:
        out = scanner.scan(data, **options)
    except scanner.ScanError as exc:
        return str(exc)
    out["columns"] = {name: bytes(memoryview(column)) for name, column in out["columns"].items()}
    for rows in ("steps", "spans", "groups"):
        out[rows] = bytes(memoryview(out[rows]))
    return out


def test_threads_and_chunks_do_not_change_the_scan():
    """The CPU plane's events cut into chunks and scanned by several threads: the same rows, strings and errors."""
    builder, _ = synthesize_training(num_events=6_000, steps=6, allocators=("a", "b", "c"), lines=("l1", "l2", "l3"))
    devices, _ = synthesize_devices(4, 6, group_ids=True, step_markers=True)
    seeds = [
        builder.to_bytes(),
        _small_profile(),
        devices.to_bytes(),
        *(p.read_bytes() for p in DEMO_LOGS.glob("*/plugins/profile/*/*.xplane.pb")),
    ]
    rng = random.Random(11)
    inputs = [*seeds, *(seed[: rng.randrange(len(seed))] for seed in seeds for _ in range(20))]
    for _ in range(100):  # mutations, some of them in the events the workers scan
        mutated = bytearray(rng.choice(seeds))
        mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        inputs.append(bytes(mutated))
    for data in inputs:
        one = _scanned(data)
        for threads, chunk_bytes in ((2, 1 << 20), (2, 300), (3, 64), (16, 1)):
            assert _scanned(data, threads=threads, chunk_bytes=chunk_bytes) == one
    with pytest.raises(ValueError):
        scanner.scan(seeds[0], threads=0)


ODD_SHAPES = ("first", "last", "twice", "other then memory", "other")


def _odd_shape_event(rng: random.Random, offset: int, shapes: tuple[str, ...]) -> bytes:
    """A memory event or not, of one of `shapes`, which the count of each chunk's rows (memory events whose
    metadata_id comes first) gets right or wrong."""
    allocator = stat(1, ld(5, rng.choice([b"GPU_0_bfc", b"cpu"])))
    stats = b"".join(ld(4, s) for s in (allocator, stat(3, vi(4, rng.randrange(1, 1 << 40))), stat(4, ld(5, b"Mul"))))
    memory = rng.choice([1, 2])
    shape = rng.choice(shapes)
    if shape == "first":  # counted, a row
        return ld(4, vi(1, memory) + vi(2, offset) + stats)
    if shape == "last":  # not counted, a row: the windows fall short
        return ld(4, vi(2, offset) + stats + vi(1, memory))
    if shape == "twice":  # counted, no row (the last id counts): the windows have room left
        return ld(4, vi(1, memory) + vi(2, offset) + stats + vi(1, 4))
    if shape == "other then memory":  # not counted, a row
        return ld(4, vi(1, 4) + vi(2, offset) + stats + vi(1, memory))
    return ld(4, vi(1, 3) + vi(2, offset) + vi(3, 5))


def test_rows_counted_wrong_land_where_one_thread_puts_them(monkeypatch):
    """Each thread writes its rows in a window sized by the memory events it counted ahead: events of shapes that
    make the count too high or too low give the same scan, at any thread count, as the reference decoder's."""
    rng = random.Random(7)
    # Counts too low and too high mixed (a window outgrown moves to storage of its own); only too high (each
    # window has room left, and the next one's rows move down); only too low.
    for case, shapes in enumerate([ODD_SHAPES, ("first", "twice", "other"), ("first", "last", "other")] * 4):
        lines = []
        for line in range(3):
            events = b"".join(_odd_shape_event(rng, i * 10, shapes) for i in range(rng.randrange(50, 400)))
            lines.append(vi(1, line) + ld(2, f"l{line}".encode()) + vi(3, 1000 * line) + events)
        data = cpu_plane(*lines)
        one = _scanned(data)
        assert isinstance(one, dict)
        for threads, chunk_bytes in ((2, 1 << 20), (2, 300), (3, 64), (16, 1)):
            assert _scanned(data, threads=threads, chunk_bytes=chunk_bytes) == one, (case, threads, chunk_bytes)
        same(data, monkeypatch)


def test_planes_past_max_planes_are_counted_not_walked():
    data = _small_profile()
    whole = _scanned(data)
    assert isinstance(whole, dict) and whole["has_cpu"]
    planes = whole["num_planes"]
    assert _scanned(data, max_planes=planes) == whole
    # A damaged plane past the cap is never walked: the count alone refuses the file.
    over = _scanned(data + b"\x0a\x02\xff\xff", max_planes=planes)
    assert isinstance(over, dict) and over["num_planes"] == planes + 1 and not over["has_cpu"]
    assert "at byte" in str(_scanned(data + b"\x0a\x02\xff\xff"))
    with pytest.raises(ValueError):
        scanner.scan(data, max_planes=-1)


def test_both_decoders_refuse_past_the_planes_cap_alike(monkeypatch):
    data = _small_profile()
    whole = _scanned(data)
    assert isinstance(whole, dict)
    planes = whole["num_planes"]
    at_cap = data + b"\x0a\x00" * (limits.MAX_PLANES - planes)
    fast, ref = decode_both(at_cap, monkeypatch)
    assert_same(fast, ref)
    assert isinstance(fast, HostProfile) and len(fast.events.time_ps)
    fast, ref = decode_both(at_cap + b"\x0a\x00", monkeypatch)
    assert fast == ref == f"{PATH}: an XSpace profile too large to read (it has more than {limits.MAX_PLANES} planes)"


def _multi_chunk_profile() -> bytes:
    """~25 MB: several 1 MB chunks of /host:CPU events in three lines, and 16 KB of HLO bytes in other pages."""
    builder, _ = synthesize_training(num_events=200_000, steps=8, allocators=("GPU_0_bfc", "cpu"), lines=("l1", "l2", "l3"))
    builder.add_hlo_module("jit_step(3)", bytes(range(256)) * 64)
    return builder.to_bytes()


@pytest.mark.slow
def test_dropping_scanned_pages_does_not_change_the_scan():
    """drop=True gives each scanned chunk's whole pages back (they read as zeros after): same rows, strings, HLO, errors."""
    data = _multi_chunk_profile()
    rng = random.Random(5)
    inputs = [data, data[: len(data) * 3 // 4]]
    for _ in range(12):  # a flipped bit late in the file: a chunk fails after earlier ones were dropped
        mutated = bytearray(data)
        mutated[rng.randrange(len(data) // 2, len(data))] ^= 1 << rng.randrange(8)
        inputs.append(bytes(mutated))
    for source in inputs:
        plain = _scanned(source)
        for threads, chunk_bytes in ((1, 1 << 20), (2, 1 << 20), (3, 20_000), (2, 4096)):
            with mmap.mmap(-1, len(source), flags=mmap.MAP_PRIVATE) as memory:
                memory[:] = source
                assert _scanned(memory, threads=threads, chunk_bytes=chunk_bytes, drop=True) == plain
                given_back = memory[:].count(0) - source.count(0)
            if source is data:  # chunks of about a page share most of their pages with a neighbour
                assert given_back > (len(data) // 2 if chunk_bytes > 5 * mmap.PAGESIZE else 0), (threads, chunk_bytes)
    with pytest.raises(BufferError):  # a bytes object is never written over
        scanner.scan(data, drop=True)


def _resident_kib(start: int) -> int:
    """The resident KiB of this process's mapping that starts at `start` (/proc/self/smaps)."""
    with open("/proc/self/smaps") as smaps:
        lines = iter(smaps)
        for line in lines:
            if line.startswith(f"{start:x}-"):
                return next(int(row.split()[1]) for row in lines if row.startswith("Rss:"))
    raise AssertionError(f"no mapping at {start:x}")


@pytest.mark.parametrize("mapped", [True, False])
def test_read_host_drops_the_pages_of_a_private_copy_and_gives_the_plain_profile(tmp_path, monkeypatch, mapped):
    """A local file is mapped (its scanned pages leave the process's resident set), or copied (they are zeroed)."""
    monkeypatch.setattr(files, "ALLOW_MAP", mapped)
    data = _multi_chunk_profile()
    assert len(data) > scan.SCAN_THREADS << 20  # several chunks for each thread
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(data)
    given_back = []

    def scan_then_look(buffer: memoryview, **options: int) -> dict:
        assert options["drop"] and not buffer.readonly
        pointer = ctypes.c_char.from_buffer(buffer)
        start = ctypes.addressof(pointer)
        del pointer  # the view is exported no longer: the mapping may close
        scanned = scanner.scan(buffer, **options)
        # The scan reads every page of the mapping: those not resident after it were given back.
        given_back.append(len(data) - (_resident_kib(start) << 10) if mapped else bytes(buffer).count(0) - data.count(0))
        return scanned

    monkeypatch.setattr(scan, "_scanner", SimpleNamespace(scan=scan_then_look, ScanError=scanner.ScanError))
    dropped = reader.read_host(str(path), "host0")
    assert given_back[0] > len(data) // 2
    monkeypatch.setattr(scan, "_scanner", scanner)
    assert_same(dropped, reader.decode(data, "host0", str(path)))  # the whole file as bytes, nothing dropped
    for cut in (data[: len(data) // 3], b""):  # the same errors as the plain path
        path.write_bytes(cut)
        with pytest.raises(LeakfinderError) as via_copy:
            reader.read_host(str(path), "host0")
        with pytest.raises(LeakfinderError) as via_bytes:
            reader.decode(cut, "host0", str(path))
        assert via_copy.value.message == via_bytes.value.message


_UNDER_AN_ADDRESS_SPACE_LIMIT = """
import hashlib, json, resource, sys
from tb_leakfinder.read.formats.xplane import scan
data = open(sys.argv[1], "rb").read()
scanner = scan.compiled_scanner()
with open("/proc/self/status") as f:
    used = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
outcomes = []
for extra_mb in map(int, sys.argv[2:]):
    resource.setrlimit(resource.RLIMIT_AS, (used + (extra_mb << 20), resource.RLIM_INFINITY))
    try:
        out = scanner.scan(data, threads=2, chunk_bytes=1 << 20)
        digest = hashlib.sha256(b"".join(bytes(memoryview(c)) for c in out["columns"].values())).hexdigest()
        del out
        outcomes.append(digest)
    except MemoryError:
        outcomes.append("MemoryError")
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print(json.dumps(outcomes))
"""


@pytest.mark.slow
def test_out_of_address_space_is_a_memory_error_and_leaves_the_process_sound(tmp_path):
    """Column room made up front, the threads' own columns and their growth may all fail to map: each failure is
    a MemoryError (or a scan within what is left), never a crash, and later scans are whole again."""
    data = _multi_chunk_profile()
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(data)
    limits = [str(mb) for mb in range(8, 168, 8)]  # MB of address space left to the scan: none enough, then all
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _UNDER_AN_ADDRESS_SPACE_LIMIT, str(path), *limits, "4096"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = json.loads(done.stdout)
    whole = outcomes[-1]
    assert whole != "MemoryError"
    assert set(outcomes) <= {whole, "MemoryError"} and outcomes[0] == "MemoryError", outcomes


def test_threads_and_host_calls_agree_with_the_reference(monkeypatch):
    """Each memory event's line and the host calls (Python frames, transfers) that name allocations."""
    builder, _ = jax_training(steps=6)
    builder.span("$builtins isinstance", 10, 20, line="other_thread")
    builder.span("$", 30, 40)  # a bare "$" is no Python function
    profile = same(builder.to_bytes(), monkeypatch)
    calls = profile.spans.source == SPAN_HOST_CALL
    names = {profile.spans.names[i] for i in profile.spans.name[calls]}
    assert {"$train.py:88 main", "$train.py:40 train_step", "DevicePut", "$builtins isinstance"} <= names
    assert "PjRtStreamExecutorClient::LinearizeHostBufferInto" in names and "$" not in names
    assert not ({"PjitFunction(train_step)", "train"} & names)  # step-like spans keep their own source
    assert set(profile.spans.device[calls].tolist()) == {-1}
    main = profile.spans.names.index("$train.py:88 main")
    (python,) = set(profile.spans.line[profile.spans.name == main].tolist())
    assert set(profile.events.line.tolist()) == {python}  # every allocation of the profile is on the python thread
    assert len(set(profile.spans.line[calls].tolist())) == 2


def test_runtime_calls_flows_and_program_ids_decode_identically(monkeypatch):
    """The spans that tie an allocation to its execution: PJRT's runtime calls by name, kernel launches by their
    `program_id`, and the flow ids (`_p`, `_c`) of host and device events, of any integer kind."""
    b = ProfileBuilder(timestamp_ns=1_000, int_kind="uint64")
    b.span("PjitFunction(f)", 100, 900)
    b.span("PjRtStreamExecutorLoadedExecutable::Execute", 110, 890, stats={"_pt": 5, "_p": 4294967342})
    b.span("PjRtStreamExecutorLoadedExecutable::EnqueueExecution", 120, 700, line="py_xla_execute/1", stats={"_c": 4294967342})
    b.span("Build buffer allocations", 130, 140, line="py_xla_execute/1")
    b.span("jit_f:XLA GPU module", 150, 600, line="py_xla_execute/1", stats={"_p": ("str", "9")})  # a string is no flow
    b.span("hipModuleLaunchKernel", 160, 170, line="Host Threads/7", stats={"program_id": 12, "hlo_module": "jit_f"})
    b.span("hipMemcpyDtoDAsync", 180, 190, line="Host Threads/7")  # neither runtime nor program: no span
    b.span("DevicePut", 200, 210, stats={"_p": ("int64", -3)})  # a transfer keeps its own source, and its flow
    b.span("ExecutePrepare", 220, 230, stats={"_c": 1, "_p": 2, "program_id": ("double", 1.0)})  # the last integers
    b.xla_module("/device:TPU:0", "jit_f(12)", 400, 500, run_id=3)
    b.device_event("/device:TPU:0", "XLA Modules", "jit_f(12)", 600, 50, stats={"_ct": 12, "_c": 77})
    profile = same(b.to_bytes(), monkeypatch)
    s = profile.spans
    rows = [
        (s.names[n], int(src), int(o), int(i), int(p))
        for n, src, o, i, p in zip(s.name, s.source, s.flow_out, s.flow_in, s.program_id, strict=True)
    ]
    assert rows == [
        ("PjitFunction(f)", SPAN_HOST_ROOT, 0, 0, -1),
        ("PjRtStreamExecutorLoadedExecutable::Execute", SPAN_HOST_RUNTIME, 4294967342, 0, -1),
        ("PjRtStreamExecutorLoadedExecutable::EnqueueExecution", SPAN_HOST_RUNTIME, 0, 4294967342, -1),
        ("Build buffer allocations", SPAN_HOST_RUNTIME, 0, 0, -1),
        ("jit_f:XLA GPU module", SPAN_HOST_RUNTIME, 0, 0, -1),
        ("hipModuleLaunchKernel", SPAN_HOST_RUNTIME, 0, 0, 12),
        ("DevicePut", SPAN_HOST_CALL, -3, 0, -1),
        ("ExecutePrepare", SPAN_HOST_RUNTIME, 2, 1, -1),
        ("jit_f(12)", SPAN_DEVICE_PROGRAM, 0, 0, -1),
        ("jit_f(12)", SPAN_DEVICE_PROGRAM, 0, 77, -1),
    ]
