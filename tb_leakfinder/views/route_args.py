"""The routes' query arguments: which each route takes, and each checked, parsed and matched against what
discovery found, a LeakfinderError (a 4xx) when it is not. Names are looked up, never turned into paths."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from tb_leakfinder.errors import BadArgumentError, NotFoundError
from tb_leakfinder.read.discovery import Run
from tb_leakfinder.wire.schema import Bounds, BuffersArgs

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


def arg_parsers(args: type, skip: tuple[str, ...] = ()) -> dict[str, Callable[[Request], Any]]:
    """How each argument of a route's `<Route>Args` declaration but `skip` is parsed, from its declared type: an
    integer within its `Bounds`, a choice of strings as text a user types, a `str` as a name from the profile (any
    length or bytes: the query says whether it names anything). Each parser gives None when its argument is not given."""
    hints = typing.get_type_hints(args, include_extras=True)
    return {name: _parser(f"{args.__name__}.{name}", name, hint) for name, hint in hints.items() if name not in skip}


def _parser(declared: str, name: str, hint: object) -> Callable[[Request], Any]:
    kind, *meta = typing.get_args(hint) if typing.get_origin(hint) is typing.Annotated else (hint,)
    bounds = next((m for m in meta if isinstance(m, Bounds)), Bounds())

    def integer(request: Request) -> int | None:
        return int_arg(request, name, None, bounds.lo, bounds.hi)

    def typed(request: Request) -> str | None:
        return str_arg(request, name)

    def named(request: Request) -> str | None:
        return given(request, name)

    if kind is int:
        return integer
    if typing.get_origin(kind) is typing.Literal:
        return typed
    if kind is str:
        return named
    raise TypeError(f"{declared}: a query argument is an int, a str or a Literal of strings, not {kind}")


# The buffers route's arguments past where its page is found, each parsed as BuffersArgs declares it.
PAGE_ARGS = arg_parsers(BuffersArgs, WHERE_ARGS)


def parsed_args(request: Request, parsers: dict[str, Callable[[Request], Any]]) -> dict[str, Any]:
    """The arguments given, parsed (a 400 when one is not as declared); one not given is left to the query's default."""
    return {name: value for name, parse in parsers.items() if (value := parse(request)) is not None}


def check_hosts(run: Run, host: str | None) -> None:
    """A report over all hosts of a run analyses at most MAX_HOSTS_PER_REQUEST of them (the standalone page, which
    answers as the routes do, keeps to it too)."""
    if host is None and len(run.hosts) > MAX_HOSTS_PER_REQUEST:
        raise BadArgumentError(
            f"run {run.name!r} has {len(run.hosts)} hosts, more than the {MAX_HOSTS_PER_REQUEST} analysed in one"
            f" request; ask for one host at a time (hosts: {', '.join(sorted(run.hosts)[:10])}, ...)"
        )
