"""The answers the Leaks tab would fetch for some runs, from the queries its routes answer with (engine/queries.py).

A standalone HTML report inlines them, so the tab shows there exactly what TensorBoard serves, without
loading TensorBoard. Each answer is stored under `answer_key`, which
frontend/src/inline.ts computes the same way for the request it would have sent.

A page has a size budget: a browser parses the inlined JSON as one string, and past a few hundred MB
it cannot. The runs' reports, overviews and comparisons always go in; then each host's answers, the
worst hosts first (the overview's order), as long as they fit. A host that does not fit whole keeps
fewer of its largest buffers; the hosts after it are left out, and the page says so. Answers are kept
as the page's JSON text, so a page holds about its budget, not the objects of every host.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import zip_longest
from typing import Any

from tb_leakfinder.analyses.downsample import DEFAULT_POINTS
from tb_leakfinder.analyses.words import count_of
from tb_leakfinder.engine import queries
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.engine.history import several_captures
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.views.html import script_json
from tb_leakfinder.views.route_args import check_hosts
from tb_leakfinder.views.terminal import encoded_size
from tb_leakfinder.wire import Json

PAGE_VERSION = 1
# Arguments an inlined answer does not depend on: the page cuts a zoomed timeline out of the whole
# one, draws a program at its inlined resolution, and filters, sorts and pages the inlined buffers.
IGNORED_ARGS = {
    "timeline": ("points", "start_ps", "end_ps"),
    "module": ("points",),
    "buffers": ("offset", "limit", "sort", "order", "family", "status", "start_ps", "end_ps", "program", "allocation"),
}
MAX_FAMILY_TIMELINES = 50  # per allocator: a family's own curve for each of the top groups
MAX_BUFFERS = 50_000  # per allocator, the largest first
MAX_HOST_PAIRS = 25  # comparisons of single hosts, beyond the whole runs'
LEFT_OUT_STATUS = 413  # what the page answers for a host it does not hold
MAX_NAMED = 10  # hosts named in the note of those left out


def answer_key(route: str, args: dict[str, Any]) -> str:
    """`route`, then `name=value` for each argument the answer depends on, sorted, NUL-separated."""
    ignored = IGNORED_ARGS.get(route, ())
    pairs = sorted((k, str(v)) for k, v in args.items() if v is not None and v != "" and k not in ignored)
    return "\x00".join([route, *(f"{k}={v}" for k, v in pairs)])


@dataclass(frozen=True)
class Budget:
    """How large a page may be: `page_bytes` in all, of which the page's bundle and markup take `overhead`."""

    page_bytes: int
    overhead: int
    flag: str  # the option that sets it, for the messages

    def text(self) -> str:
        return f"{self.page_bytes / 1e6:g} MB ({self.flag})"


@dataclass
class _Buffers:
    """An allocator's inlined buffers, kept as rows until their host is placed: they may be cut to fit."""

    where: dict[str, Any]
    rows: list[Json]
    total: int  # the allocator's buffers, of which `rows` are the largest
    sites: list[Json]  # where they were made: each row's `site` indexes it
    families: int  # the allocator's never-freed families: the page refuses another `family`, as the route does

    def note(self) -> str | None:
        """What the page says when not every buffer is inlined."""
        if len(self.rows) == self.total:
            return None
        w = self.where
        return f"{w['run']} {w['host']} {w['allocator']}: the {len(self.rows)} largest of {self.total} buffers are included"


def _entry_bytes(key: str, text: str) -> int:
    return len(script_json(key)) + len(text) + 2  # "key":text,


def _note_bytes(note: str) -> int:
    """A note is in the page twice: in its header and in the data."""
    return encoded_size(html.escape(note)) + len(script_json(note)) + 4  # the header is UTF-8


@dataclass
class Pieces:
    """Answers (as the page's JSON text), errors, aliases and notes: a whole page's, or one host's before it is placed."""

    answers: dict[str, str] = field(default_factory=dict)
    errors: dict[str, Json] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    buffers: dict[str, _Buffers] = field(default_factory=dict)
    size: int = 0  # the bytes all of it takes in the page

    def answer(self, key: str, body: Json) -> None:
        text = script_json(body)
        self.answers[key] = text
        self.size += _entry_bytes(key, text)

    def error(self, key: str, status: int, message: str) -> None:
        self.errors[key] = {"status": status, "error": message}
        self.size += _entry_bytes(key, script_json(self.errors[key]))

    def alias(self, key: str, to: str) -> None:
        self.aliases[key] = to
        self.size += _entry_bytes(key, script_json(to))

    def note(self, note: str) -> None:
        self.notes.append(note)
        self.size += _note_bytes(note)

    def keep_buffers(self, key: str, kept: _Buffers) -> None:
        """An allocator's buffers under `key`, their rows kept too: cut, if their host does not fit."""
        self.buffers[key] = kept
        body = {**kept.where, "total": len(kept.rows), "buffers": kept.rows, "sites": kept.sites, "families": kept.families}
        self.answer(key, body)

    def buffer_notes(self) -> list[str]:
        return [note for b in self.buffers.values() if (note := b.note())]

    def cut_buffers(self, fraction: float) -> None:
        """Each allocator keeps this fraction of its inlined buffers, the largest."""
        for key, kept in list(self.buffers.items()):
            self.size -= _entry_bytes(key, self.answers[key])
            self.keep_buffers(key, replace(kept, rows=kept.rows[: int(len(kept.rows) * fraction)]))

    def buffer_bytes(self) -> int:
        return sum(len(self.answers[key]) for key in self.buffers)

    def placed_size(self) -> int:
        """Its bytes once placed, with the notes on its buffers."""
        return self.size + sum(_note_bytes(n) for n in self.buffer_notes())

    def add(self, other: Pieces) -> None:
        self.answers.update(other.answers)
        self.errors.update(other.errors)
        self.aliases.update(other.aliases)
        self.size += other.size
        for note in [*other.notes, *other.buffer_notes()]:
            self.note(note)


class StandalonePage:
    """The queries' answers about `runs` (from any paths), kept within `budget`."""

    def __init__(self, runs: list[Run], engine: Engine, budget: Budget | None = None) -> None:
        """`engine`: one that lists `runs` (and may list more), whose analyses (and disk cache) serve."""
        self.runs = runs
        self.engine = engine
        self.budget = budget
        self.page = Pieces()
        self._reports: dict[str, Json] = {}  # each run's whole report

    @property
    def notes(self) -> list[str]:
        return self.page.notes

    def _keep(self, pieces: Pieces, key: str, answer: Callable[[], Json]) -> Json | None:
        """`answer()`, kept in `pieces` under `key`; None when it refuses (an unreadable host), with its error kept."""
        try:
            body = answer()
        except LeakfinderError as exc:
            pieces.error(key, exc.status, exc.message)
            return None
        pieces.answer(key, body)
        return body

    def all_buffers(self, at: queries.AllocatorAt, limit: int, sites: list[Json]) -> Iterator[Json]:
        """The `limit` largest buffers of an allocator, a page of the route at a time; each row's `site` indexes
        `sites`, to which every page's sites are added once."""
        offset = 0
        known: dict[str, int] = {}
        for page in queries.buffer_pages(at):
            rows = page["buffers"][: limit - offset]
            mine = []
            for site in page.get("sites", []):
                text = json.dumps(site, sort_keys=True)
                if text not in known:
                    known[text] = len(sites)
                    sites.append(site)
                mine.append(known[text])
            yield from ({**row, "site": mine[row["site"]]} for row in rows)
            offset += len(rows)
            if offset >= limit:
                return

    def gather(self, comparison: bool = False) -> None:
        """Everything the tab fetches for the runs (and, with `comparison`, for the first compared with the
        second): their reports and overviews, then each host's answers, worst hosts first, taking turns
        between the runs, as far as the budget allows. A LeakfinderError when not even one host fits."""
        hosts = [self._gather_run(run) for run in self.runs]
        # Asked after the reports, so that it names the files they could not read.
        names = {r.name for r in self.runs}
        runs = [r for r in queries.runs(self.engine)["runs"] if r["run"] in names]  # the run list narrowed to these
        self.page.answer(answer_key("runs", {}), {"runs": runs})
        # The tab shows a run's history when the page holds several of its captures.
        for tb_run in several_captures(run.name for run in self.runs):
            self._keep(self.page, answer_key("history", {"tb_run": tb_run}), partial(queries.history, self.engine, tb_run))
        if comparison:
            self._gather_comparison(*self.runs)
        if not self._fits(self.page.size):
            raise self._over("the reports and overviews alone", self.page.size)
        queue = [(run, host) for turn in zip_longest(*hosts) for run, host in zip(self.runs, turn, strict=True) if host]
        for placed, (run, host) in enumerate(queue):
            rest = self._left_out(queue[placed + 1 :])  # room kept for saying which hosts did not fit
            pieces = self._gather_host(run, host)
            self._cut_to_fit(pieces, rest.size)
            if self._fits(self.page.size + pieces.placed_size() + rest.size):
                self.page.add(pieces)
                continue
            if placed == 0:
                raise self._over(f"run {run.name!r} host {host!r}", self.page.size + pieces.placed_size() + rest.size)
            self.page.add(self._left_out(queue[placed:]))
            return

    def _room(self) -> int | None:
        return None if self.budget is None else self.budget.page_bytes - self.budget.overhead

    def _fits(self, size: int) -> bool:
        room = self._room()
        return room is None or size <= room

    def _over(self, what: str, size: int) -> LeakfinderError:
        assert self.budget is not None
        page = (size + self.budget.overhead) / 1e6
        return LeakfinderError(
            f"the standalone HTML report would take {page:.1f} MB with {what}, over its budget of {self.budget.text()};"
            f" raise {self.budget.flag}, or ask for one host with --host",
            status=400,
        )

    def _gather_run(self, run: Run) -> list[str]:
        """A run's whole report and overview; its hosts, worst first."""
        check_hosts(run, None)  # as the routes: a page of more hosts is one host's
        whole = self._reports[run.name] = queries.report(self.engine, run)
        self.page.answer(answer_key("report", {"run": run.name}), whole)
        overview = self._keep(self.page, answer_key("overview", {"run": run.name}), lambda: queries.overview(self.engine, run))
        worst = [] if overview is None else [row["host"] for row in overview["rows"]]
        return list(dict.fromkeys([*worst, *run.hosts]))

    def _gather_host(self, run: Run, host: str) -> Pieces:
        """What the tab fetches for one host: its report, each allocator's timelines and buffers, its programs."""
        pieces = Pieces()
        if len(run.hosts) > 1:
            # One host's file may be unreadable: the page shows its error, as the tab would.
            key = answer_key("report", {"run": run.name, "host": host})
            report = self._keep(pieces, key, lambda: queries.report(self.engine, run, host))
        else:
            report = self._reports[run.name]
            pieces.alias(answer_key("report", {"run": run.name, "host": host}), answer_key("report", {"run": run.name}))
        if report is None:
            return pieces
        (host_json,) = report["runs"][0]["hosts"]
        for allocator in host_json["allocators"]:
            self._gather_allocator(pieces, run, host, allocator)
        for module in host_json["modules"]:
            space = module.get("memory_space") or None  # the tab sends it only when not 0
            key = answer_key("module", {"run": run.name, "host": host, "module": module["name"], "memory_space": space})
            self._keep(pieces, key, partial(self._module, run, host, module["name"], space))
        return pieces

    def _module(self, run: Run, host: str, name: str, memory_space: int | None) -> Json:
        return queries.module(queries.module_at(queries.host(self.engine, run, host), name), memory_space)

    def _gather_allocator(self, pieces: Pieces, run: Run, host: str, allocator: Json) -> None:
        name = allocator["allocator"]
        at = queries.allocator(queries.host(self.engine, run, host), name)
        where = {"run": run.name, "host": host, "allocator": name}
        families = [None, *(g["family"] for g in allocator["families"][:MAX_FAMILY_TIMELINES])]
        timelines = [where if family is None else {**where, "family": family} for family in families]
        for args, family in zip(timelines, families, strict=True):
            pieces.answer(answer_key("timeline", args), queries.timeline(at, DEFAULT_POINTS, family=family))
        sites: list[Json] = []
        rows = list(self.all_buffers(at, MAX_BUFFERS, sites))
        total = queries.buffers(at, limit=1)["total"]
        families_count = len(at.allocator.suspects.families)
        pieces.keep_buffers(answer_key("buffers", where), _Buffers(where, rows, total, sites, families_count))
        # The tab may name the allocator by its memory id: the same answers serve that name too.
        memory_id = allocator.get("memory_id")
        if memory_id is not None and str(memory_id) != name:
            for route, args in [*(("timeline", a) for a in timelines), ("buffers", where)]:
                pieces.alias(answer_key(route, {**args, "allocator": memory_id}), answer_key(route, args))

    def _cut_to_fit(self, pieces: Pieces, reserve: int) -> None:
        """Fewer of each allocator's buffers, in proportion, when the host does not fit and that lets it."""
        room = self._room()
        for _ in range(8):  # rows differ in length: a proportional cut lands close, a few more finish it
            over, buffers = self.page.size + pieces.placed_size() + reserve - (room or 0), pieces.buffer_bytes()
            if room is None or over <= 0 or over >= buffers:
                return
            pieces.cut_buffers((buffers - over) / buffers * 0.98)

    def _left_out(self, hosts: list[tuple[Run, str]]) -> Pieces:
        """What the page answers for hosts it does not hold, and its note naming them."""
        pieces = Pieces()
        if not hosts or self.budget is None:
            return pieces
        budget, flag = self.budget.text(), self.budget.flag
        for run, host in hosts:
            message = (
                f"host {host!r} of run {run.name!r} is left out of this standalone report to keep it under {budget};"
                f" write one for it with --host, or raise {flag}"
            )
            pieces.error(answer_key("report", {"run": run.name, "host": host}), LEFT_OUT_STATUS, message)
        names = ", ".join(host for _, host in hosts[:MAX_NAMED]) + (", …" if len(hosts) > MAX_NAMED else "")
        pieces.note(f"{count_of(len(hosts), 'host')} left out to keep the page under {budget}: {names}")
        return pieces

    def _gather_comparison(self, run_a: Run, run_b: Run) -> None:
        """The comparison of the two runs both ways (the tab's Swap), and of each pair of their hosts (a few at most)."""
        for base, change in ((run_a, run_b), (run_b, run_a)):
            hosts_a, hosts_b = [None, *base.hosts], [None, *change.hosts]
            if len(hosts_a) * len(hosts_b) > MAX_HOST_PAIRS:
                hosts_a, hosts_b = [None], [None]
            for host_a in hosts_a:
                for host_b in hosts_b:
                    args = {"run_a": base.name, "run_b": change.name, "host_a": host_a, "host_b": host_b}
                    self._keep(self.page, answer_key("compare", args), partial(self._compare, base, change, host_a, host_b))

    def _compare(self, run_a: Run, run_b: Run, host_a: str | None, host_b: str | None) -> Json:
        check_hosts(run_a, host_a)
        check_hosts(run_b, host_b)
        return queries.diff(self.engine, run_a, run_b, host_a, host_b)

    def script_data(self, view_hash: str) -> str:
        """The page's data element: answers, errors, aliases and notes, and the view it opens on."""
        head = {
            "version": PAGE_VERSION,
            "notes": self.notes,
            "errors": self.page.errors,
            "aliases": self.page.aliases,
            "view_hash": view_hash,
        }
        inlined = ",".join(f"{script_json(key)}:{text}" for key, text in self.page.answers.items())
        return f'{script_json(head)[:-1]},"answers":{{{inlined}}}}}'
