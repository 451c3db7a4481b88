"""The buffers route's arguments, declared once in the schema (`BuffersArgs`): the route takes those and only those,
the queries take each by its name, and a standalone page answers all but where a page is found."""

from __future__ import annotations

import inspect

from tb_leakfinder.analyses.buffer_paging import query_buffers
from tb_leakfinder.engine import queries
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.views.route_args import BUFFERS_ARGS, ROUTE_ARGS, WHERE_ARGS
from tb_leakfinder.views.standalone_page import IGNORED_ARGS
from tb_leakfinder.wire.schema import BuffersArgs
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
