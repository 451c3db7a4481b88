"""The snapshot's unpickler builds builtins only: a pickle that would run code, or that is cut short or broken,
is the project's error naming the file, and nothing in it runs."""

from __future__ import annotations

import os
import pickle
import pickletools
import re
from pathlib import Path

import pytest

from tb_leakfinder.engine.engine import analyze_file
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.torch_snapshot import unpickle
from tb_leakfinder.read.formats.torch_snapshot.format import HOST
from tb_leakfinder.testing.torch_snapshot_builder import SnapshotBuilder


class _RunsCode:
    """Pickles as a call of `function(argument)`, which a default unpickler makes while loading."""

    def __init__(self, function, argument: str) -> None:
        self.function, self.argument = function, argument

    def __reduce__(self):
        return self.function, (self.argument,)


def _hostile(tmp_path, function, argument: str, protocol: int) -> str:
    snapshot = SnapshotBuilder().snapshot
    snapshot["segments"].append(_RunsCode(function, argument))
    path = tmp_path / "memory_snapshot.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=protocol))
    return str(path)


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("via", ["os.system", "exec"])
def test_a_pickle_that_would_run_code_is_refused_and_runs_nothing(tmp_path, protocol, via):
    marker = tmp_path / "ran"
    if via == "os.system":
        path = _hostile(tmp_path, os.system, f"touch {marker}", protocol)
    else:
        path = _hostile(tmp_path, exec, f"open({str(marker)!r}, 'w').close()", protocol)
    with pytest.raises(LeakfinderError) as caught:
        analyze_file(path, HOST, str(tmp_path))
    message = str(caught.value)
    assert message.startswith(f"{path}: not a readable PyTorch memory snapshot (it needs the class or function ")
    # Protocol 2 names builtins by their Python 2 module, __builtin__.
    assert any(f"{module}.{via.rpartition('.')[2]}'" in message for module in ("posix", "os", "builtins", "__builtin__"))
    assert caught.value.source == path
    assert not marker.exists()


def test_the_hostile_pickle_does_name_its_callable_and_call_it(tmp_path):
    """What the refusal is tested on, read opcode by opcode (pickletools builds nothing): a global, then REDUCE."""
    path = _hostile(tmp_path, exec, "pass", 4)
    names = [op.name for op, _, _ in pickletools.genops(Path(path).read_bytes())]
    assert "STACK_GLOBAL" in names and "REDUCE" in names


class _Persistent(pickle.Pickler):
    def persistent_id(self, obj):
        return "tensor-0" if obj == "shared" else None


def test_persistent_ids_are_refused(tmp_path):
    path = tmp_path / "s.pickle"
    with open(path, "wb") as f:
        _Persistent(f, protocol=4).dump({"segments": ["shared"]})
    with pytest.raises(LeakfinderError, match="refers to a persistent object"):
        unpickle.load(path.read_bytes(), str(path))


def test_the_real_format_needs_no_class():
    data = SnapshotBuilder().to_bytes(5)
    assert unpickle.load(data, "x.pickle") == {"segments": [], "device_traces": [[]]}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "the file is empty"),
        (b"{not a pickle}", "not a pickle of protocol 2 to 5"),
        (pickle.dumps({"segments": []}, protocol=0), "not a pickle of protocol 2 to 5"),
        (SnapshotBuilder().to_bytes()[:-7], f"truncated ({len(SnapshotBuilder().to_bytes()) - 7} bytes: the pickle ends"),
        (b"\x80\x05\x96\x00\x00\x00\x80\x00\x00\x00\x00.", "it holds a bytearray"),  # BYTEARRAY8 of 2 GiB
        (b"\x80\x04K", "a broken pickle"),  # BININT1 without its byte
        (b"\x80\x04\x82\x01\x00.", "a broken pickle: ValueError: unregistered extension code 1"),
        (b"\x80\x02]\x94(K\x01e0t.", "a broken pickle"),  # APPENDS then a stack underflow
        (b"\x80\x04\x8c\x01a\x94h\x05.", "a broken pickle"),  # a memo key never stored
        (b"\x80\x04}\x94K\x01b.", "a broken pickle"),  # BUILD on a dict
    ],
    ids=[
        "empty",
        "text",
        "protocol_0",
        "truncated",
        "bytearray",
        "short_argument",
        "ext",
        "underflow",
        "memo",
        "build",
    ],
)
def test_broken_pickles_are_the_project_error_naming_the_file(data, says):
    with pytest.raises(LeakfinderError, match="not a readable PyTorch memory snapshot") as caught:
        unpickle.load(data, "/logs/s.pickle")
    assert str(caught.value).startswith("/logs/s.pickle: ") and says in str(caught.value)


def test_a_memo_index_of_two_billion_costs_nothing():
    """LONG_BINPUT at index 2**31 - 1: C's unpickler would grow its memo array to that; this one keeps a dict."""
    assert unpickle.load(b"\x80\x04K\x01r\xff\xff\xff\x7f.", "x.pickle") == 1


def _memo_bomb(tmp_path: Path, repeats: int, record: str) -> Path:
    """A snapshot whose first trace lists one entry, or a list of 1,000 entries, `repeats` times through the memo."""
    builder = SnapshotBuilder()
    for k in range(1000):
        builder.alloc(0x1000 * (k + 1), 4096, [("/src/a.py", 3, "f")], time_us=k + 1)
    entries = builder.snapshot["device_traces"][0]
    if record == "entry":
        builder.snapshot["device_traces"][0] = entries[:1] * repeats
    else:
        builder.snapshot["device_traces"] = [entries] * repeats
    path = tmp_path / f"{record}_{repeats}.pickle"
    path.write_bytes(pickle.dumps(builder.snapshot, protocol=4))
    return path


@pytest.mark.parametrize("record", ["entry", "trace"])
def test_a_memo_bomb_is_refused_at_its_first_repeat_whatever_its_size(tmp_path, record):
    """The unpickler stops where the file first lists a record again: a file 100 times larger is refused at the same
    byte, before its expansion (a million entries, or a hundred million) is built."""
    where, sizes = [], []
    for repeats in (10_000, 1_000_000):
        path = _memo_bomb(tmp_path, repeats, record)
        with pytest.raises(LeakfinderError) as caught:
            unpickle.load(path.read_bytes(), str(path))
        found = re.search(r"a pickle memo reference before byte (\d+) lists (.*) again", caught.value.message)
        assert found, caught.value.message
        where.append(int(found[1]))
        sizes.append(path.stat().st_size)
        assert found[2] == ("a dict holding containers (a record)" if record == "entry" else "a list of records")
    # Within the pickle frames (64 KiB each) that hold the first repeat, however large the file.
    assert max(where) < 4 * (64 << 10) < sizes[1] // 4


def test_what_pytorch_shares_is_read_as_shared(tmp_path):
    """Frames, frames lists and strings listed again by PyTorch (a real snapshot lists each frame dict thousands of
    times) load as one object each, as pickle's own loader makes them."""
    frame = {"filename": "/src/train.py", "line": 12, "name": "step"}
    frames = [frame, {"filename": "/src/train.py", "line": 40, "name": "main"}]
    trace = [{"action": "alloc", "addr": 4096 * k, "size": 4096, "frames": frames if k % 2 else [frame]} for k in range(50)]
    data = pickle.dumps({"segments": [], "device_traces": [trace]}, protocol=4)
    assert sum(op.name.endswith("GET") for op, _, _ in pickletools.genops(data)) >= 50
    loaded = unpickle.load(data, "x.pickle")
    assert loaded == pickle.loads(data)
    traced = loaded["device_traces"][0]  # type: ignore[index]
    assert traced[1]["frames"] is traced[3]["frames"] and traced[0]["frames"][0] is traced[1]["frames"][0]
