"""`--csv DIR` and `--html FILE` of `tb-leakfinder report` and `diff`: the report as files to hand on."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tb_leakfinder.errors import BadArgumentError
from tb_leakfinder.views.terminal import visible

# The CLI's parser names this module's options: what writing the files needs is imported when one is asked for.
if TYPE_CHECKING:
    from tb_leakfinder.engine.engine import Engine
    from tb_leakfinder.read.discovery import Run
    from tb_leakfinder.store.disk_cache import DiskCache
    from tb_leakfinder.wire import Json


DEFAULT_HTML_MAX_MB = 100.0
HTML_BUDGET_FLAG = "--html-max-mb"
MAX_HTML_MB = 1 << 20  # a TB page: past it a number is a typo


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--csv", metavar="DIR", help="also write each table as DIR/<table>.csv")
    parser.add_argument("--html", metavar="FILE", help="also write a standalone HTML report to FILE (opens from disk, no server)")
    parser.add_argument(
        HTML_BUDGET_FLAG,
        type=_megabytes,
        default=DEFAULT_HTML_MAX_MB,
        metavar="MB",
        help="the largest --html page (default %(default)g MB); past it the worst hosts are kept and the page says which are not",
    )


def _megabytes(text: str) -> float:
    value = float(text)
    if not 0 < value <= MAX_HTML_MB:  # NaN and infinity too
        raise argparse.ArgumentTypeError(f"a positive number of MB up to {MAX_HTML_MB}, not {text!r}")
    return value


def _buffer_pages(engine: Engine, run: str, host: str, allocator: str) -> Iterator[Json]:
    """Every page of an allocator's buffers, the largest first; a row's `site` indexes its own page's `sites`."""
    from tb_leakfinder.engine import queries

    return queries.buffer_pages(queries.allocator(queries.host(engine, engine.run(run), host), allocator))


def _note(paths: list[str], notes: list[str]) -> None:
    for path in paths:
        print(f"tb-leakfinder: wrote {visible(path)}", file=sys.stderr)
    for note in notes:
        print(f"tb-leakfinder: note: {visible(note)}", file=sys.stderr)


def _write_html(
    args: argparse.Namespace, runs: list[Run], engine: Engine, title: str, view: dict[str, str], comparison: bool = False
) -> None:
    """The standalone page of `runs` (with `comparison`, of the first compared with the second), within its budget."""
    from tb_leakfinder.views import html
    from tb_leakfinder.views.standalone_page import Budget, StandalonePage

    budget = Budget(int(args.html_max_mb * 1e6), html.page_overhead(title, view), HTML_BUDGET_FLAG)
    standalone = StandalonePage(runs, engine, budget)
    standalone.gather(comparison)
    html.write_html(args.html, html.standalone_html(title, standalone.script_data(html.view_hash(view)), standalone.notes))
    _note([args.html], standalone.notes)


def export_report(args: argparse.Namespace, engine: Engine, result: Json) -> None:
    """The report's files: CSV tables of every run in `result`, and the HTML of its one run."""
    if not (args.csv or args.html):
        return
    from tb_leakfinder.views import csv

    runs = [engine.run(r["run"]) for r in result["runs"]]
    if args.csv:
        tables = csv.report_tables(result, lambda run, host, allocator: _buffer_pages(engine, run, host, allocator))
        _note(csv.write_tables(args.csv, tables), [])
    if args.html:
        if len(runs) != 1:
            names = ", ".join(r.name for r in runs)
            raise BadArgumentError(f"{args.path} holds {len(runs)} runs ({names}); an HTML report shows one: pick it with --run")
        (run,) = runs
        _write_html(args, runs, engine, f"tb-leakfinder: {run.name}", {"run": run.name})


def _distinct(run_a: Run, run_b: Run) -> tuple[Run, Run]:
    """Two sides with the same run name (two logdirs' sessions, or a run with itself) are told apart."""
    if run_a.name != run_b.name:
        return run_a, run_b
    return dataclasses.replace(run_a, name=f"{run_a.name} (A)"), dataclasses.replace(run_b, name=f"{run_b.name} (B)")


def export_comparison(args: argparse.Namespace, comparison: Json, run_a: Run, run_b: Run, disk: DiskCache | None) -> None:
    """The comparison's files: the compare groups as CSV, and both runs with their comparison as HTML.

    The page's analyses come from `disk`, where the comparison has just stored them, not from the profiles.
    """
    from tb_leakfinder.engine.engine import Engine
    from tb_leakfinder.views import csv

    if args.csv:
        _note(csv.write_tables(args.csv, csv.comparison_tables(comparison)), [])
    if args.html:
        run_a, run_b = _distinct(run_a, run_b)
        view = {"run": run_a.name, "host": args.host_a or "", "compare": run_b.name, "compare_host": args.host_b or ""}
        engine = Engine(lambda: [run_a, run_b], disk=disk)
        _write_html(args, [run_a, run_b], engine, f"tb-leakfinder: {run_a.name} → {run_b.name}", view, comparison=True)
