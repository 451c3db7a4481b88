"""Fuzzing the compiled scanner of PyTorch trace events (torch_trace/_kineto_scan.c) against msgspec's decoding.

Runs of events as Kineto writes them (the tests' training loop, the benchmark's events, metadata, odd values) are
cut, spliced and mutated: truncations, stray structural characters, deep nesting, numbers of every form and size,
escapes (valid, invalid, lone surrogates), NaN and Infinity, duplicate keys, control and non-ASCII characters.
Each run is scanned from a random place in a longer text (a run past ASCII from its UTF-8 bytes, as the reader
hands it over); the scanner must neither crash nor read outside it, and
whatever it takes must be what msgspec decodes from the same text, field for field: it gives a run up (None)
rather than read it otherwise.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import re
from typing import Any

import numpy as np
import pytest
from msgspec import UNSET

from tb_leakfinder.read.formats.torch_trace import chunks
from tests.support.fuzzing import REQUIRE_SCANNER_ENV
from tests.unit.read.formats.torch_trace.trace_files import complete, memory, training

if chunks._scanner is None and os.environ.get(REQUIRE_SCANNER_ENV) == "1":  # CI builds it: not skipping there
    raise RuntimeError(f"{REQUIRE_SCANNER_ENV}=1 but the trace scanner is not built (python setup.py build_ext --inplace)")
pytestmark = pytest.mark.skipif(chunks._scanner is None, reason="the compiled trace scanner is not built")

CI_SEED = 20261203
CI_INPUTS = 4000
NUMBERS = (
    "0", "-0", "-0.0", "1e400", "-1e400", "1e-400", "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308",
    "9007199254740993", "9007199254740993.0", "123456789012345678", "1234567890123456789", "18446744073709551615",
    "18446744073709551616", "-9223372036854775808", "0.1", "1234.5678", "1e22", "1e23", "123456789012345.678",
    "00", "01", "1.", ".5", "1e", "2e+", "-", "+1", "1E5", "1e-7", "9" * 120, "0." + "1" * 80, "NaN", "-Infinity",
    "Infinity", "true", "null", '"7"', "[]", "{}",
)  # fmt: skip
TOKENS = (
    "{", "}", "[", "]", ",", ":", '"', "\\", "\\u", "\\ud800", "\\udc00\\ud800", "\\ud83d\\ude00", "\\u00e9", "\\x", "\\/",
    "\t", "\n", " ",
    "\x00", "\x1f", "\x7f", "é", "\u2028", "\ud800", '"ts": 5, ', '"args": {}, ', '"Bytes": 1, ', '"ph": "X", ',
)  # fmt: skip


def _events(rng: random.Random) -> list[Any]:
    events: list[Any] = training(steps=2)
    events += [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
        {"ph": "i", "name": "flow", "pid": "host", "tid": "stream 7"},
        complete("train.py(12): step", 1.0, 140.0, cat="python_function", tid=-3),
        complete("aten::cat", 3.5, 1.25, **{"Input Dims": [[[2, 3], [4]], []], "Input type": ["TensorList", "int"]}),
        memory(9.0, -64, device_type=0, device_id=-1),
        {**memory(9.5, 64, Addr=(1 << 64) - 1), "extra": [{"a": [1, 2, {"b": None}]}, "x\\y", 1.5e-3]},
        {"ts": 1, "dur": 0, "args": {}},
        {},
    ]
    rng.shuffle(events)
    return events[: rng.randint(1, len(events))]


def _mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.choice((0, 1, 1, 2, 4))):
        choice = rng.random()
        numbers = [m.span() for m in re.finditer(r"-?\d[\d.eE+-]*", text)]
        if choice < 0.35 and numbers:
            start, end = rng.choice(numbers)
            text = text[:start] + rng.choice(NUMBERS) + text[end:]
        elif choice < 0.7:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(TOKENS) + text[at:]
        elif choice < 0.8:
            at = rng.randrange(len(text) + 1)
            depth = rng.choice((10, 63, 64, 65, 200))
            text = text[:at] + "[" * depth + "]" * depth + text[at:]
        elif choice < 0.9:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + text[at + rng.randint(1, 20) :]
        else:
            text = text[: rng.randrange(len(text) + 1)]
    return text


def _same_number(scanned: float, flags: int, given: int, exact: int, value: Any) -> bool:
    if value is UNSET:
        return not flags & given
    if not flags & given or bool(flags & exact) != (type(value) is int):
        return False
    return scanned == value and math.copysign(1, scanned) == math.copysign(1, value)


def _differences(records: np.ndarray, kinds: list[Any], shapes: list[Any], events: list[chunks.Event]) -> list[str]:
    """How the scanner's records differ from msgspec's events."""
    if len(records) != len(events):
        return [f"{len(records)} records for {len(events)} events"]
    found = []
    for k, (r, e) in enumerate(zip(records, events, strict=True)):
        kind = kinds[r["kind"]]
        flags = int(r["flags"])
        if kind != (e.ph, e.name, e.cat, e.pid, e.tid) or [type(v) for v in kind] != [
            type(v) for v in (e.ph, e.name, e.cat, e.pid, e.tid)
        ]:
            found.append(f"event {k}: kind {kind}")
        if not _same_number(float(r["ts"]), flags, chunks.TS_GIVEN, chunks.TS_INT, e.ts):
            found.append(f"event {k}: ts {r['ts']} ({flags}) for {e.ts!r}")
        if not _same_number(float(r["dur"]), flags, chunks.DUR_GIVEN, chunks.DUR_INT, e.dur):
            found.append(f"event {k}: dur {r['dur']} ({flags}) for {e.dur!r}")
        a = e.args
        if a is None or (a is UNSET) == bool(flags & chunks.ARGS_GIVEN):
            found.append(f"event {k}: args {a!r} ({flags})")
            continue
        given = chunks.Args() if a is UNSET else a
        figures = (
            (None if not flags & chunks.BYTES_GIVEN else int(r["nbytes"]), given.nbytes),
            (int(r["device_type"]), given.device_type),
            (int(r["device_id"]), given.device_id),
            (None if not flags & chunks.ADDR_GIVEN else int(r["addr"]), given.addr),
            (None if r["total"] == chunks.NO_TOTAL else int(r["total"]), given.total),
            (shapes[r["shape"]], (bytes(given.dims), bytes(given.types))),
        )
        found += [f"event {k}: args {mine!r} for {theirs!r}" for mine, theirs in figures if mine != theirs]
    return found


def test_the_scanner_takes_runs_as_msgspec_decodes_them_or_gives_them_up():
    rng = random.Random(CI_SEED)
    taken = given_up = 0
    for i in range(CI_INPUTS):
        run = ",".join(json.dumps(e) if rng.random() < 0.8 else json.dumps(e, indent=1) for e in _events(rng))
        run = _mutate(run, rng)
        before, after = rng.choice(("", "[", "x" * 7)), rng.choice(("", "]", ",{"))
        text = before + run + after
        scanner = chunks._scanner.Scanner()
        found = scanner.scan(text, len(before), len(before) + len(run))
        if not run.isascii():
            assert found is None, f"#{i}: a str past ASCII taken"
            with contextlib.suppress(UnicodeEncodeError):  # a lone surrogate: left to msgspec
                head, body = before.encode(), run.encode()
                found = scanner.scan(head + body + after.encode(), len(head), len(head) + len(body))
        if found is None:
            given_up += 1
            continue
        taken += 1
        events = chunks.decode(run)
        assert events is not None, f"#{i}: taken, msgspec refuses {run!r}"
        records = np.frombuffer(found[0], chunks.RECORD)
        assert _differences(records, found[1], found[2], events) == [], f"#{i}: {run!r}"
    # Neither so gentle that nothing is given up nor so rough that nothing is taken.
    assert min(taken, given_up) >= CI_INPUTS // 10, (taken, given_up)


def test_the_scanner_reads_only_between_start_and_end():
    scanner = chunks._scanner.Scanner()
    event = json.dumps(complete("aten::mm", 1.0, 2.0))
    text = event + "," + event
    assert scanner.scan(text, 0, len(event)) is not None
    assert scanner.scan(text, 0, len(event) - 1) is None  # the closing brace is outside
    assert scanner.scan(text, 1, len(event)) is None
    assert scanner.scan(text, 0, len(event) + 1) is None  # a trailing comma
    assert scanner.scan(text, len(text), len(text)) == (b"", [], [])
    for start, end in ((-1, 3), (0, len(text) + 1), (5, 4)):
        with pytest.raises(IndexError):
            scanner.scan(text, start, end)


def test_bytes_are_read_only_when_they_are_utf8_as_python_decodes_it():
    scanner = chunks._scanner.Scanner()
    event = json.dumps(complete("aten::mm_é", 1.0, 2.0), ensure_ascii=False).encode()
    found = scanner.scan(event, 0, len(event))
    assert found is not None and found[1][0][1] == "aten::mm_é"
    for bad in (b"\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"):  # cut, overlong, surrogate, past U+10FFFF
        wrong = event.replace("é".encode(), bad)
        assert scanner.scan(wrong, 0, len(wrong)) is None, bad
        skipped = event.replace(b'"args": {', b'"args": {"note": "' + bad + b'", ')
        assert scanner.scan(skipped, 0, len(skipped)) is None, bad
    assert scanner.scan(b"x" + event + b"\xff", 1, 1 + len(event)) is not None  # only text[start:end] is checked
    with pytest.raises(TypeError):
        scanner.scan(bytearray(event), 0, len(event))


def test_times_are_the_floats_and_ints_python_makes_of_their_text():
    """Every form of number a time may take, converted as float() and int() convert it: the fast path (a decimal of
    at most 2^53 as digits, a power of ten of at most 22) and CPython's own conversion for the rest."""
    rng = random.Random(CI_SEED)
    texts = []
    for _ in range(20_000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 22))).lstrip("0") or "0"
        point = rng.randint(0, len(digits))
        text = (digits[:point] or "0") + ("." + digits[point:] if point < len(digits) else "")
        if rng.random() < 0.3:
            text += rng.choice("eE") + rng.choice(("", "+", "-")) + str(rng.randint(0, 330))
        texts.append(rng.choice(("", "-")) + text)
    texts += ["0", "-0", "0.0", "-0.0", "9007199254740992", "9007199254740993", "4.9e-324", "2.2250738585072011e-308"]
    scanner = chunks._scanner.Scanner()
    for text in texts:
        is_int = not re.search("[.eE]", text)
        expected = float(int(text)) if is_int else float(text)
        run = f'{{"ts": {text}}}'
        found = scanner.scan(run, 0, len(run))
        if found is None:  # given up: only an int a double cannot hold, or a number beyond one
            assert abs(int(text)) > 2**53 - 9 if is_int else math.isinf(expected), text
            continue
        (record,) = np.frombuffer(found[0], chunks.RECORD)
        assert bool(record["flags"] & chunks.TS_INT) == is_int, text
        assert (record["ts"], math.copysign(1, record["ts"])) == (expected, math.copysign(1, expected)), text
