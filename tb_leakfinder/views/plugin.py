"""The Leaks tab's HTTP routes: each parses its arguments (route_args.py) and answers with a query
(engine/queries.py), nothing else."""

from __future__ import annotations

import importlib.resources
import logging
import threading
from collections.abc import Callable
from typing import Any

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import Request, Response

from tb_leakfinder import wire
from tb_leakfinder.analyses.downsample import DEFAULT_POINTS, MAX_POINTS, MIN_POINTS
from tb_leakfinder.engine import queries
from tb_leakfinder.engine.engine import DEFAULT_CACHE_BYTES, Engine
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.plugin_flags import PLUGIN_NAME
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.store.location import disabled_by_env
from tb_leakfinder.views.route_args import (
    PAGE_ARGS,
    ROUTE_ARGS,
    check_args,
    check_hosts,
    host_arg,
    hosts_arg,
    int_arg,
    name_arg,
    parsed_args,
    required_name,
)

logger = logging.getLogger(__name__)
JSON = "application/json"
REQUEST_TIMEOUT_S = 120.0  # then 503; the analysis goes on and a retry gets it from the cache


def call_with_timeout(work: Callable[[], wire.Json], timeout_s: float, what: str) -> wire.Json:
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
    value: wire.Json = outcome["value"]
    return value


def respond(request: Request, body: bytes | wire.Json, content_type: str, code: int = 200) -> Response:
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

    def json_handlers(self) -> dict[str, Callable[[Request], wire.Json]]:
        """Each JSON route's handler: its answer before HTTP."""
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

    def _json(self, handler: Callable[[Request], wire.Json], args: tuple[str, ...]) -> Callable[..., Any]:
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

    def _runs(self, request: Request) -> wire.RunsAnswer:
        return queries.runs(self.engine)

    def _module(self, request: Request) -> wire.ModuleAnswer:
        run = self._run(request)
        host = host_arg(request, run)
        points = int_arg(request, "points", DEFAULT_POINTS, MIN_POINTS, MAX_POINTS)
        memory_space = int_arg(request, "memory_space", None, 0)
        at = queries.host(self.engine, run, host)
        return queries.module(required_name(request, "module", lambda name: queries.module_at(at, name)), memory_space, points)

    def _compare(self, request: Request) -> wire.ComparisonAnswer:
        sides = []
        for side in ("a", "b"):
            run = self._run(request, f"run_{side}")
            host = hosts_arg(request, run, f"host_{side}")
            check_hosts(run, host)
            sides.append((run, host))
        (run_a, host_a), (run_b, host_b) = sides
        return queries.diff(self.engine, run_a, run_b, host_a, host_b)

    def _report(self, request: Request) -> wire.ReportAnswer:
        run = self._run(request)
        host = hosts_arg(request, run)
        check_hosts(run, host)
        return queries.report(self.engine, run, host)

    def _history(self, request: Request) -> wire.HistoryAnswer:
        """`run` is the TensorBoard run ("" or absent: the logdir's top)."""

        def found(name: str | None) -> str:
            self.engine.captures(name or "")  # NotFoundError unless discovered: names never become paths
            return name or ""

        return queries.history(self.engine, name_arg(request, "tb_run", found))

    def _overview(self, request: Request) -> wire.OverviewAnswer:
        run = self._run(request)
        check_hosts(run, None)
        return queries.overview(self.engine, run)

    def _allocator(self, request: Request) -> queries.AllocatorAt:
        run = self._run(request)
        at = queries.host(self.engine, run, host_arg(request, run))
        return name_arg(request, "allocator", lambda name: queries.allocator(at, name))

    def _timeline(self, request: Request) -> wire.TimelineAnswer:
        at = self._allocator(request)
        points = int_arg(request, "points", DEFAULT_POINTS, MIN_POINTS, MAX_POINTS)
        start_ps, end_ps, family = int_arg(request, "start_ps"), int_arg(request, "end_ps"), int_arg(request, "family", None, 0)
        return queries.timeline(at, points, start_ps, end_ps, family)

    def _buffers(self, request: Request) -> wire.BuffersAnswer:
        return queries.buffers(self._allocator(request), **parsed_args(request, PAGE_ARGS))
