"""The snapshot's unpickler builds builtins only: a pickle that would run code, or that is cut short or broken,
is the project's error naming the file, and nothing in it runs."""

from __future__ import annotations

import os
import pickle
import pickletools
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
