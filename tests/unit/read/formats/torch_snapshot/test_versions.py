"""Snapshots of every historical shape (PyTorch 1.13, 2.0, 2.1 on), as the tests build them from PyTorch's own
`_snapshot()` code of each version: blocks without addresses, histories, `cpp_frames` texts, oom entries."""

from __future__ import annotations

import pytest

from tb_leakfinder.analyses.pipeline import analyze_host
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.memory import ALLOC, FREE
from tb_leakfinder.read.formats.torch_snapshot import reader
from tb_leakfinder.read.formats.torch_snapshot.format import HOST
from tb_leakfinder.testing.torch_snapshot_builder import VERSIONS, SnapshotBuilder, op_frames

MIB = 1 << 20
BASE = 0x7F00_0000_0000
USER = "/home/me/train.py"
STACK = [(USER, 14, "train_step"), (USER, 30, "<module>")]


def _read(tmp_path, builder: SnapshotBuilder, name: str = "snap.pickle"):
    return reader.read_host(str(builder.write(tmp_path / name)), HOST)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_pairs_its_entries_and_sizes_live_blocks(tmp_path, version):
    b = SnapshotBuilder(version=version)
    b.alloc(BASE, 2 * MIB - 100, STACK, time_us=1)
    b.alloc(BASE + 3 * MIB, MIB, STACK, time_us=2)
    b.free(BASE + 3 * MIB, MIB, time_us=3)
    # The live block holds the 2 MiB - 100 request: its chunk is the block's 2 MiB, its address its segment's.
    b.segment(BASE, [(BASE, 2 * MIB, 2 * MIB - 100, "active_allocated", STACK), (BASE + 2 * MIB, 2 * MIB, 0, "inactive", ())])
    profile = _read(tmp_path, b)
    events = profile.events
    assert events.kind.tolist() == [ALLOC, ALLOC, FREE]
    assert events.addr.tolist() == [BASE, BASE + 3 * MIB, BASE + 3 * MIB]
    assert events.chunk_bytes.tolist() == [2 * MIB, MIB, MIB]
    assert profile.allocators["cuda:0"].reserved_bytes == 4 * MIB
    assert profile.allocators["cuda:0"].out_of_memory == ""
    timed = version == "2.1"
    assert any("carry no time_us" in w for w in profile.warnings) != timed
    (allocator,) = analyze_host(profile).allocators
    assert allocator.summary.never_freed_bytes == 2 * MIB
    assert allocator.sites[int(allocator.buffers.site[0])].where == "train.py:14 in train_step"


@pytest.mark.parametrize("version", ["1.13", "2.0"])
def test_an_old_snapshot_of_live_blocks_gets_their_addresses_from_their_segment(tmp_path, version):
    """PyTorch 2.0's `_snapshot()` keeps one trace entry unless told more: after an out-of-memory error, the oom
    entry alone. The blocks, with no address of their own, are what there is."""
    b = SnapshotBuilder(version=version)
    b.oom(8 * MIB, device_free=MIB)
    blocks = [
        (BASE, 2 * MIB, 2 * MIB, "active_allocated", STACK),
        (BASE + 2 * MIB, MIB, 0, "inactive", ()),
        (BASE + 3 * MIB, 4 * MIB, 4 * MIB - 512, "active_awaiting_free", [(USER, 20, "evaluate")]),
    ]
    b.segment(BASE, blocks)
    b.segment(BASE + 64 * MIB, [(BASE + 64 * MIB, MIB, MIB, "active_allocated", STACK)])
    raw = b.snapshot["segments"][0]["blocks"]
    assert "address" not in raw[0] and raw[2]["state"] == "active_pending_free"
    profile = _read(tmp_path, b)
    assert profile.one_moment
    events = profile.events
    assert events.addr.tolist() == [BASE, BASE + 3 * MIB, BASE + 64 * MIB]
    assert events.requested_bytes.tolist() == [2 * MIB, 4 * MIB - 512, MIB]
    assert events.chunk_bytes.tolist() == [2 * MIB, 4 * MIB, MIB]
    assert any("one trace entry and at most one an allocation or free (PyTorch 2.0 keeps one" in w for w in profile.warnings)
    info = profile.allocators["cuda:0"]
    assert info.out_of_memory == "its trace records 1 oom entry"
    assert info.reserved_bytes == 8 * MIB


def test_a_block_without_address_in_a_segment_without_one_is_the_project_error(tmp_path):
    b = SnapshotBuilder(version="2.0")
    b.segment(BASE, [(BASE, MIB, MIB, "active_allocated", STACK)])
    del b.snapshot["segments"][0]["address"]
    with pytest.raises(LeakfinderError, match=r"segments\[0\]'s address \(its block 0 has none\) is None"):
        _read(tmp_path, b)


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_cpp_frames_name_the_op_of_a_buffer_without_python_frames(tmp_path, version):
    b = SnapshotBuilder(version=version)
    b.alloc(BASE, MIB, (), time_us=1, cpp=op_frames("bmm", "BmmBackward0"))
    b.alloc(BASE + MIB, MIB, (), time_us=2, cpp=op_frames("clone"))
    b.alloc(BASE + 2 * MIB, MIB, (), time_us=3, cpp=op_frames("mul_Tensor"))
    b.alloc(BASE + 3 * MIB, MIB, STACK, time_us=4, cpp=op_frames("mul_Tensor"))  # the user's line names it
    b.alloc(BASE + 4 * MIB, MIB, (), time_us=5)
    events = _read(tmp_path, b).events
    assert [events.strings[k] for k in events.op] == ["BmmBackward0 (backward of bmm)", "aten::clone", "aten::mul", "", ""]


def test_a_primitive_alone_names_itself(tmp_path):
    b = SnapshotBuilder()
    b.alloc(BASE, MIB, (), time_us=1, cpp=["at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>)"])
    events = _read(tmp_path, b).events
    assert [events.strings[k] for k in events.op] == ["aten::empty_strided"]


@pytest.mark.parametrize(
    ("name", "blocks", "cause"),
    [
        ("snap.pickle", [(BASE, MIB, MIB, "active_allocated", STACK)], "every segment of its memory is full"),
        ("snap.pickle", [(BASE, MIB, MIB, "active_allocated", STACK), (BASE + MIB, MIB, 0, "inactive", ())], ""),
        (
            "rank0_oom_snapshot.pickle",
            [(BASE, MIB, MIB, "active_allocated", STACK), (BASE + MIB, MIB, 0, "inactive", ())],
            "its file name says so",
        ),
        ("zoom.pickle", [(BASE, MIB, MIB, "active_allocated", STACK), (BASE + MIB, MIB, 0, "inactive", ())], ""),
    ],
)
def test_an_out_of_memory_snapshot_is_told_by_its_segments_or_its_name(tmp_path, name, blocks, cause):
    b = SnapshotBuilder()
    b.alloc(BASE, MIB, STACK, time_us=1)
    b.segment(BASE, blocks)
    assert _read(tmp_path, b, name).allocators["cuda:0"].out_of_memory == cause


def test_windows_frames_name_the_users_line(tmp_path):
    b = SnapshotBuilder()
    stack = [
        (r"C:\Users\me\owl\.venv\Lib\site-packages\torch\nn\modules\module.py", 1747, "_call_impl"),
        (r"C:\research\owl\client.py", 57, "step"),
        (r"\\labserver\share\owl\run.py", 9, "<module>"),
    ]
    b.alloc(BASE, MIB, stack, time_us=1)
    (allocator,) = analyze_host(_read(tmp_path, b)).allocators
    site = allocator.sites[int(allocator.buffers.site[0])]
    assert (site.where, site.stack) == ("client.py:57 in step", ("client.py:57 in step", "run.py:9 in <module>"))
