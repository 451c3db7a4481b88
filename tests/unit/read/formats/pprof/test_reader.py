"""Device memory profiles into the model: samples as live allocations, stacks as host calls, unreadable
files as the project's error naming the file."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest

from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, DEVICE_UNKNOWN, EVENT_COLUMNS, SPAN_HOST_CALL, AllocatorInfo, CompiledProgramsInfo
from tb_leakfinder.read.formats.pprof import reader
from tb_leakfinder.testing.pprof_builder import PprofBuilder

MIB = 1 << 20
SITE = "/usr/lib/python3.11/site-packages/jax/_src/numpy/array_creation.py"
USER = "/home/me/train.py"
# As JAX records them, innermost first: a library call inside the user's function inside the module.
STACK = [(SITE, "full", 90, 101), (USER, "make_batch", 12, 14), (USER, "<module>", 1, 30)]


def _read(tmp_path, builder: PprofBuilder, name: str = "snap.prof"):
    path = builder.write(tmp_path / name)
    return reader.read_host(str(path), "memory_profile")


def test_each_sample_is_a_live_allocation_of_its_device(tmp_path):
    b = PprofBuilder(time_nanos=1_764_000_000_123_456_789)
    b.sample(MIB, STACK)
    b.sample(3 * MIB, STACK[1:], count=3, device="cpu:1")
    b.sample(0, STACK, kind="executable")  # what JAX's executables on CPU hold: a program, but no allocation
    b.sample(2 * MIB, STACK, kind="executable")  # a compiled program: no buffer
    b.sample(4 * MIB, STACK[1:])
    profile = _read(tmp_path, b)
    e = profile.events
    assert list(e.requested_bytes) == list(e.chunk_bytes) == [MIB, 3 * MIB, 4 * MIB]
    assert list(e.time_ps) == [1000, 2000, 3000] and profile.duration_ps == 4000
    assert set(e.kind.tolist()) == {ALLOC}
    assert len(set(e.addr.tolist())) == 3 and 0 not in e.addr
    assert e.allocator_names == ["cpu:0", "cpu:1"]
    assert [e.allocator_names[a] for a in e.allocator] == ["cpu:0", "cpu:1", "cpu:0"]
    assert list(e.heap_bytes) == [MIB, 3 * MIB, 5 * MIB]  # each allocator's running sum
    assert [e.strings[r] for r in e.region] == ["buffer", "buffer", "buffer"]
    assert profile.compiled_programs == [CompiledProgramsInfo("cpu:0", 2, 2 * MIB)]
    assert set(e.op.tolist()) == set(e.shape.tolist()) == set(e.dtype.tolist()) == set(e.line.tolist()) == {0}
    assert set(e.group_id.tolist()) == {-1}
    assert {name: getattr(e, name).dtype for name in EVENT_COLUMNS} == {n: np.dtype(t) for n, t in EVENT_COLUMNS.items()}
    assert profile.allocators == {"cpu:0": AllocatorInfo("cpu:0", True), "cpu:1": AllocatorInfo("cpu:1", True)}
    assert profile.start_time_ns == 1_764_000_000_123_456_789 and profile.one_moment
    assert len(profile.steps) == 0 and profile.warnings == []


def test_an_executable_sample_counts_its_programs_by_where_they_were_compiled(tmp_path):
    # JAX writes one executable sample per stack, its programs' number in `allocations`: 0 bytes each on CPU,
    # where they carry no device label.
    compiled_at = [(SITE, "backend_compile_and_load", 340, 353), (USER, "<module>", 1, 15)]
    b = PprofBuilder()
    b.sample(MIB, STACK)
    b.sample(0, compiled_at, kind="executable", count=6, device="")
    b.sample(0, STACK, kind="executable", count=1, device="")
    b.sample(0, STACK, kind="executable", count=2, device="")  # the same stack again: its programs add up
    b.sample(4 * MIB, compiled_at, kind="executable", count=3, device="gpu:0")
    profile = _read(tmp_path, b)
    assert profile.compiled_programs == [CompiledProgramsInfo(DEVICE_UNKNOWN, 9, 0), CompiledProgramsInfo("gpu:0", 3, 4 * MIB)]
    sites = {(s.device, s.stack[-1], s.count, s.bytes) for s in profile.program_sites}
    assert sites == {
        (DEVICE_UNKNOWN, f"${USER}:15 <module>", 6, 0),
        (DEVICE_UNKNOWN, f"${USER}:30 <module>", 3, 0),
        ("gpu:0", f"${USER}:15 <module>", 3, 4 * MIB),
    }
    (innermost,) = {s.stack[0] for s in profile.program_sites if s.stack[-1].endswith(":15 <module>")}
    assert innermost == f"${SITE}:353 backend_compile_and_load"
    assert list(profile.events.requested_bytes) == [MIB]  # no program is an allocation


def test_stacks_are_nested_host_calls_around_each_sample(tmp_path):
    b = PprofBuilder()
    b.sample(MIB, STACK)
    b.sample(MIB, STACK[1:])
    spans = _read(tmp_path, b).spans
    assert spans.names == sorted(spans.names)
    rows = [(spans.names[n], int(s), int(t)) for n, s, t in zip(spans.name, spans.start_ps, spans.end_ps, strict=True)]
    # The line each frame was running (the buffer's line in the user's function); the outermost frame is the widest.
    assert rows == [
        (f"${USER}:30 <module>", 997, 1003),
        (f"${USER}:14 make_batch", 998, 1002),
        (f"${SITE}:101 full", 999, 1001),
        (f"${USER}:30 <module>", 1998, 2002),
        (f"${USER}:14 make_batch", 1999, 2001),
    ]
    assert set(spans.source.tolist()) == {SPAN_HOST_CALL}
    assert set(spans.line.tolist()) == {0} and set(spans.device.tolist()) == {-1} and not spans.root.any()


def test_the_attribution_gives_each_buffer_its_user_frames(tmp_path):
    b = PprofBuilder()
    for _ in range(3):
        b.sample(MIB, STACK)
    b.sample(4 * MIB, [(SITE, "full", 90, 101), (USER, "warm_up", 40, 41), (USER, "<module>", 1, 29)])
    analysis = analyze_host(_read(tmp_path, b))
    (allocator,) = analysis.allocators
    stacks = {allocator.sites[s].stack for s in allocator.buffers.site.tolist()}
    assert stacks == {
        ("train.py:14 in make_batch", "train.py:30 in <module>"),
        ("train.py:41 in warm_up", "train.py:29 in <module>"),
    }
    assert {allocator.sites[s].where for s in allocator.buffers.site.tolist()} == {
        "train.py:14 in make_batch",
        "train.py:41 in warm_up",
    }


def test_a_flax_layer_below_the_users_line_is_its_model_frame(tmp_path):
    flax = "/usr/lib/python3.11/site-packages/flax/linen/linear.py"
    b = PprofBuilder()
    b.sample(MIB, [(SITE, "full", 90, 101), (flax, "__call__", 230, 262), (USER, "make_batch", 12, 14)])
    b.sample(MIB, STACK)
    (allocator,) = analyze_host(_read(tmp_path, b)).allocators
    sites = {allocator.sites[s] for s in allocator.buffers.site.tolist()}
    assert {(site.where, site.model_frame) for site in sites} == {
        ("train.py:14 in make_batch", "__call__ (linear.py:262)"),  # pprof's lines are the lines run
        ("train.py:14 in make_batch", ""),
    }


def test_inlined_lines_a_writer_without_first_lines_and_missing_labels(tmp_path):
    b = PprofBuilder()
    b.sample(MIB, [(USER, "outer", 0, 7)], device="", kind="")
    location = b.message.location[0]
    outer = (location.line[0].function_id, location.line[0].line)
    inner = b.message.function.add()
    inner.id, inner.name, inner.filename = 99, b.string("inlined"), b.string(USER)
    del location.line[:]
    # pprof: a location's last line is the caller into which the ones before it were inlined.
    for function_id, line in ((99, 3), outer):
        added = location.line.add()
        added.function_id, added.line = function_id, line
    profile = _read(tmp_path, b)
    spans = profile.spans
    assert [spans.names[n] for n in spans.name] == [f"${USER}:7 outer", f"${USER}:3 inlined"]
    # Older JAX leaves the device label empty: a device of its own, named as such.
    assert profile.events.allocator_names == [DEVICE_UNKNOWN]
    assert profile.allocators == {DEVICE_UNKNOWN: AllocatorInfo("device unknown", False)}
    assert profile.events.strings == [""] and profile.start_time_ns is None


def test_samples_without_a_bytes_value_are_left_out_with_a_warning(tmp_path):
    b = PprofBuilder()
    b.sample(MIB, STACK, values=[1])
    b.sample(MIB, STACK, values=[1, -5])
    b.sample(MIB, STACK)
    profile = _read(tmp_path, b)
    assert list(profile.events.requested_bytes) == [MIB]
    assert len(profile.warnings) == 2
    assert "1 samples have no bytes value" in profile.warnings[0]
    assert "1 samples have a negative bytes value" in profile.warnings[1]


def test_the_bytes_value_is_found_by_its_unit(tmp_path):
    b = PprofBuilder(sample_types=[("space", "bytes"), ("objects", "count")])
    b.sample(0, values=[5 * MIB, 5])
    assert list(_read(tmp_path, b).events.requested_bytes) == [5 * MIB]


def test_an_empty_snapshot_is_no_buffers(tmp_path):
    profile = _read(tmp_path, PprofBuilder())
    assert len(profile.events) == 0 and len(profile.spans) == 0
    assert profile.warnings == [f"{tmp_path / 'snap.prof'}: the device memory profile holds no live buffers"]
    assert analyze_host(profile).allocators == []


def test_deep_stacks_keep_their_innermost_frames(tmp_path):
    b = PprofBuilder()
    b.sample(MIB, [(USER, f"f{k}", k + 1, k + 2) for k in range(reader.MAX_FRAMES + 20)])
    b.sample(MIB, STACK)
    profile = _read(tmp_path, b)
    spans = profile.spans
    first = spans.start_ps < 1500
    assert int(first.sum()) == reader.MAX_FRAMES
    assert int(spans.end_ps[first].max()) < int(spans.start_ps[~first].min())  # the samples' calls do not overlap
    assert "1 samples' stacks are deeper than" in profile.warnings[0]


def _error(tmp_path, data: bytes, name: str = "bad.prof") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(LeakfinderError) as info:
        reader.read_host(str(path), "memory_profile")
    assert info.value.source == str(path)
    assert info.value.message.startswith(f"{path}: not a readable device memory profile (")
    return info.value.message


def _built() -> bytes:
    b = PprofBuilder()
    b.sample(MIB, STACK)
    return b.to_gzip()


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "the file is empty"),
        (b"\x0a\x02\x08\x01", "not gzip-compressed"),
        (_built()[:-12], "truncated"),
        (_built()[:20], "truncated"),
        (_built()[:10] + b"\xff" * 20 + _built()[30:], "corrupt gzip data"),
        (_built() + b"garbage", "bytes that are not gzip data follow the profile"),
        (gzip.compress(b"\x0a\x05\x08"), "not a pprof Profile"),
        (gzip.compress(b""), "the profile is empty"),
    ],
    ids=["empty", "not_gzip", "truncated", "truncated_header", "corrupt_deflate", "trailing", "not_profile", "empty_profile"],
)
def test_unreadable_files_are_the_project_error(tmp_path, data, says):
    assert says in _error(tmp_path, data)


def test_references_the_profile_lacks(tmp_path):
    b = PprofBuilder()
    b.sample(MIB, STACK)
    b.message.sample[0].location_id.append(77)
    assert "a sample names location 77, which the profile lacks" in _error(tmp_path, gzip.compress(b.to_bytes()))
    b = PprofBuilder()
    b.sample(MIB, STACK)
    b.message.location[0].line[0].function_id = 55
    assert "location 1 names function 55, which it lacks" in _error(tmp_path, gzip.compress(b.to_bytes()))
    b = PprofBuilder()
    b.sample(MIB, STACK)
    b.message.function[0].name = 10_000
    assert "string 10000 is not in the table" in _error(tmp_path, gzip.compress(b.to_bytes()))


def test_a_profile_of_something_else_says_what_it_counts(tmp_path):
    b = PprofBuilder(sample_types=[("samples", "count"), ("cpu", "nanoseconds")])  # a CPU profile
    b.sample(0, STACK, values=[3, 30_000_000])
    message = _error(tmp_path, b.to_gzip())
    assert "no sample type counts bytes; its sample types: samples/count, cpu/nanoseconds" in message


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_before_it_is_held(tmp_path):
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (16 << 20)
    bomb = b"".join(deflate.compress(block) for _ in range((reader.MAX_PROFILE_BYTES >> 24) + 4)) + deflate.flush()
    assert len(bomb) < reader.MAX_PROFILE_BYTES // 500
    assert f"it decompresses to more than {reader.MAX_PROFILE_BYTES} bytes" in _error(tmp_path, bomb)


def test_gzip_members_and_padding(tmp_path):
    b = PprofBuilder()
    b.sample(MIB, STACK)
    raw = b.to_bytes()
    half = len(raw) // 2
    # Two members hold one message whose halves are concatenated; zero padding after the last is ignored.
    data = gzip.compress(raw[:half]) + gzip.compress(raw[half:]) + b"\0" * 8
    path = tmp_path / "two.prof"
    path.write_bytes(data)
    assert list(reader.read_host(str(path), "h").events.requested_bytes) == [MIB]


def test_gunzip_stops_exactly_at_its_limit():
    data = gzip.compress(b"x" * 1000)
    assert bytes(reader.gunzip(data, "p", limit=1000)) == b"x" * 1000
    with pytest.raises(LeakfinderError, match="more than 999 bytes"):
        reader.gunzip(data, "p", limit=999)
