"""Fuzzing the PyTorch memory snapshot reader: every hostile pickle ends in a report or a LeakfinderError.

Seeds are snapshots built as `_dump_snapshot` writes them (tb_leakfinder.testing.torch_snapshot_builder), in
pickle protocols 2, 4 and 5: a training loop over two devices with annotations and live blocks, a trace
without time_us, one without history. Mutations work on two levels: the snapshot's builtins (a field given a
wrong type, a huge or negative number, NaN, a deep nesting, a shared list) before pickling, and the pickle's
bytes (cut short, bytes flipped, opcodes spliced in, among them those that name or call a class: GLOBAL,
STACK_GLOBAL, REDUCE, INST, OBJ, NEWOBJ, BUILD, EXT*, PERSID, NEXT_BUFFER). Each input goes through what the
plugin runs for a host of this format: the registry's read, the analysis, the report, timeline and buffers.
No mutated input may run anything: the marker file a spliced `os.system` call would create never appears.
"""

from __future__ import annotations

import copy
import pickle
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tb_leakfinder.read.formats.torch_snapshot.format import HOST
from tb_leakfinder.testing.torch_snapshot_builder import SnapshotBuilder, op_frames
from tests.support.fuzzing import (
    MAX_RSS_GROWTH_BYTES,
    MAX_SECONDS_PER_INPUT,
    Tally,
    analyse_registry_file,
    peak_rss_bytes,
    run_guarded,
)

CI_SEED = 20261202
CI_INPUTS = 2000
MIB = 1 << 20
USER = "/home/me/train.py"
TORCH = "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py"
# Values a field is replaced with: wrong types, numbers at and past every limit.
HOSTILE_VALUES: tuple[Any, ...] = (
    None,
    True,
    -1,
    0,
    1 << 63,
    1 << 64,
    1 << 200,
    -(1 << 70),
    float("nan"),
    float("inf"),
    1e300,
    "",
    "x" * 10_000,
    b"bytes",
    [],
    {},
    (1, 2),
    {1, 2},
    [[[[]]]],
)
# Opcodes spliced into a pickle's bytes: the class-naming and calling ones, and a few of the rest.
OPCODES = (
    b"c",  # GLOBAL
    b"\x93",  # STACK_GLOBAL
    b"R",  # REDUCE
    b"i",  # INST
    b"o",  # OBJ
    b"\x81",  # NEWOBJ
    b"\x92",  # NEWOBJ_EX
    b"b",  # BUILD
    b"\x82\x01",  # EXT1
    b"\x83\x01\x00",  # EXT2
    b"\x84\x01\x00\x00\x00",  # EXT4
    b"P0\n",  # PERSID
    b"Q",  # BINPERSID
    b"\x97",  # NEXT_BUFFER
    b"(",  # MARK
    b"0",  # POP
    b"2",  # DUP
    b"s",  # SETITEM
    b"u",  # SETITEMS
    b"e",  # APPENDS
    b"\x8a\x08" + b"\xff" * 8,  # LONG1, a huge negative
    b"\x8b\xff\xff\xff\x7f",  # LONG4 claiming 2 GiB
    b"\x8d" + b"\xff" * 8,  # BINUNICODE8 claiming an exabyte
    b"\x95" + b"\xff" * 8,  # FRAME of an exabyte
    b"h\xff",  # BINGET of a memo key never stored
    b"r\xff\xff\xff\xff",  # LONG_BINPUT
    b".",  # STOP
)


def _text(value: str) -> bytes:
    """BINUNICODE: a string of the pickle."""
    data = value.encode()
    return b"X" + len(data).to_bytes(4, "little") + data


def code_calls(marker: Path) -> tuple[bytes, ...]:
    """Opcodes that would create `marker` if an unpickler ran them: os.system and builtins.exec, each applied to
    a one-tuple (TUPLE1) by REDUCE."""
    return (
        b"cos\nsystem\n" + _text(f"touch {marker}") + b"\x85R",
        _text("builtins") + _text("exec") + b"\x93" + _text(f"open({str(marker)!r}, 'w').close()") + b"\x85R",
    )


def _loop(devices: int = 2, timed: bool = True) -> SnapshotBuilder:
    b = SnapshotBuilder(devices=devices)
    for step in range(6):
        t = 100 * step
        stack = [(TORCH, 125, "forward"), (USER, 14 + step % 2, "train_step"), (USER, 30, "<module>")]
        for device in range(devices):
            b.alloc(0x1000 + device, MIB, stack, time_us=t + 10 if timed else None, device=device)
            b.free(0x1000 + device, MIB, time_us=t + 20 if timed else None, device=device)
            b.alloc(0x100000 * (step + 1), 2 * MIB + 100, stack, time_us=t + 30 if timed else None, device=device)
        if timed:
            b.annotate(f"ProfilerStep#{step}", t, t + 90)
    b.free(0x9000, 4 * MIB, time_us=5 if timed else None)  # allocated before the window
    b.entry("segment_alloc", 0x800000, 20 * MIB, time_us=1 if timed else None)
    b.entry("oom", 0, 80 * MIB, time_us=2 if timed else None, device_free=MIB)
    b.segment(0x100000, [(0x100000, 2 * MIB + 512, 2 * MIB + 100, "active_allocated", [(USER, 14, "train_step")])])
    b.segment(0x7000000, [(0x7000000, 8 * MIB, 8 * MIB, "active_allocated", ()), (0x7800000, MIB, 0, "inactive", ())])
    return b


def _state_only() -> SnapshotBuilder:
    b = SnapshotBuilder()
    b.snapshot["device_traces"] = [[]]
    b.segment(0x1000, [(0x1000, 2 * MIB, 2 * MIB - 100, "active_allocated", [(USER, 14, "train_step")])])
    return b


def _old(version: str) -> SnapshotBuilder:
    """A PyTorch 1.13 or 2.0 snapshot: blocks without addresses, their frames in histories, C++ frames as text."""
    b = SnapshotBuilder(version=version)
    b.alloc(0x100000, MIB, [(USER, 14, "train_step")], cpp=op_frames("bmm", "BmmBackward0"))
    b.oom(80 * MIB, device_free=MIB)
    b.segment(
        0x100000, [(0x100000, MIB, MIB, "active_allocated", [(USER, 14, "train_step")]), (0x200000, MIB, 0, "inactive", ())]
    )
    return b


def seeds() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("loop", _loop().snapshot),
        ("untimed", _loop(1, timed=False).snapshot),
        ("state", _state_only().snapshot),
        ("pytorch_1_13", _old("1.13").snapshot),
        ("pytorch_2_0", _old("2.0").snapshot),
    ]


def _containers(value: Any) -> list[Any]:
    """Every dict and list of a snapshot's tree (which the seeds keep shallow), iteratively."""
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            found.append(item)
            stack.extend(item.values() if isinstance(item, dict) else item)
    return found


def _deep(depth: int) -> bytes:
    """A pickle of a list nested `depth` deep, built opcode by opcode (pickle.dumps would recurse)."""
    return b"\x80\x04" + b"]" * depth + b"a" * (depth - 1) + b"."


def _mutate_tree(snapshot: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    tree = copy.deepcopy(snapshot)
    containers = _containers(tree)  # before any mutation: a shared list is not walked 100,000 times
    for _ in range(rng.randint(1, 3)):
        container = rng.choice(containers)
        if not container:
            continue
        key = rng.choice(list(container)) if isinstance(container, dict) else rng.randrange(len(container))
        roll = rng.random()
        if roll < 0.7:
            container[key] = rng.choice(HOSTILE_VALUES)
        elif roll < 0.85 and isinstance(container, dict):
            del container[key]
        else:  # one object many times over, as a pickle's memo can make it
            container[key] = [container[key]] * rng.choice((2, 1000, 100_000))
    return tree


def _mutate_bytes(data: bytes, rng: random.Random, marker: Path) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 2)):
        at = rng.randrange(2, max(3, len(out)))
        roll = rng.random()
        if roll < 0.25:
            del out[at:]
        elif roll < 0.55:
            out[at : at + 1] = bytes([rng.randrange(256)])
        elif roll < 0.85:
            out[at:at] = rng.choice(OPCODES)
        else:
            out[at:at] = rng.choice(code_calls(marker))
    return bytes(out)


def fuzz_inputs(seed: int, count: int, marker: Path) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(seed)
    base = seeds()
    for i in range(count):
        name, snapshot = rng.choice(base)
        protocol = rng.choice((2, 4, 5))
        roll = rng.random()
        if roll < 0.4:
            yield f"#{i} tree:{name}:p{protocol}", pickle.dumps(_mutate_tree(snapshot, rng), protocol=protocol)
        elif roll < 0.95:
            yield f"#{i} bytes:{name}:p{protocol}", _mutate_bytes(pickle.dumps(snapshot, protocol=protocol), rng, marker)
        else:
            yield f"#{i} deep", _deep(rng.choice((10, 10_000, 1_000_000)))


def run_snapshot(tally: Tally, name: str, data: bytes, path: Path) -> str:
    path.write_bytes(data)
    return run_guarded(tally, name, lambda: analyse_registry_file(str(path), HOST), lambda message: str(path) in message)


def test_seeds_analyse_cleanly(tmp_path):
    tally = Tally()
    for name, snapshot in seeds():
        for protocol in (2, 4, 5):
            run_snapshot(tally, f"{name}:p{protocol}", pickle.dumps(snapshot, protocol=protocol), tmp_path / "s.pickle")
    assert tally.crashes == []
    assert tally.outcomes == {"report": 3 * len(seeds())}


def test_fuzzed_snapshots_end_in_report_or_project_error_and_run_nothing(tmp_path):
    marker = tmp_path / "ran"
    rss_before = peak_rss_bytes()
    tally = Tally()
    for name, data in fuzz_inputs(CI_SEED, CI_INPUTS, marker):
        run_snapshot(tally, name, data, tmp_path / "memory_snapshot.pickle")
    assert (tally.inputs, tally.crashes[:10]) == (CI_INPUTS, [])
    assert not marker.exists()
    assert tally.max_seconds < MAX_SECONDS_PER_INPUT, tally.slowest
    # Neither so gentle that nothing fails nor so rough that nothing parses.
    assert min(tally.outcomes["report"], tally.outcomes["error"]) >= CI_INPUTS // 10, tally.outcomes
    assert peak_rss_bytes() - rss_before < MAX_RSS_GROWTH_BYTES
