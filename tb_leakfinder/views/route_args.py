"""The routes' query arguments: which each route takes, and each checked, parsed and matched against what
discovery found, a LeakfinderError (a 4xx) when it is not. Names are looked up, never turned into paths."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, overload

from tb_leakfinder.errors import BadArgumentError, NotFoundError
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.wire.schema import BuffersArgs

if TYPE_CHECKING:
    from werkzeug import Request

T = TypeVar("T")

# Per-request limits (docs/http_api.md, "Limits"); the largest file analysed is read/formats/xplane/reader.py's MAX_FILE_BYTES.
MAX_HOSTS_PER_REQUEST = 256  # a report over more hosts must name one
MAX_ARG_CHARS = 1024
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# The buffers route's arguments as the schema declares them, once for the route, the client (wire.ts's BUFFERS_ARGS)
# and the standalone page.
BUFFERS_ARGS = tuple(BuffersArgs.__annotations__)
# What names where a page of buffers is found, not which page: a standalone page answers every other argument itself.
WHERE_ARGS = ("run", "host", "allocator")
# The query arguments each route takes; any other is refused, so a typo is not silently ignored.
ROUTE_ARGS = {
    "/runs": (),
    "/compare": ("run_a", "run_b", "host_a", "host_b"),
    "/module": ("run", "host", "module", "memory_space", "points"),
    "/report": ("run", "host"),
    "/history": ("tb_run",),
    "/overview": ("run",),
    "/timeline": ("run", "host", "allocator", "points", "start_ps", "end_ps", "family"),
    "/buffers": BUFFERS_ARGS,
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


def given(request: Request, name: str) -> str | None:
    """An argument as sent, None when absent or empty."""
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
    value = given(request, name)
    if value is not None:
        check_typed(name, value)
    return value


def name_arg(request: Request, name: str, find: Callable[[str | None], T]) -> T:
    """`find(value)` of an argument that names a run, host, allocator or module, or None when not given.

    Names come from the profiles, so one that `find` knows is found whatever its length or bytes; the
    limits of what a user types make an unknown one a 400 rather than a 404.
    """
    value = given(request, name)
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


def check_hosts(run: Run, host: str | None) -> None:
    """A report over all hosts of a run analyses at most MAX_HOSTS_PER_REQUEST of them (the standalone page, which
    answers as the routes do, keeps to it too)."""
    if host is None and len(run.hosts) > MAX_HOSTS_PER_REQUEST:
        raise BadArgumentError(
            f"run {run.name!r} has {len(run.hosts)} hosts, more than the {MAX_HOSTS_PER_REQUEST} analysed in one"
            f" request; ask for one host at a time (hosts: {', '.join(sorted(run.hosts)[:10])}, ...)"
        )
