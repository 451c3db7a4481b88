"""Write the compiled scanner's stat tables from read/formats/xplane/stat_spec.py and the model's EVENT_COLUMNS.

_xspace_scan.c includes the header this writes (tb_leakfinder/read/formats/xplane/_xspace_scan_tables.h):
the COL_* and ROLE_* enums, COLUMN_SPECS, ROLE_NAMES (stat name -> role and column),
and the runs and defaults the scanner's code reads. Run after editing the stat table
or the model's columns, then rebuild (python setup.py build_ext --inplace);
`--check` fails when the committed header is stale.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this tree's tables, not those of an installed copy

from tb_leakfinder.model.memory import EVENT_COLUMNS  # noqa: E402
from tb_leakfinder.read.formats.xplane import stat_spec as spec  # noqa: E402

OUTPUT = ROOT / "tb_leakfinder" / "read" / "formats" / "xplane" / "_xspace_scan_tables.h"

# Kinds beside the stat table's: the event's own fields, its memory id, and the stats of other events.
EVENT = "event"
ALLOCATOR = "allocator"
OTHER = "other"
# The dtype the scanner's code stores into a column of each kind, and into each column its own code fills.
KIND_DTYPES = {spec.INT: np.int64, spec.STRING: np.int32, spec.UINT64: np.uint64, spec.INT32: np.int32, spec.FLOAT: np.float64}
HAND_DTYPES = {"time_ps": np.int64, "kind": np.int8, "line": np.int32, spec.ALLOCATOR_COLUMN: np.int32}
# Kinds the scanner keeps in a field of their own (MemRow's addr, frag, dtype), named after their column: one column each.
SINGLE_KINDS = (spec.UINT64, spec.FLOAT, spec.INT32)
# The order of columns and of roles, by kind. The scanner reads the INT and STRING columns and roles as runs, takes
# every role from FIRST_STR_ROLE on as a string (so STRING roles come last) and host events' stats from
# FIRST_HOST_ROLE to LAST_HOST_ROLE. The rest is the order the tables had when kept by hand, with which the
# scanner's instruction counts were measured: the same numbers compile to the same code.
COLUMN_ORDER = (EVENT, ALLOCATOR, spec.UINT64, spec.INT, spec.FLOAT, spec.STRING, spec.INT32)
ROLE_ORDER = (ALLOCATOR, spec.UINT64, spec.FLOAT, OTHER, spec.INT, spec.INT32, spec.STRING)


class Role(NamedTuple):
    """A ROLE_* value: the stats read for it, and the column they fill (None: not one of FILLS)."""

    name: str
    kind: str
    stats: tuple[str, ...]
    column: str | None = None


def problems(columns: Mapping[str, type], fills: Sequence[spec.Fill]) -> list[str]:
    """Why `fills` cannot give the scanner's tables for the model's `columns` (none: they can)."""
    out: list[str] = []
    filled = [fill.column for fill in fills]
    for column in sorted({c for c in filled if filled.count(c) > 1}):
        out.append(f"column {column} is filled by more than one row")
    hand = [*spec.EVENT_FIELDS, spec.ALLOCATOR_COLUMN]
    for column in sorted(set(columns) - set(filled) - set(hand)):
        out.append(f"model column {column} is filled by no row (add one to stat_spec.FILLS)")
    for column in [*filled, *hand]:
        if column not in columns:
            out.append(f"column {column} is not one of the model's EVENT_COLUMNS")
    for column, dtype in HAND_DTYPES.items():
        if column in columns and np.dtype(columns[column]) != np.dtype(dtype):
            out.append(f"column {column} must be {np.dtype(dtype)}: the scanner's own code stores it")
    for fill in fills:
        kind_dtype = KIND_DTYPES.get(fill.kind)
        if kind_dtype is None:
            out.append(f"column {fill.column}: unknown kind {fill.kind!r}")
            continue
        if fill.column in columns and np.dtype(columns[fill.column]) != np.dtype(kind_dtype):
            out.append(f"column {fill.column} of kind {fill.kind} must be {np.dtype(kind_dtype)}")
        if not fill.stats:
            out.append(f"column {fill.column} names no stat")
        if fill.kind == spec.FLOAT:
            if not (isinstance(fill.default, float) and math.isfinite(fill.default)):
                out.append(f"column {fill.column}: the default of a float column is a finite float")
        elif not isinstance(fill.default, int) or not _fits(fill.default, kind_dtype):
            out.append(f"column {fill.column}: the default does not fit {np.dtype(kind_dtype)}")
        elif fill.kind == spec.STRING and fill.default != 0:
            out.append(f"column {fill.column}: a string column's default is 0, the empty string")
    for kind in SINGLE_KINDS:
        if sum(fill.kind == kind for fill in fills) != 1:
            out.append(f"one column of kind {kind}, not {sum(fill.kind == kind for fill in fills)}: the scanner keeps one")
    for kind in (spec.INT, spec.STRING):
        if not any(fill.kind == kind for fill in fills):
            out.append(f"no column of kind {kind}: the scanner's code has a run of them")
    stats = [stat for role in roles(fills) for stat in role.stats]
    for stat in sorted({s for s in stats if stats.count(s) > 1}):
        out.append(f"stat {stat!r} is given more than one role")
    return out


def _fits(value: int, dtype: type) -> bool:
    info = np.iinfo(dtype)
    return int(info.min) <= value <= int(info.max)


def roles(fills: Sequence[spec.Fill]) -> list[Role]:
    """The roles in ROLE_ORDER, each kind's in the order of `fills`."""
    by_kind = {
        kind: [Role(f"ROLE_{f.column.upper()}", kind, f.stats, f.column) for f in fills if f.kind == kind] for kind in KIND_DTYPES
    }
    by_kind[ALLOCATOR] = [
        Role("ROLE_ALLOCATOR", ALLOCATOR, (spec.NAME_ID_STAT,)),
        Role("ROLE_INT_ID", ALLOCATOR, spec.INT_ID_STATS),
    ]
    by_kind[OTHER] = [
        Role("ROLE_STEP", OTHER, (spec.STEP_STAT,)),
        Role("ROLE_ROOT", OTHER, (spec.ROOT_STAT,)),
        Role("ROLE_HLO", OTHER, (spec.HLO_PROTO_STAT,)),
        Role("ROLE_PROGRAM_ID", OTHER, (spec.PROGRAM_ID_STAT,)),
        Role("ROLE_FLOW_OUT", OTHER, (spec.FLOW_OUT_STAT,)),
        Role("ROLE_FLOW_IN", OTHER, (spec.FLOW_IN_STAT,)),
    ]
    return [role for kind in ROLE_ORDER for role in by_kind[kind]]


def column_order(columns: Mapping[str, type], fills: Sequence[spec.Fill]) -> list[tuple[str, str]]:
    """(column, kind) in COLUMN_ORDER, each kind's in the model's order."""
    kinds = {**{c: EVENT for c in spec.EVENT_FIELDS}, spec.ALLOCATOR_COLUMN: ALLOCATOR, **{f.column: f.kind for f in fills}}
    return [(column, kind) for kind in COLUMN_ORDER for column in columns if kinds[column] == kind]


def _c_value(value: int | float) -> str:
    return repr(value) if isinstance(value, float) else f"({value})"


def _c_string(text: str) -> str:
    """A C string literal of `text`'s UTF-8 bytes."""
    plain = [chr(b) if 32 <= b < 127 and chr(b) not in '"\\' else f"\\{b:03o}" for b in text.encode()]
    return '"' + "".join(plain) + '"'


def render(columns: Mapping[str, type], fills: Sequence[spec.Fill]) -> str:
    """The header's text."""
    order = column_order(columns, fills)
    role_list = roles(fills)
    col = {column: f"COL_{column.upper()}" for column, _ in order}
    ints = [col[c] for c, kind in order if kind == spec.INT]
    strs = [col[c] for c, kind in order if kind == spec.STRING]
    int_roles = [r.name for r in role_list if r.kind == spec.INT]
    str_roles = [r.name for r in role_list if r.kind == spec.STRING]
    host = [k for k, r in enumerate(role_list) if set(spec.HOST_STATS) & set(r.stats)]
    specs = [f'    [{col[c]}] = {{"{c}", {np.dtype(columns[c]).itemsize}, "{np.dtype(columns[c]).str}"}},' for c, _ in order]
    names = [
        f"    {{{_c_string(stat)}, {role.name}, {col[role.column] if role.column else -1}}},"
        for role in role_list
        for stat in role.stats
    ]
    singles = [f for f in fills if f.kind in SINGLE_KINDS]
    int_defaults = [
        f"    ints[{col[f.column]} - FIRST_INT_COL] = {f.default};" for f in fills if f.kind == spec.INT and f.default
    ]
    lines = [
        "/* Generated by tools/gen_scanner_tables.py from tb_leakfinder/read/formats/xplane/stat_spec.py and",
        " * tb_leakfinder/model/memory.py's EVENT_COLUMNS: edit those, then run it (--check fails when this is stale). */",
        "#ifndef TB_LEAKFINDER_XSPACE_SCAN_TABLES_H",
        "#define TB_LEAKFINDER_XSPACE_SCAN_TABLES_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        "",
        "/* Memory-event columns: EVENT_COLUMNS (exposed as COLUMNS, which a test compares with it). */",
        "enum {",
        *[f"    {col[c]}," for c, _ in order],
        "    NCOLS,",
        "};",
        "static const struct { const char *name; size_t size; const char *dtype; } COLUMN_SPECS[NCOLS] = {",
        *specs,
        "};",
        "/* The int64 columns filled from integer stats, and the string columns, each a run in the order of their roles. */",
        f"#define FIRST_INT_COL {ints[0]}",
        f"#define NINTS {len(ints)}",
        f"#define FIRST_STR_COL {strs[0]}",
        f"#define NSTRS {len(strs)}",
        "",
        "/* What a stat is read for, by its metadata's name (ROLE_NONE: nothing). */",
        "enum {",
        "    ROLE_NONE = 0,",
        *[f"    {role.name}," for role in role_list],
        "};",
        f"#define FIRST_INT_ROLE {int_roles[0]}",
        f"#define FIRST_STR_ROLE {str_roles[0]}",
        "/* The stats of host events that are not memory events lie in this range (and others between them). */",
        f"#define FIRST_HOST_ROLE {role_list[min(host)].name}",
        f"#define LAST_HOST_ROLE {role_list[max(host)].name}",
        "",
        "/* Stat name -> role, and the column of stat_spec.FILLS its value fills (-1: none). */",
        "static const struct { const char *name; int role, column; } ROLE_NAMES[] = {",
        *names,
        "};",
        "",
        "/* A memory event's columns before its stats are read: their values on an event without them. */",
        *[f"#define DEFAULT_{f.column.upper()} {_c_value(f.default)}" for f in singles],
        "static inline void int_defaults(int64_t *ints) {",
        "    memset(ints, 0, NINTS * sizeof *ints);",
        *int_defaults,
        "}",
        "/* One statement, as mem_row_init had it by hand: with a loop walk_event compiles to other registers. */",
        "static inline void str_defaults(int32_t *strs) {",
        "    " + " = ".join(f"strs[{k}]" for k in range(len(strs))) + " = 0;",
        "}",
        "",
        "#endif",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the committed header is stale")
    args = parser.parse_args()
    found = problems(EVENT_COLUMNS, spec.FILLS)
    if found:
        sys.exit("tb_leakfinder/read/formats/xplane/stat_spec.py:\n" + "\n".join(f"  {p}" for p in found))
    text = render(EVENT_COLUMNS, spec.FILLS)
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text(encoding="utf-8") != text:
            sys.exit(f"{OUTPUT} is stale: run python tools/gen_scanner_tables.py")
        print(f"{OUTPUT.name} is up to date")
        return
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
