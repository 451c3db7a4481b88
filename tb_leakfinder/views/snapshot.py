"""The answers the Leaks tab would fetch for some runs, asked of the plugin's own routes in process.

A standalone HTML report inlines them, so the tab shows there exactly what TensorBoard serves, and
the CSV export takes its buffer rows from them. Each answer is stored under `answer_key`, which
frontend/src/inline.ts computes the same way for the request it would have sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from tensorboard.plugins import base_plugin
from werkzeug import Request
from werkzeug.test import EnvironBuilder

from tb_leakfinder.analyses.buffer_query import MAX_PAGE
from tb_leakfinder.analyses.downsample import DEFAULT_POINTS
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.report import Json
from tb_leakfinder.service import Engine
from tb_leakfinder.views.plugin import ROUTE_ARGS, LeakfinderPlugin, check_args

SNAPSHOT_VERSION = 1
# Arguments an inlined answer does not depend on: the page cuts a zoomed timeline out of the whole
# one, draws a program at its inlined resolution, and filters, sorts and pages the inlined buffers.
IGNORED_ARGS = {
    "timeline": ("points", "start_ps", "end_ps"),
    "module": ("points",),
    "buffers": ("offset", "limit", "sort", "order", "group", "status", "start_ps", "end_ps"),
}
MAX_GROUP_TIMELINES = 50  # per allocator: a group's own curve for each of the top groups
MAX_BUFFERS = 50_000  # per allocator, the largest first
MAX_HOST_PAIRS = 25  # comparisons of single hosts, beyond the whole runs'


def answer_key(route: str, args: dict[str, Any]) -> str:
    """`route`, then `name=value` for each argument the answer depends on, sorted, NUL-separated."""
    ignored = IGNORED_ARGS.get(route, ())
    pairs = sorted((k, str(v)) for k, v in args.items() if v is not None and v != "" and k not in ignored)
    return "\x00".join([route, *(f"{k}={v}" for k, v in pairs)])


class Snapshot:
    """Asks the plugin's routes about `runs` (from any paths) and keeps the answers."""

    def __init__(self, runs: list[Run], engine: Engine) -> None:
        """`engine`: one that lists `runs` (and may list more), whose analyses (and disk cache) serve."""
        self.runs = runs
        plugin = LeakfinderPlugin(base_plugin.TBContext(logdir=None, flags=None))
        plugin.engine = engine
        self._handlers = plugin.json_handlers()
        self.answers: dict[str, Json] = {}
        self.errors: dict[str, Json] = {}  # what a route refused, as {"status", "error"}: the page shows it too
        self.aliases: dict[str, str] = {}
        self.notes: list[str] = []

    def ask(self, route: str, **args: Any) -> Json:
        """The route's JSON answer; its LeakfinderError when it refuses.

        The handler is called on a real request, past the HTTP layer: TensorBoard's Respond walks every
        value in Python (json_util.Cleanse), which would take most of the time of a large report.
        """
        query = urlencode({k: v for k, v in args.items() if v is not None})
        request = Request(EnvironBuilder(path=f"/{route}", query_string=query).get_environ())
        check_args(request, ROUTE_ARGS[f"/{route}"])
        return self._handlers[f"/{route}"](request)

    def keep(self, route: str, **args: Any) -> Json | None:
        """The route's answer, stored; None when it refuses (an unreadable host), with its error stored."""
        key = answer_key(route, args)
        try:
            body = self.ask(route, **args)
        except LeakfinderError as exc:
            self.errors[key] = {"status": exc.status, "error": exc.message}
            return None
        self.answers[key] = body
        return body

    def all_buffers(self, run: str, host: str, allocator: str, limit: int | None = None) -> Iterator[Json]:
        """Every buffer of an allocator (the largest first), a page of the route at a time."""
        offset = 0
        while limit is None or offset < limit:
            page = self.ask("buffers", run=run, host=host, allocator=allocator, offset=offset, limit=MAX_PAGE)
            rows = page["buffers"] if limit is None else page["buffers"][: limit - offset]
            yield from rows
            offset += len(rows)
            if not rows or offset >= page["total"]:
                return

    def gather_run(self, run: Run) -> Json:
        """Everything the tab fetches for one run: its reports, timelines, buffers and programs."""
        whole = self.ask("report", run=run.name)
        self.answers[answer_key("report", {"run": run.name})] = whole
        self.keep("overview", run=run.name)
        if len(run.hosts) > 1:  # the tab opens a pod on its overview
            self.keep("overview", run=run.name)
        for host in run.hosts:
            # One host's file may be unreadable: the page shows its error, as the tab would.
            report = self.keep("report", run=run.name, host=host) if len(run.hosts) > 1 else whole
            if report is None:
                continue
            self.answers[answer_key("report", {"run": run.name, "host": host})] = report
            (host_json,) = report["runs"][0]["hosts"]
            for allocator in host_json["allocators"]:
                self._gather_allocator(run.name, host, allocator)
            for module in host_json["modules"]:
                space = module.get("memory_space") or None  # the tab sends it only when not 0
                self.keep("module", run=run.name, host=host, module=module["name"], memory_space=space)
        return whole

    def _gather_allocator(self, run: str, host: str, allocator: Json) -> None:
        name = allocator["name"]
        where = {"run": run, "host": host, "allocator": name}
        kept = [self._keep_as("timeline", where, self.ask("timeline", **where, points=DEFAULT_POINTS))]
        for group in allocator["groups"][:MAX_GROUP_TIMELINES]:
            args = {**where, "group": group["group"]}
            kept.append(self._keep_as("timeline", args, self.ask("timeline", **args, points=DEFAULT_POINTS)))
        rows = list(self.all_buffers(run, host, name, MAX_BUFFERS))
        total = self.ask("buffers", **where, limit=1)["total"]
        if total > len(rows):
            self.notes.append(f"{run} {host} {name}: the {len(rows)} largest of {total} buffers are included")
        kept.append(self._keep_as("buffers", where, {**where, "total": len(rows), "buffers": rows}))
        # The tab may name the allocator by its memory id: the same answers serve that name too.
        memory_id = allocator.get("memory_id")
        if memory_id is not None and str(memory_id) != name:
            for route, args in kept:
                self.aliases[answer_key(route, {**args, "allocator": memory_id})] = answer_key(route, args)

    def _keep_as(self, route: str, args: dict[str, Any], body: Json) -> tuple[str, dict[str, Any]]:
        self.answers[answer_key(route, args)] = body
        return route, args

    def gather_comparison(self, run_a: Run, run_b: Run) -> None:
        """The comparison of the two runs both ways (the tab's Swap), and of each pair of their hosts (a few at most)."""
        for base, change in ((run_a, run_b), (run_b, run_a)):
            hosts_a, hosts_b = [None, *base.hosts], [None, *change.hosts]
            if len(hosts_a) * len(hosts_b) > MAX_HOST_PAIRS:
                hosts_a, hosts_b = [None], [None]
            for host_a in hosts_a:
                for host_b in hosts_b:
                    self.keep("compare", run_a=base.name, run_b=change.name, host_a=host_a, host_b=host_b)

    def data(self) -> Json:
        """The inlined data: the answers (the run list narrowed to the gathered runs) and their aliases."""
        names = {r.name for r in self.runs}
        runs = [r for r in self.ask("runs")["runs"] if r["run"] in names]
        return {
            "version": SNAPSHOT_VERSION,
            "notes": self.notes,
            "answers": {answer_key("runs", {}): {"runs": runs}, **self.answers},
            "errors": self.errors,
            "aliases": self.aliases,
        }
