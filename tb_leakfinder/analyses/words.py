"""How figures and groups are written in sentences and tables: bytes, fractions, durations, groups; and names
without the numbers that change between builds of a program, to match them across runs and captures."""

from __future__ import annotations

import re

# A TPU program's id is a 64-bit fingerprint; its last digits are enough to tell same-name programs apart.
# The name before it may be in any script; the id's digits are ASCII ones.
_LONG_PROGRAM_ID = re.compile(r"(?<=[\w.\-])\((-?[0-9]{7,})\)")
SHORT_ID_DIGITS = 4
_NUMERIC_SUFFIX = re.compile(r"[._]\d+(?=$|/)")
# A program's id in a buffer's name ("output 0 of jit_step(12)"): compilation order, not the program; a
# report's label may hold it cut to its last digits ("jit_f(…8113)", short_program_ids).
_PROGRAM_IN_NAME = re.compile(r"(?<=\w)\((?:…)?-?\d+\)(?=$|[\s,])")
_PROGRAM_ID = re.compile(r"\(\d+\)$")


def format_bytes(n: float) -> str:
    """Binary units: 512 KiB, 1.5 MiB."""
    sign = "-" if n < 0 else ""
    value = float(abs(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            text = f"{value:.0f}" if unit == "B" or value >= 100 or value == int(value) else f"{value:.1f}"
            return f"{sign}{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def plural(word: str) -> str:
    """English plural of a noun: 'family' -> 'families', 'process' -> 'processes', 'buffer' -> 'buffers'."""
    if len(word) > 1 and word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def count_of(n: int, word: str, many: str | None = None) -> str:
    """A count and its noun, singular for exactly one: '1 buffer', '1,024 buffers', '0 families'; `many` for a plural
    the rule does not make ('1 memory event was', or 'child'/'children')."""
    return f"{n:,} {word if n == 1 else many or plural(word)}"


def short_program_ids(text: str) -> str:
    """A label with each long program id cut to its last digits: 'output 0 of jit_f(…8113)'."""
    return _LONG_PROGRAM_ID.sub(lambda m: f"(…{m.group(1)[-SHORT_ID_DIGITS:]})", text)


def normalize_name(name: str) -> str:
    """`Mul_1` -> `Mul`, `model/dense_2/MatMul_3` -> `model/dense/MatMul`, `fusion.12` -> `fusion`,
    `output 0 of jit_step(12)` -> `output 0 of jit_step`."""
    return _NUMERIC_SUFFIX.sub("", _PROGRAM_IN_NAME.sub("", name))


def module_base_name(name: str) -> str:
    """`jit_train_step(10)` -> `jit_train_step`: the program id changes between runs."""
    return _PROGRAM_ID.sub("", name)


def format_fraction(f: float) -> str:
    """'64%', '2.5%', '< 0.1%' (the tab's formatFraction)."""
    if 0 < f < 0.0005:
        return "< 0.1%"
    return f"{100 * f:.1f}%" if f < 0.1 else f"{100 * f:.0f}%"


def format_duration_ps(ps: float) -> str:
    """'100 ms', '1.5 s', '52 min', '3.2 h', '4.1 days'."""
    seconds = ps / 1e12
    for limit, scale, unit in ((1e-6, 1e-9, "ns"), (1e-3, 1e-6, "µs"), (1.0, 1e-3, "ms"), (120.0, 1.0, "s")):
        if seconds < limit:
            return _figure(seconds / scale, unit)
    for limit, scale, unit in ((120 * 60.0, 60.0, "min"), (48 * 3600.0, 3600.0, "h")):
        if seconds < limit:
            return _figure(seconds / scale, unit)
    return _figure(seconds / 86400.0, "days")


def _figure(value: float, unit: str) -> str:
    return f"{value:.0f} {unit}" if value >= 10 or value == int(value) else f"{value:.1f} {unit}"


def buffers_label(op: str, shape: str, region: str) -> str:
    """'Mul [128,1024] output', leaving out what the profile did not record."""
    return " ".join(part for part in (op or "(unknown op)", shape, region) if part)


def tensor_and_chunks(tensor: int, chunks: int) -> str:
    """Tensor bytes, the basis, with the allocator's chunks beside them where they differ: '12.5 MiB (12.6 MiB in
    chunks)'."""
    shown, allocated = format_bytes(tensor), format_bytes(chunks)
    return shown if shown == allocated else f"{shown} ({allocated} in chunks)"


def held_by(path: str, type_name: str, count: int, of: int, tensor: int, chunks: int, *, at_least: bool = False) -> str:
    """A family's holder in words, as every view puts it: "held by `model.heads`: ModuleList, 24 of 24 never-freed
    buffers, 6.0 MiB" (`path` as the view quotes it; `count` of the family's `of` never-freed buffers, their `tensor`
    bytes with their `chunks` beside them where they differ, as the family's own figure; `at_least` when not all of the
    buffers it keeps were listed)."""
    kept = f"{'at least ' if at_least else ''}{count:,} of {of:,} never-freed buffer{'' if of == 1 else 's'}"
    return f"held by {path}: {type_name + ', ' if type_name else ''}{kept}, {tensor_and_chunks(tensor, chunks)}"
