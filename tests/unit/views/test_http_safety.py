"""HTTP safety: names are matched, never joined into paths; symlinks; headers; JSON errors; argument checks."""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
from pathlib import Path

import pytest

from tb_leakfinder.read import discovery
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session
from tb_leakfinder.views.route_args import MAX_ARG_CHARS
from tests.support.names import Names, local_logdir, memory_logdir, remove_memory_logdir

SESSION = "2026_11_29_09_31_25"
SECRET = b"not a profile: private data outside the logdir"


def _profile(host: str = "host0") -> ProfileBuilder:
    builder = ProfileBuilder(host)
    for step in range(4):
        builder.step(step, step * 1000, step * 1000 + 999)
        builder.alloc(step * 1000 + 10, 0x1000 + step * 0x100, 1024, allocator="GPU_0_bfc")
    return builder


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict:
    """A logdir with one real run, and outside it a secret file and a run kept elsewhere."""
    root = tmp_path_factory.mktemp("site")
    logdir, elsewhere = root / "logdir", root / "elsewhere"
    write_session(logdir, "train", SESSION, {"host0": _profile()})
    write_session(elsewhere, "kept", SESSION, {"host0": _profile()})
    (root / "secret.xplane.pb").write_bytes(SECRET)
    (root / "secret").mkdir()
    (root / "secret" / "host0.xplane.pb").write_bytes(SECRET)
    os.symlink(elsewhere / "kept", logdir / "linked")  # a run kept elsewhere, as people build logdirs
    client, _ = make_client(str(logdir))
    return {"root": root, "logdir": logdir, "client": client}


def _get(client, route: str, raw_query: str):
    response = client.get(f"{PREFIX}/{route}?{raw_query}")
    return response, response.get_data(as_text=True)


def _assert_json_error(response, text: str, statuses: tuple[int, ...]) -> dict:
    assert response.status_code in statuses, (response.status_code, text)
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    body = json.loads(text)
    assert set(body) == {"error"} and body["error"]
    assert "Traceback" not in text and SECRET.decode() not in text
    return body


def _traversals(site: dict) -> list[str]:
    """Hostile values of a name, already percent-encoded for the query string."""
    root, logdir = site["root"], site["logdir"]
    plain = [
        "../secret",
        "../../secret",
        "../secret/host0",
        "train/../../secret",
        f"train/{SESSION}/../../../../secret",
        "/etc/passwd",
        str(root / "secret"),
        str(logdir / "train" / "plugins" / "profile" / SESSION),
        str(root / "elsewhere" / "kept" / "plugins" / "profile" / SESSION),
        "..\\..\\secret",
        "file:///etc/passwd",
        "~/.ssh/id_rsa",
        ".",
        "..",
    ]
    encoded = [urllib.parse.quote(v, safe="") for v in plain]
    every_char = [urllib.parse.quote(v, safe="").replace(".", "%2e").replace("/", "%2F") for v in ("../secret", "/etc/passwd")]
    double = [urllib.parse.quote(urllib.parse.quote(v, safe=""), safe="") for v in ("../secret", "/etc/passwd", "../../")]
    overlong = ["%c0%ae%c0%ae%c0%afsecret", "%e0%80%ae%e0%80%ae/secret"]  # invalid UTF-8 spellings of "../"
    return encoded + every_char + double + overlong


NUL_VALUES = ["%00", "..%00", f"train%2F{SESSION}%00", "train%2F" + SESSION + "%00..%2F..%2Fsecret"]

ROUTES_AND_ARGS = [
    ("report", "run", ""),
    ("report", "host", f"run=train%2F{SESSION}&"),
    ("timeline", "run", ""),
    ("timeline", "host", f"run=train%2F{SESSION}&"),
    ("timeline", "allocator", f"run=train%2F{SESSION}&"),
    ("buffers", "run", ""),
    ("buffers", "host", f"run=train%2F{SESSION}&"),
    ("buffers", "allocator", f"run=train%2F{SESSION}&"),
    ("module", "run", "module=m&"),
    ("module", "host", f"run=train%2F{SESSION}&module=m&"),
    ("module", "module", f"run=train%2F{SESSION}&"),
    ("compare", "run_a", f"run_b=train%2F{SESSION}&"),
    ("compare", "run_b", f"run_a=train%2F{SESSION}&"),
    ("compare", "host_a", f"run_a=train%2F{SESSION}&run_b=train%2F{SESSION}&"),
    ("compare", "host_b", f"run_a=train%2F{SESSION}&run_b=train%2F{SESSION}&"),
]


@pytest.mark.parametrize(("route", "arg", "prefix"), ROUTES_AND_ARGS)
def test_traversal_attempts_are_refused(site, route, arg, prefix):
    for value in _traversals(site):
        response, text = _get(site["client"], route, f"{prefix}{arg}={value}")
        body = _assert_json_error(response, text, (404,))
        assert "no " in body["error"]


@pytest.mark.parametrize(("route", "arg", "prefix"), ROUTES_AND_ARGS)
def test_nul_bytes_are_refused(site, route, arg, prefix):
    for value in NUL_VALUES:
        response, text = _get(site["client"], route, f"{prefix}{arg}={value}")
        body = _assert_json_error(response, text, (400,))
        assert "NUL" in body["error"]


def test_valid_names_still_work(site):
    for route in ("report", "timeline", "buffers"):
        response, text = _get(site["client"], route, f"run=train%2F{SESSION}&host=host0")
        assert response.status_code == 200, text


def test_symlinked_run_is_followed_and_only_by_its_listed_name(site):
    client = site["client"]
    runs = json.loads(client.get(f"{PREFIX}/runs").get_data(as_text=True))["runs"]
    assert {r["run"] for r in runs} == {f"train/{SESSION}", f"linked/{SESSION}"}
    response, text = _get(client, "report", f"run=linked%2F{SESSION}")
    assert response.status_code == 200, text
    assert json.loads(text)["runs"][0]["run"] == f"linked/{SESSION}"
    # The symlink's target is reachable only through the name discovery listed.
    for name in (f"kept/{SESSION}", str(site["root"] / "elsewhere" / "kept"), f"../elsewhere/kept/{SESSION}"):
        response, text = _get(client, "report", "run=" + urllib.parse.quote(name, safe=""))
        _assert_json_error(response, text, (404,))


def test_symlink_to_a_file_outside_is_read_as_a_profile_and_refused_as_one(tmp_path):
    logdir = tmp_path / "logdir"
    session = logdir / "run" / "plugins" / "profile" / SESSION
    session.mkdir(parents=True)
    (tmp_path / "passwd").write_bytes(SECRET)
    os.symlink(tmp_path / "passwd", session / "evil.xplane.pb")
    client, _ = make_client(str(logdir))
    response, text = _get(client, "report", f"run=run%2F{SESSION}")
    body = _assert_json_error(response, text, (422,))
    assert "evil.xplane.pb" in body["error"] and "corrupt" in body["error"]


def _discover_within(logdir: Path, seconds: float) -> list[discovery.Run]:
    found: list[list[discovery.Run]] = []
    worker = threading.Thread(target=lambda: found.append(discovery.discover(str(logdir))), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "discovery did not terminate"
    return found[0]


def test_discovery_terminates_on_symlink_cycles(tmp_path):
    logdir = tmp_path / "logdir"
    write_session(logdir, "a", SESSION, {"host0": _profile()})
    os.symlink(logdir, logdir / "a" / "up")  # a cycle back to the root
    os.symlink(logdir / "a", logdir / "a" / "self")  # a folder containing itself
    (logdir / "b").mkdir()
    os.symlink(logdir / "c", logdir / "b" / "to_c")  # a two-folder cycle
    (logdir / "c").mkdir()
    os.symlink(logdir / "b", logdir / "c" / "to_b")
    os.symlink(logdir / "missing", logdir / "dangling")
    runs = _discover_within(logdir, 30)
    assert [r.name for r in runs] == [f"a/{SESSION}"]


def test_discovery_terminates_on_a_cycle_inside_a_session_folder(tmp_path):
    logdir = tmp_path / "logdir"
    write_session(logdir, "a", SESSION, {"host0": _profile()})
    session = logdir / "a" / "plugins" / "profile" / SESSION
    os.symlink(session, session / "loop")
    os.symlink(logdir / "a" / "plugins", logdir / "a" / "plugins" / "profile" / "again")
    names = [r.name for r in _discover_within(logdir, 30)]
    assert f"a/{SESSION}" in names


def test_every_json_route_sets_type_and_nosniff(site):
    client = site["client"]
    queries = {
        "runs": "",
        "report": f"run=train%2F{SESSION}",
        "timeline": f"run=train%2F{SESSION}",
        "buffers": f"run=train%2F{SESSION}",
        "module": f"run=train%2F{SESSION}&module=m(1)",
        "compare": f"run_a=train%2F{SESSION}&run_b=linked%2F{SESSION}",
    }
    for route, query in queries.items():
        for q in (query, query + "&bogus=1"):
            response = client.get(f"{PREFIX}/{route}?{q}")
            assert response.headers["Content-Type"].startswith("application/json"), route
            assert response.headers["X-Content-Type-Options"] == "nosniff", route
            json.loads(response.get_data(as_text=True))
    script = client.get(f"{PREFIX}/index.js")
    assert script.status_code == 200
    assert script.headers["Content-Type"].startswith("application/javascript")
    assert script.headers["X-Content-Type-Options"] == "nosniff"


BAD_ARGS = [
    ("runs", "run=x"),
    ("report", ""),
    ("report", f"run=train%2F{SESSION}&run=other"),
    ("report", f"run=train%2F{SESSION}&hots=host0"),
    ("report", "run=" + "a" * 5000),
    ("timeline", f"run=train%2F{SESSION}&points=abc"),
    ("timeline", f"run=train%2F{SESSION}&points=7"),
    ("timeline", f"run=train%2F{SESSION}&points=99999999999999999999999999"),
    ("timeline", f"run=train%2F{SESSION}&start_ps=1e30"),
    ("timeline", f"run=train%2F{SESSION}&start_ps=100000000000000000000000"),
    ("timeline", f"run=train%2F{SESSION}&end_ps=-100000000000000000000000"),
    ("timeline", f"run=train%2F{SESSION}&family=-1"),
    ("timeline", f"run=train%2F{SESSION}&points=" + "9" * 5000),
    ("buffers", f"run=train%2F{SESSION}&offset=-1"),
    ("buffers", f"run=train%2F{SESSION}&limit=0"),
    ("buffers", f"run=train%2F{SESSION}&limit=5001"),
    ("buffers", f"run=train%2F{SESSION}&sort=__class__"),
    ("buffers", f"run=train%2F{SESSION}&order=sideways"),
    ("buffers", f"run=train%2F{SESSION}&status=%3Cscript%3E"),
    ("buffers", f"run=train%2F{SESSION}&offset=0x10"),
    ("buffers", f"run=train%2F{SESSION}&start_ps=%20"),
    ("module", f"run=train%2F{SESSION}"),
    ("module", f"run=train%2F{SESSION}&module=m(1)&points=3"),
    ("module", f"run=train%2F{SESSION}&module=m(1)&memory_space=-1"),
    ("compare", f"run_a=train%2F{SESSION}"),
    ("compare", f"run_a=train%2F{SESSION}&run_b=linked%2F{SESSION}&run=x"),
]


@pytest.mark.parametrize(("route", "query"), BAD_ARGS)
def test_malformed_arguments_get_400(site, route, query):
    response, text = _get(site["client"], route, query)
    body = _assert_json_error(response, text, (400,))
    assert len(body["error"]) < 600


def test_extreme_but_valid_integers_answer(site):
    for query in ("start_ps=-9223372036854775808&end_ps=9223372036854775807", "offset=9223372036854775807"):
        response, text = _get(site["client"], "buffers", f"run=train%2F{SESSION}&{query}")
        assert response.status_code == 200, text
    response, text = _get(site["client"], "timeline", f"run=train%2F{SESSION}&start_ps=9223372036854775807")
    assert response.status_code == 200, text


def test_an_internal_error_is_json_without_traceback(site, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("kaboom in /secret/path")

    client, plugin = make_client(str(site["logdir"]))
    monkeypatch.setattr(plugin.engine, "run_report", explode)
    response, text = _get(client, "report", f"run=train%2F{SESSION}")
    body = _assert_json_error(response, text, (500,))
    assert "kaboom" not in text and "/secret/path" not in text
    assert "internal error" in body["error"]


@pytest.fixture(scope="module", params=["memory", "local"])
def named(request, tmp_path_factory) -> Names:
    """A run whose names are 5,000 characters and hold NUL (memory://), or as long as a local path allows."""
    if request.param == "local":
        return local_logdir(str(tmp_path_factory.mktemp("names")))
    names = memory_logdir("http_names")
    request.addfinalizer(lambda: remove_memory_logdir("http_names"))
    return names


def _ok(client, route: str, **args: str) -> dict:
    response = client.get(f"{PREFIX}/{route}?{urllib.parse.urlencode(args)}")
    text = response.get_data(as_text=True)
    assert response.status_code == 200, (route, text[:300])
    return json.loads(text)


def test_names_discovery_lists_work_in_every_route_whatever_their_length_or_bytes(named):
    """The limits are for what a user types: a run, host, allocator or module the profiles name is found."""
    client, _ = make_client(named.logdir)
    (run,) = _ok(client, "runs")["runs"]
    assert run == {"run": named.run, "hosts": [named.host], "errors": []}
    name, host = run["run"], named.host
    (listed,) = _ok(client, "report", run=name, host=host)["runs"][0]["hosts"]
    (allocator,) = listed["allocators"]
    (module,) = listed["modules"]
    assert (listed["host"], allocator["allocator"], module["name"]) == (host, named.allocator, named.module)
    assert _ok(client, "report", run=name)["runs"][0]["run"] == name
    assert _ok(client, "overview", run=name)["rows"][0]["allocator"] == named.allocator
    where = {"run": name, "host": host, "allocator": named.allocator}
    assert _ok(client, "timeline", **where)["allocator"] == named.allocator
    assert _ok(client, "timeline", **where, family="0")["family"] == 0
    assert _ok(client, "buffers", **where)["total"] > 0
    assert _ok(client, "module", run=name, host=host, module=named.module)["name"] == named.module
    assert _ok(client, "compare", run_a=name, run_b=name, host_a=host, host_b=host)["hosts"][0]["host_a"] == host
    # One character more is no discovered name: a 400 when it breaks what a user may type, else a 404.
    in_module = {"run": name, "host": host, "module": named.module}
    for route, args, arg in (
        ("timeline", where, "run"),
        ("timeline", where, "host"),
        ("timeline", where, "allocator"),
        ("module", in_module, "module"),
    ):
        response = client.get(f"{PREFIX}/{route}?{urllib.parse.urlencode({**args, arg: args[arg] + 'x'})}")
        typed = "\x00" not in args[arg] and len(args[arg]) < MAX_ARG_CHARS
        _assert_json_error(response, response.get_data(as_text=True), (404 if typed else 400,))
