"""The report's tables as CSV files, one per table, safe to open in a spreadsheet.

Each table's columns are the JSON keys of its rows (one name per concept), after the columns that
say where a row belongs (run, host, allocator or module). A row's `site` (where its buffers were made)
is its own columns, in its place: the site's keys, its `stack` as frames joined by " ← ". Profile
strings are data: a cell that a spreadsheet would run as a formula gets a leading apostrophe.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.views.atomic import write_texts
from tb_leakfinder.views.text import CALLED_FROM
from tb_leakfinder.wire import Json

# OWASP's list: these lead a formula, and tab / carriage return can hide one in the cell before.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_FIRST = frozenset(FORMULA_STARTS)

FAMILIES = "families"
HOLDERS = "holders"
PEAK_BREAKDOWN = "peak_breakdown"
BUFFERS = "buffers"
STATIC_BUFFERS = "static_buffers"
COMPARE_FAMILIES = "compare_families"
SITE = "site"
CAUSE = "cause"


def neutralise(value: Any) -> str:
    """A cell's text: numbers as JavaScript prints them, nested values as JSON, formula-looking strings quoted."""
    kind = type(value)  # by exact type first: this runs for every cell of every buffer
    if kind is str:
        text: str = value
        return "'" + text if text[:1] in _FORMULA_FIRST else text
    if kind is int:
        return str(value)
    if value is None:
        return ""
    if kind is bool:
        return "true" if value else "false"
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, int):
        return str(value)
    return neutralise(js_json(value))


def js_number(value: float) -> str:
    """A float as JavaScript's String() writes it (the tab's CSV cells): the shortest digits that read back, as
    repr's, in exponent form only below 1e-6 and from 1e21 (repr's are below 1e-4 and from 1e16)."""
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" not in text:  # also nan and inf, which JSON does not carry to the tab
        return text
    sign, digits_tuple, exponent = Decimal(text).as_tuple()
    digits = "".join(map(str, digits_tuple))
    point = int(exponent) + len(digits)  # where the decimal point falls among the digits
    if 0 < point <= 21:
        text = f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        text = f"0.{'0' * -point}{digits}"
    else:
        mantissa = f"{digits[0]}.{digits[1:]}" if len(digits) > 1 else digits
        text = f"{mantissa}e{'+' if point > 0 else '-'}{abs(point - 1)}"
    return "-" + text if sign else text


def js_json(value: Any) -> str:
    """A nested value as JavaScript's JSON.stringify writes it: text as it is (no \\u escapes), numbers as js_number."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{js_json(str(k))}:{js_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(map(js_json, value)) + "]"
    if isinstance(value, float):
        return js_number(value) if math.isfinite(value) else "null"
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Table:
    """Rows of JSON objects under context columns; the header is the context, then every row key in order met."""

    context: tuple[str, ...]
    rows: list[tuple[tuple[Any, ...], Json]] = field(default_factory=list)

    def add(self, where: tuple[Any, ...], rows: Iterable[Json]) -> None:
        self.rows.extend((where, row) for row in rows)

    def header(self) -> list[str]:
        keys: dict[str, None] = {}
        shapes: set[tuple[str, ...]] = set()  # rows of one table mostly share their keys: look at each set once
        for _, row in self.rows:
            shape = tuple(row)
            if shape not in shapes:
                shapes.add(shape)
                keys.update(dict.fromkeys(k for k in shape if k not in self.context))
        return [*self.context, *keys]

    def text(self) -> str:
        header = self.header()
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(map(neutralise, header))
        # Column by column: one map() per column is much faster than a generator per row.
        wheres = [where for where, _ in self.rows]
        columns = [list(map(neutralise, [w[i] for w in wheres])) for i in range(len(self.context))]
        for key in header[len(self.context) :]:
            columns.append(list(map(neutralise, [row.get(key) for _, row in self.rows])))
        writer.writerows(zip(*columns, strict=True))
        return out.getvalue()


def site_columns(site: Json) -> Json:
    """A site's cells: its keys, the stack's frames (innermost first) as one line."""
    return {**site, "stack": CALLED_FROM.join(site["stack"])}


def _with_site(row: Json, columns: Json) -> Json:
    """The row with its `site` replaced, in its place, by the site's columns."""
    # Last, as the report has it: two copies beat a walk of every key. A row is a dict, whose keys keep their order.
    if next(reversed(cast(dict[str, Any], row)), None) == SITE:
        out = {**row, **columns}
        del out[SITE]
        return out
    out = {}
    for key, value in row.items():
        if key == SITE:
            out.update(columns)
        else:
            out[key] = value
    return out


def cause_columns(row: Json) -> Json:
    """A family row with its `cause` as three columns, in its place: `cause` (its id, "" when none),
    `cause_evidence` and `cause_fix`."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key == CAUSE:
            out.update(
                {CAUSE: value and value["id"], "cause_evidence": value and value["evidence"], "cause_fix": value and value["fix"]}
            )
        else:
            out[key] = value
    return out


def site_rows(rows: Iterable[Json]) -> list[Json]:
    """Groups or peak breakdown rows, each with its own site as columns."""
    return [_with_site(row, site_columns(row[SITE])) for row in rows]


def buffer_rows(pages: Iterable[Json]) -> Iterator[Json]:
    """The rows of pages of the buffers route, each row's site (an index into its page's `sites`) as columns."""
    for page in pages:
        sites = [site_columns(site) for site in page["sites"]]
        for row in page["buffers"]:
            yield _with_site(row, sites[row[SITE]])


BufferPages = Callable[[str, str, str], Iterable[Json]]  # (run, host, allocator) -> every page of the buffers route


def report_tables(report: Json, buffers: BufferPages | None = None) -> dict[str, Table]:
    """The tables of a report: suspect families, their holders (one row each, by the family's index), peak breakdown,
    buffers (when `buffers` gives their pages), and the static view's whole-program buffers."""
    where = ("run", "host", "allocator")
    tables = {FAMILIES: Table(where), HOLDERS: Table((*where, "family")), PEAK_BREAKDOWN: Table(where)}
    if buffers is not None:
        tables[BUFFERS] = Table(where)
    for run in report["runs"]:
        for host in run["hosts"]:
            for allocator in host["allocators"]:
                at = (run["run"], host["host"], allocator["allocator"])
                tables[FAMILIES].add(at, map(cause_columns, site_rows(allocator["families"])))
                for family in allocator["families"]:
                    tables[HOLDERS].add((*at, family["family"]), family["holders"])
                tables[PEAK_BREAKDOWN].add(at, site_rows(allocator["peak_breakdown"]))
                if buffers is not None:
                    tables[BUFFERS].add(at, buffer_rows(buffers(*at)))
    static = Table(("run", "host", "module"))
    for run in report["runs"]:
        for host in run["hosts"]:
            for module in host["modules"]:
                static.add((run["run"], host["host"], module["name"]), module["whole_program_buffers"])
    tables[STATIC_BUFFERS] = static
    return tables


def comparison_tables(comparison: Json) -> dict[str, Table]:
    """The compare families of a diff: every family of A or B, per pair of hosts and allocators."""
    table = Table(("run_a", "run_b", "host_a", "host_b", "allocator_a", "allocator_b"))
    for host in comparison["hosts"]:
        for allocator in host["allocators"]:
            at = (comparison["run_a"], comparison["run_b"], host["host_a"], host["host_b"])
            table.add((*at, allocator["allocator_a"], allocator["allocator_b"]), allocator["families"])
    return {COMPARE_FAMILIES: table}


def write_tables(directory: str, tables: dict[str, Table]) -> list[str]:
    """Writes `<directory>/<table>.csv` for each table (UTF-8, CRLF rows as RFC 4180 has them), all or none;
    returns the paths."""
    paths = {name: os.path.join(directory, f"{name}.csv") for name in tables}
    try:
        os.makedirs(directory, exist_ok=True)
        write_texts((paths[name], table.text()) for name, table in tables.items())
    except OSError as exc:
        raise LeakfinderError(f"{directory}: cannot write the CSV files ({exc.strerror}); the files there are unchanged") from exc
    return list(paths.values())
