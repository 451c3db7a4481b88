"""The Leaks tab's HTTP routes: argument checking and JSON answers, nothing else."""

from __future__ import annotations

import importlib.resources
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar, overload

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import Request, Response

from tb_leakfinder import report
from tb_leakfinder.analyses import query, static_buffers
from tb_leakfinder.analyses.buffer_query import DEFAULT_PAGE, MAX_PAGE, query_buffers
from tb_leakfinder.analyses.downsample import DEFAULT_POINTS, MAX_POINTS, MIN_POINTS
from tb_leakfinder.analyses.timeline import timeline
from tb_leakfinder.engine.engine import DEFAULT_CACHE_BYTES, Engine
from tb_leakfinder.errors import BadArgumentError, LeakfinderError, NotFoundError
from tb_leakfinder.plugin_loader import PLUGIN_NAME
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.read.formats import registry
from tb_leakfinder.read.formats.registry import format_of
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.store.location import disabled_by_env

logger = logging.getLogger(__name__)
JSON = "application/json"
T = TypeVar("T")

# Per-request limits (docs/http_api.md, "Limits"); the largest file analysed is read/formats/xplane/reader.py's MAX_FILE_BYTES.
MAX_HOSTS_PER_REQUEST = 256  # a report over more hosts must name one
REQUEST_TIMEOUT_S = 120.0  # then 503; the analysis goes on and a retry gets it from the cache
MAX_ARG_CHARS = 1024
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# The query arguments each route takes; any other is refused, so a typo is not silently ignored.
ROUTE_ARGS = {
    "/runs": (),
    "/compare": ("run_a", "run_b", "host_a", "host_b"),
    "/module": ("run", "host", "module", "memory_space", "points"),
    "/report": ("run", "host"),
    "/history": ("run",),
    "/overview": ("run",),
    "/timeline": ("run", "host", "allocator", "points", "start_ps", "end_ps", "group"),
    "/buffers": (
        "run",
        "host",
        "allocator",
        "offset",
        "limit",
        "sort",
        "order",
        "group",
        "status",
        "start_ps",
        "end_ps",
        "program",
        "allocation",
    ),
}


def check_args(request: Request, allowed: tuple[str, ...]) -> None:
    for name in request.args:
        if name not in allowed:
            expected = ", ".join(allowed) or "none"
            raise BadArgumentError(f"unknown query argument {name[:64]!r}; this route takes: {expected}")
        if len(request.args.getlist(name)) > 1:
            raise BadArgumentError(f"the query argument {name!r} is given more than once")


@overload
def int_arg(request: Request, name: str, default: int, lo: int | None = None, hi: int | None = None) -> int: ...


@overload
def int_arg(request: Request, name: str, default: None = None, lo: int | None = None, hi: int | None = None) -> int | None: ...


def int_arg(request: Request, name: str, default: int | None = None, lo: int | None = None, hi: int | None = None) -> int | None:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw) if len(raw) <= 32 else None
    except ValueError:
        value = None
    if value is None:
        raise BadArgumentError(f"{name} must be an integer, not {raw[:64]!r}")
    lo = INT64_MIN if lo is None else lo
    hi = INT64_MAX if hi is None else hi
    if not lo <= value <= hi:
        raise BadArgumentError(f"{name} must be between {lo} and {hi}, not {value}")
    return value


def _given(request: Request, name: str) -> str | None:
    value = request.args.get(name)
    return None if value is None or value == "" else value


def check_typed(name: str, value: str) -> None:
    """What a user may type: no NUL byte, at most MAX_ARG_CHARS characters."""
    if "\x00" in value:
        raise BadArgumentError(f"{name} must not contain NUL bytes")
    if len(value) > MAX_ARG_CHARS:
        raise BadArgumentError(f"{name} is {len(value)} characters long, over the limit of {MAX_ARG_CHARS}")


def str_arg(request: Request, name: str) -> str | None:
    """An argument that names nothing in a profile (`sort`, `order`, `status`)."""
    value = _given(request, name)
    if value is not None:
        check_typed(name, value)
    return value


def name_arg(request: Request, name: str, find: Callable[[str | None], T]) -> T:
    """`find(value)` of an argument that names a run, host, allocator or module, or None when not given.

    Names come from the profiles, so one that `find` knows is found whatever its length or bytes; the
    limits of what a user types make an unknown one a 400 rather than a 404.
    """
    value = _given(request, name)
    try:
        return find(value)
    except NotFoundError:
        if value is not None:
            check_typed(name, value)
        raise


def required_name(request: Request, name: str, find: Callable[[str], T]) -> T:
    def found(value: str | None) -> T:
        if value is None:
            raise BadArgumentError(f"the query argument {name!r} is required")
        return find(value)

    return name_arg(request, name, found)


def host_arg(request: Request, run: Run) -> str:
    """A host of `run`, its first when not given."""
    return name_arg(request, "host", lambda host: run.host_path(host)[0])


def hosts_arg(request: Request, run: Run, name: str = "host") -> str | None:
    """A host of `run`, or None (every host) when not given."""
    return name_arg(request, name, lambda host: None if host is None else run.host_path(host)[0])


def _check_hosts(run: Run, host: str | None) -> None:
    """A report over all hosts of a run analyses at most MAX_HOSTS_PER_REQUEST of them."""
    if host is None and len(run.hosts) > MAX_HOSTS_PER_REQUEST:
        raise BadArgumentError(
            f"run {run.name!r} has {len(run.hosts)} hosts, more than the {MAX_HOSTS_PER_REQUEST} analysed in one"
            f" request; ask for one host at a time (hosts: {', '.join(sorted(run.hosts)[:10])}, ...)"
        )


def call_with_timeout(work: Callable[[], report.Json], timeout_s: float, what: str) -> report.Json:
    """`work()` in a worker thread; a 503 if it takes longer than `timeout_s` (it still finishes, into the cache)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the request thread, which answers for it
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="leakfinder-request", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise LeakfinderError(
            f"{what} is still being analysed after {timeout_s:g} s; the analysis goes on, try again shortly",
            status=503,
        )
    if "error" in outcome:
        raise outcome["error"]
    value: report.Json = outcome["value"]
    return value


def respond(request: Request, body: bytes | report.Json, content_type: str, code: int = 200) -> Response:
    """TensorBoard's response (its compression and security headers)."""
    response: Response = http_util.Respond(request, body, content_type, code=code)
    return response


def _disk_cache(flags: Any, logdir: str | None) -> DiskCache | None:
    """The analysis folder the flags name; none when turned off, or (logged) when it cannot be used."""
    size_gb = getattr(flags, "leakfinder_cache_dir_gb", 0.0) if flags is not None else 0.0
    folder = getattr(flags, "leakfinder_cache_dir", "") if flags is not None else ""
    if size_gb <= 0 or (disabled_by_env() and not folder):
        return None
    try:
        return DiskCache.for_logdir(folder or None, int(size_gb * (1 << 30)), logdir)
    except LeakfinderError as exc:
        logger.error("tb_leakfinder: %s; analyses are kept in memory only", exc.message)
        return None


class LeakfinderPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        flags = context.flags
        cache_mb = getattr(flags, "leakfinder_cache_mb", None) if flags is not None else None
        cache_bytes = cache_mb << 20 if cache_mb else DEFAULT_CACHE_BYTES
        disk = _disk_cache(flags, context.logdir)
        self.engine = Engine.for_logdir(context.logdir, cache_bytes, disk) if context.logdir else Engine(list)

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="Leaks")

    def is_active(self) -> bool:
        try:
            return bool(self.engine.runs())
        except Exception:
            logger.exception("tb_leakfinder: run discovery failed")
            return False

    def json_handlers(self) -> dict[str, Callable[[Request], report.Json]]:
        """Each JSON route's handler: its answer before HTTP (the standalone HTML report asks them in process)."""
        return {
            "/runs": self._runs,
            "/report": self._report,
            "/history": self._history,
            "/overview": self._overview,
            "/timeline": self._timeline,
            "/buffers": self._buffers,
            "/compare": self._compare,
            "/module": self._module,
        }

    def get_plugin_apps(self) -> dict[str, Callable[..., Any]]:
        routes = {route: self._json(handler, ROUTE_ARGS[route]) for route, handler in self.json_handlers().items()}
        return {"/index.js": self._index_js, **routes}

    @staticmethod
    @Request.application
    def _index_js(request: Request) -> Response:
        bundle = importlib.resources.files("tb_leakfinder.webapp").joinpath("index.js").read_bytes()
        return respond(request, bundle, "application/javascript")

    def _json(self, handler: Callable[[Request], report.Json], args: tuple[str, ...]) -> Callable[..., Any]:
        @Request.application
        def app(request: Request) -> Response:
            try:
                check_args(request, args)
                body = call_with_timeout(lambda: handler(request), REQUEST_TIMEOUT_S, request.path)
                return respond(request, body, JSON)
            except LeakfinderError as exc:
                return respond(request, {"error": exc.message}, JSON, exc.status)
            except Exception:
                logger.exception("tb_leakfinder: %s failed", request.path)
                message = f"internal error in {request.path}; see the TensorBoard log"
                return respond(request, {"error": message}, JSON, 500)

        return app

    def _run(self, request: Request, arg: str = "run") -> Run:
        return required_name(request, arg, self.engine.run)

    def _runs(self, request: Request) -> report.Json:
        """Discovered runs; each with the errors of its files found unreadable so far (it reads nothing)."""
        runs = self.engine.runs()
        return {"runs": [{"run": r.name, "hosts": list(r.hosts), "errors": self.engine.known_errors(r)} for r in runs]}

    def _module(self, request: Request) -> report.Json:
        run = self._run(request)
        host = host_arg(request, run)
        points = int_arg(request, "points", DEFAULT_POINTS, MIN_POINTS, MAX_POINTS)
        memory_space = int_arg(request, "memory_space", None, 0)
        result = self.engine.host(run, host)
        path = result.unwrap().profile.path
        module = required_name(request, "module", lambda name: registry.module(format_of(path), result.hlo_protos, name, path))
        detail = static_buffers.module_detail(module, memory_space, points)
        return {"run": run.name, "host": host, **report.module_detail_json(detail)}

    def _compare(self, request: Request) -> report.Json:
        sides = []
        for side in ("a", "b"):
            run = self._run(request, f"run_{side}")
            host = hosts_arg(request, run, f"host_{side}")
            _check_hosts(run, host)
            sides.append((self.engine.run_side(run, host), host))
        (run_a, host_a), (run_b, host_b) = sides
        from tb_leakfinder.analyses.diff import compare  # loaded by the first comparison, not with the plugin

        return report.comparison_json(compare(run_a, run_b, host_a, host_b))

    def _report(self, request: Request) -> report.Json:
        run = self._run(request)
        host = hosts_arg(request, run)
        _check_hosts(run, host)
        return report.report_json([self.engine.run_report(run, host)])

    def _history(self, request: Request) -> report.Json:
        """A TensorBoard run's captures as one history; `run` is the TensorBoard run ("" or absent: the logdir's top)."""

        def found(name: str | None) -> str:
            self.engine.captures(name or "")  # NotFoundError unless discovered: names never become paths
            return name or ""

        return self.engine.history(name_arg(request, "run", found))

    def _overview(self, request: Request) -> report.Json:
        run = self._run(request)
        _check_hosts(run, None)
        return self.engine.run_overview(run)

    def _allocator(self, request: Request) -> tuple[Any, Any, str, str]:
        run = self._run(request)
        host = host_arg(request, run)
        analysis = self.engine.host(run, host).unwrap()
        allocator = name_arg(request, "allocator", lambda name: query.find_allocator(analysis, name))
        return analysis, allocator, run.name, host

    def _timeline(self, request: Request) -> report.Json:
        analysis, allocator, run, host = self._allocator(request)
        points = int_arg(request, "points", DEFAULT_POINTS, MIN_POINTS, MAX_POINTS)
        start_ps, end_ps, group = int_arg(request, "start_ps"), int_arg(request, "end_ps"), int_arg(request, "group", None, 0)
        body = report.timeline_json(allocator, analysis.profile.steps, timeline(allocator, points, start_ps, end_ps, group))
        return {"run": run, "host": host, **body}

    def _buffers(self, request: Request) -> report.Json:
        analysis, allocator, run, host = self._allocator(request)
        page = query_buffers(
            allocator,
            offset=int_arg(request, "offset", 0, 0),
            limit=int_arg(request, "limit", DEFAULT_PAGE, 1, MAX_PAGE),
            sort=str_arg(request, "sort") or "bytes",
            order=str_arg(request, "order") or "desc",
            group=int_arg(request, "group", None, 0),
            status=str_arg(request, "status"),
            start_ps=int_arg(request, "start_ps"),
            end_ps=int_arg(request, "end_ps"),
            program=_given(request, "program"),  # a module key from the profile: any length or bytes
            allocation=int_arg(request, "allocation", None, 0),
        )
        body = report.buffers_json(allocator, analysis.profile.steps, page)
        return {"run": run, "host": host, "allocator": allocator.name, "memory_id": allocator.memory_id, **body}
