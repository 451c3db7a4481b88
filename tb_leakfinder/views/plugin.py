"""The Leaks tab's HTTP routes: argument checking and JSON answers, nothing else."""

from __future__ import annotations

import importlib.resources
import logging
from collections.abc import Callable
from typing import Any

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import Request, Response

from tb_leakfinder import report
from tb_leakfinder.errors import BadArgumentError, LeakfinderError
from tb_leakfinder.plugin_loader import PLUGIN_NAME
from tb_leakfinder.service import DEFAULT_CACHE_BYTES, Engine

logger = logging.getLogger(__name__)
JSON = "application/json"
DEFAULT_POINTS = 1000
MAX_POINTS = 20000


def int_arg(request: Request, name: str, default: int | None = None, lo: int | None = None, hi: int | None = None) -> int | None:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadArgumentError(f"{name} must be an integer, not {raw!r}") from None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise BadArgumentError(f"{name} must be between {lo} and {hi}, not {value}")
    return value


def str_arg(request: Request, name: str, required: bool = False) -> str | None:
    value = request.args.get(name)
    if value is None or value == "":
        if required:
            raise BadArgumentError(f"the query argument {name!r} is required")
        return None
    if "\x00" in value:
        raise BadArgumentError(f"{name} must not contain NUL bytes")
    return value


class LeakfinderPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        flags = context.flags
        cache_mb = getattr(flags, "leakfinder_cache_mb", None) if flags is not None else None
        cache_bytes = cache_mb << 20 if cache_mb else DEFAULT_CACHE_BYTES
        self.engine = Engine.for_logdir(context.logdir or "", cache_bytes) if context.logdir else Engine(list)

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="Leaks")

    def is_active(self) -> bool:
        try:
            return bool(self.engine.runs())
        except Exception:
            logger.exception("tb_leakfinder: run discovery failed")
            return False

    def get_plugin_apps(self) -> dict[str, Callable[..., Any]]:
        routes = {
            "/index.js": self._index_js,
            "/runs": self._json(self._runs),
            "/report": self._json(self._report),
            "/timeline": self._json(self._timeline),
            "/buffers": self._json(self._buffers),
        }
        return routes

    @staticmethod
    @Request.application
    def _index_js(request: Request) -> Response:
        bundle = importlib.resources.files("tb_leakfinder.static").joinpath("index.js").read_bytes()
        return http_util.Respond(request, bundle, "application/javascript")

    def _json(self, handler: Callable[[Request], report.Json]) -> Callable[..., Any]:
        @Request.application
        def app(request: Request) -> Response:
            try:
                return http_util.Respond(request, handler(request), JSON)
            except LeakfinderError as exc:
                return http_util.Respond(request, {"error": exc.message}, JSON, code=exc.status)
            except Exception:
                logger.exception("tb_leakfinder: %s failed", request.path)
                message = f"internal error in {request.path}; see the TensorBoard log"
                return http_util.Respond(request, {"error": message}, JSON, code=500)

        return app

    def _runs(self, request: Request) -> report.Json:
        return {"runs": [{"run": r.name, "hosts": list(r.hosts)} for r in self.engine.runs()]}

    def _report(self, request: Request) -> report.Json:
        run = self.engine.run(str_arg(request, "run", required=True) or "")
        host = str_arg(request, "host")
        return report.report_json([self.engine.run_report(run, host)])

    def _allocator(self, request: Request) -> tuple[Any, Any, str, str]:
        run = self.engine.run(str_arg(request, "run", required=True) or "")
        host, _ = run.host_path(str_arg(request, "host"))
        analysis = self.engine.host(run, host).unwrap()
        allocator = report.find_allocator(analysis, str_arg(request, "allocator"))
        return analysis, allocator, run.name, host

    def _timeline(self, request: Request) -> report.Json:
        analysis, allocator, run, host = self._allocator(request)
        points = int_arg(request, "points", DEFAULT_POINTS, 8, MAX_POINTS) or DEFAULT_POINTS
        body = report.timeline_json(
            allocator,
            analysis.profile.steps,
            points,
            int_arg(request, "start_ps"),
            int_arg(request, "end_ps"),
            int_arg(request, "group", None, 0),
        )
        return {"run": run, "host": host, **body}

    def _buffers(self, request: Request) -> report.Json:
        analysis, allocator, run, host = self._allocator(request)
        body = report.buffers_json(
            allocator,
            analysis.profile.steps,
            offset=int_arg(request, "offset", 0, 0) or 0,
            limit=int_arg(request, "limit", 100, 1, report.MAX_PAGE) or 100,
            sort=str_arg(request, "sort") or "bytes",
            order=str_arg(request, "order") or "desc",
            group=int_arg(request, "group", None, 0),
            status=str_arg(request, "status"),
            start_ps=int_arg(request, "start_ps"),
            end_ps=int_arg(request, "end_ps"),
        )
        return {"run": run, "host": host, "allocator": allocator.name, **body}
