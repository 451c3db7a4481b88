"""engine/queries.py: the one query layer; each route's answer is its query's, asked with the same found arguments."""

from __future__ import annotations

import json
import math

import pytest

from tb_leakfinder.engine import queries
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.errors import NotFoundError
from tb_leakfinder.testing.history_runs import slow_leak_run
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tests.support.demo import DEMO_LOGS


def _wire(answer: object) -> object:
    """An answer as the route sends it: JSON, non-finite numbers as TensorBoard's strings."""

    def finite(value: object) -> object:
        if isinstance(value, float) and not math.isfinite(value):
            return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        return value

    return json.loads(json.dumps(answer), parse_constant=lambda name: finite(float(name)))


@pytest.fixture(scope="module")
def served():
    """(engine, client) on the demo logdir: the queries asked directly, and the routes through TensorBoard."""
    client, _ = make_client(str(DEMO_LOGS))
    return Engine.for_path(str(DEMO_LOGS)), client


def _run(engine: Engine, tb_run: str):
    return next(r for r in engine.runs() if r.name.startswith(tb_run + "/"))


def _route(client, route: str, **args: object) -> object:
    response = client.get(f"{PREFIX}/{route}", query_string={k: v for k, v in args.items() if v is not None})
    assert response.status_code == 200, response.get_data(as_text=True)
    return json.loads(response.get_data(as_text=True))


def test_each_route_answers_with_its_query(served):
    engine, client = served
    assert _route(client, "runs") == _wire(queries.runs(engine))
    for run in engine.runs():
        assert _route(client, "report", run=run.name) == _wire(queries.report(engine, run))
        assert _route(client, "overview", run=run.name) == _wire(queries.overview(engine, run))
        host = queries.host(engine, run, None)
        for a in host.analysis.allocators:
            at = queries.allocator(host, a.memory_id)
            for family in (None, 0):
                asked = {"run": run.name, "host": host.host, "allocator": a.memory_id, "family": family}
                assert _route(client, "timeline", points=500, **asked) == _wire(queries.timeline(at, 500, family=family))
                assert _route(client, "buffers", limit=40, **asked) == _wire(queries.buffers(at, limit=40, family=family))
        for m in queries.report(engine, run)["runs"][0]["hosts"][0]["modules"]:
            answer = queries.module(queries.module_at(host, m["name"]))
            assert _route(client, "module", run=run.name, module=m["name"]) == _wire(answer)
    leak, fixed = _run(engine, "tf_leak"), _run(engine, "tf_fixed")
    comparison = _route(client, "compare", run_a=fixed.name, run_b=leak.name)
    assert comparison == _wire(queries.diff(engine, fixed, leak))
    assert comparison["regression"]  # the leak is new in B


def test_a_report_of_every_run_carries_the_histories_and_one_runs_none(tmp_path):
    slow_leak_run(tmp_path, "job", captures=4)
    engine = Engine.for_path(str(tmp_path))
    whole = queries.report(engine)
    assert [h["tb_run"] for h in whole["histories"]] == ["job"]
    assert (
        whole["histories"][0] == queries.history(engine, "job") == _route(make_client(str(tmp_path))[0], "history", tb_run="job")
    )
    assert whole == engine.report()  # the engine's report is this one
    one = queries.report(engine, engine.runs()[0])
    assert one["histories"] == [] and [r["run"] for r in one["runs"]] == [engine.runs()[0].name]


def test_an_allocator_is_found_by_memory_id_or_label_and_an_unknown_name_says_the_choices(served):
    engine, _ = served
    host = queries.host(engine, _run(engine, "tf_leak"), None)
    (a,) = host.analysis.allocators
    assert queries.allocator(host, a.memory_id).allocator is queries.allocator(host, a.label).allocator
    assert queries.allocator(host, None).allocator is a  # the largest device memory
    with pytest.raises(NotFoundError, match=f"no allocator 'nope'; its allocators are .*{a.memory_id}"):
        queries.allocator(host, "nope")
    with pytest.raises(NotFoundError, match="no host 'nope'"):
        queries.host(engine, _run(engine, "tf_leak"), "nope")


def test_every_page_of_buffers_once_the_largest_first(served):
    engine, _ = served
    at = queries.allocator(queries.host(engine, _run(engine, "tf_leak"), None), None)
    pages = list(queries.buffer_pages(at))
    ids = [b["id"] for page in pages for b in page["buffers"]]
    assert len(ids) == len(set(ids)) == pages[0]["total"] > 0
    whole = queries.buffers(at, limit=len(ids))
    assert [b["id"] for b in whole["buffers"]] == ids


def test_a_module_that_a_host_lacks_is_not_found(served):
    engine, _ = served
    jax = queries.host(engine, _run(engine, "jax_clean"), None)
    assert queries.module_at(jax, "jit_multiply(10)").module is not None
    with pytest.raises(NotFoundError, match="jit_nothing"):
        queries.module_at(jax, "jit_nothing(1)")
