"""The buffers route's arguments, declared once in the schema (`BuffersArgs`): the route takes those and only those,
parses each as its declaration says, the queries take each by its name, and a standalone page answers all but where a
page is found."""

from __future__ import annotations

import inspect
from typing import Annotated, Literal, TypedDict

import pytest
from werkzeug import Request

from tb_leakfinder.analyses.buffer_paging import MAX_PAGE, query_buffers
from tb_leakfinder.engine import queries
from tb_leakfinder.errors import BadArgumentError
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.views.route_args import (
    BUFFERS_ARGS,
    INT64_MAX,
    MAX_ARG_CHARS,
    PAGE_ARGS,
    ROUTE_ARGS,
    WHERE_ARGS,
    arg_parsers,
    parsed_args,
)
from tb_leakfinder.views.standalone_page import IGNORED_ARGS
from tb_leakfinder.wire.schema import Bounds, BuffersArgs
from tests.support.demo import demo_xplane


def test_the_routes_arguments_are_the_schemas_in_order():
    assert ROUTE_ARGS["/buffers"] == BUFFERS_ARGS == tuple(BuffersArgs.__annotations__)
    assert BuffersArgs.__required_keys__ == {"run"}
    # What a page of them is asked for by, past the allocator it is found at: the parameters of both queries.
    which_page = [a for a in BUFFERS_ARGS if a not in WHERE_ARGS]
    assert list(inspect.signature(queries.buffers).parameters)[1:] == which_page
    assert list(inspect.signature(query_buffers).parameters)[1:] == which_page
    assert IGNORED_ARGS["buffers"] == tuple(which_page)


def test_the_route_takes_every_declared_argument_and_refuses_another(tmp_path):
    client, _ = make_client(str(demo_xplane("tf_leak").parents[3]), leakfinder_cache_dir=str(tmp_path / "cache"))
    runs = client.get(f"{PREFIX}/runs").get_json()["runs"]
    run = runs[0]["run"]
    given = {
        "run": run,
        "host": runs[0]["hosts"][0],
        "offset": 0,
        "limit": 5,
        "sort": "alloc_time_ps",
        "order": "asc",
        "status": "never_freed",
        "start_ps": 0,
        "end_ps": 1 << 62,
    }
    answer = client.get(f"{PREFIX}/buffers", query_string=given)
    assert answer.status_code == 200, answer.get_data()
    assert set(given) <= set(BUFFERS_ARGS)
    refused = client.get(f"{PREFIX}/buffers", query_string={**given, "group": 0})
    assert refused.status_code == 400 and "this route takes: " + ", ".join(BUFFERS_ARGS) in refused.get_json()["error"]


def _request(**args: object) -> Request:
    return Request.from_values(query_string={k: str(v) for k, v in args.items()})


def _refusal(parsers, **args: object) -> str:
    with pytest.raises(BadArgumentError) as refused:
        parsed_args(_request(**args), parsers)
    return refused.value.message


def test_each_page_argument_is_parsed_as_the_schema_declares_it():
    assert list(PAGE_ARGS) == [a for a in BUFFERS_ARGS if a not in WHERE_ARGS]
    assert parsed_args(_request(), PAGE_ARGS) == {}  # each not given takes the query's default
    assert parsed_args(_request(offset="", sort=""), PAGE_ARGS) == {}
    given = {"offset": 7, "limit": MAX_PAGE, "sort": "alloc_time_ps", "order": "asc", "family": 0, "status": "freed"}
    given |= {"start_ps": -5, "end_ps": INT64_MAX, "program": "jit_f(1)\x00" + "p" * MAX_ARG_CHARS, "allocation": 3}
    assert parsed_args(_request(**given), PAGE_ARGS) == given
    assert _refusal(PAGE_ARGS, limit=0) == f"limit must be between 1 and {MAX_PAGE}, not 0"
    assert _refusal(PAGE_ARGS, limit=MAX_PAGE + 1) == f"limit must be between 1 and {MAX_PAGE}, not {MAX_PAGE + 1}"
    for name in ("offset", "family", "allocation"):
        assert _refusal(PAGE_ARGS, **{name: -1}) == f"{name} must be between 0 and {INT64_MAX}, not -1"
    assert _refusal(PAGE_ARGS, start_ps="1.5") == "start_ps must be an integer, not '1.5'"
    assert _refusal(PAGE_ARGS, end_ps=1 << 63) == f"end_ps must be between {-(1 << 63)} and {INT64_MAX}, not {1 << 63}"
    # A choice of strings is typed by a user; a program is named by the profile, whatever its bytes or length.
    assert _refusal(PAGE_ARGS, sort="b\x00") == "sort must not contain NUL bytes"
    too_long = "d" * (MAX_ARG_CHARS + 1)
    assert (
        _refusal(PAGE_ARGS, order=too_long) == f"order is {MAX_ARG_CHARS + 1} characters long, over the limit of {MAX_ARG_CHARS}"
    )


class _NewArgs(TypedDict, total=False):
    run: Annotated[str, "the run"]
    steps: Annotated[int, "a new bounded argument", Bounds(2, 9)]
    side: Annotated[Literal["a", "b"], "a new choice"]
    label: Annotated[str, "a new name"]


def test_an_argument_added_to_a_declaration_is_parsed_by_that_edit_alone():
    parsers = arg_parsers(_NewArgs, ("run",))
    assert list(parsers) == ["steps", "side", "label"]
    assert parsed_args(_request(steps=9, side="b", label="x" * 2000), parsers) == {"steps": 9, "side": "b", "label": "x" * 2000}
    assert _refusal(parsers, steps=1) == "steps must be between 2 and 9, not 1"
    assert _refusal(parsers, side="b" * 2000).startswith("side is 2000 characters long")

    class Unparsable(TypedDict):
        ratio: Annotated[float, "no parser for it"]

    with pytest.raises(TypeError, match=r"Unparsable\.ratio"):
        arg_parsers(Unparsable)
