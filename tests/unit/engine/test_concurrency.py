"""Concurrency and change: one computation for many cold requests; replaced and half-written files."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from tb_leakfinder.read.formats.xplane import reader as xplane_reader
from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tests.support.demo import demo_xplane

RUN, SESSION, HOST = "train", "2026_11_29_09_31_25", "host0"
CONCURRENT = 16


@pytest.fixture(scope="module")
def leak_bytes() -> bytes:
    return demo_xplane("tf_leak").read_bytes()


@pytest.fixture(scope="module")
def fixed_bytes() -> bytes:
    return demo_xplane("tf_fixed").read_bytes()


def _session(tmp_path):
    folder = tmp_path / RUN / "plugins" / "profile" / SESSION
    folder.mkdir(parents=True)
    return folder / f"{HOST}.xplane.pb"


def _report(client) -> tuple[int, dict]:
    response = client.get(f"{PREFIX}/report", query_string={"run": f"{RUN}/{SESSION}"})
    return response.status_code, json.loads(response.get_data(as_text=True))


def _replace(path, data: bytes) -> None:
    """As a careful writer does: a new file moved over the old one."""
    part = path.with_name(path.name + ".part")
    part.write_bytes(data)
    os.replace(part, path)


def test_concurrent_cold_requests_share_one_computation(tmp_path, monkeypatch, leak_bytes):
    path = _session(tmp_path)
    path.write_bytes(leak_bytes)
    expected_status, expected = _report(make_client(str(tmp_path))[0])
    assert expected_status == 200 and expected["runs"][0]["verdict"] == "leak"

    client, plugin = make_client(str(tmp_path))
    read_host = xplane_reader.read_host
    in_flight = threading.Event()

    def slow_read_host(*args):
        in_flight.set()
        time.sleep(0.5)  # long enough that every request arrives while the first one computes
        return read_host(*args)

    monkeypatch.setattr(xplane_reader, "read_host", slow_read_host)
    start = threading.Barrier(CONCURRENT)
    answers: list[tuple[int, dict]] = []

    def request() -> None:
        start.wait()
        answers.append(_report(client))

    threads = [threading.Thread(target=request) for _ in range(CONCURRENT)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert in_flight.is_set()
    assert len(answers) == CONCURRENT
    assert all(answer == (200, expected) for answer in answers)
    assert plugin.engine.computations == 1


def test_a_replaced_profile_is_picked_up_on_the_next_request(tmp_path, leak_bytes, fixed_bytes):
    path = _session(tmp_path)
    path.write_bytes(leak_bytes)
    client, plugin = make_client(str(tmp_path))
    assert _report(client)[1]["runs"][0]["verdict"] == "leak"
    assert _report(client)[1]["runs"][0]["verdict"] == "leak"
    assert plugin.engine.computations == 1  # the second answer came from the cache
    _replace(path, fixed_bytes)
    status, body = _report(client)
    assert status == 200 and body["runs"][0]["verdict"] == "no_leak"
    assert plugin.engine.computations == 2


def test_a_profile_replaced_while_being_analysed(tmp_path, monkeypatch, leak_bytes, fixed_bytes):
    """The request being served answers for what it read; the next one sees the new file."""
    path = _session(tmp_path)
    path.write_bytes(leak_bytes)
    client, _ = make_client(str(tmp_path))
    read_host = xplane_reader.read_host

    def read_then_replace(*args):
        profile = read_host(*args)
        _replace(path, fixed_bytes)
        return profile

    monkeypatch.setattr(xplane_reader, "read_host", read_then_replace)
    first = _report(client)
    monkeypatch.setattr(xplane_reader, "read_host", read_host)
    second = _report(client)
    assert (first[0], first[1]["runs"][0]["verdict"]) == (200, "leak")
    assert (second[0], second[1]["runs"][0]["verdict"]) == (200, "no_leak")


def test_a_half_written_profile_is_incomplete_then_complete(tmp_path, leak_bytes):
    path = _session(tmp_path)
    path.write_bytes(b"")  # the writer has just created it
    client, _ = make_client(str(tmp_path))
    status, body = _report(client)
    assert status == 422 and str(path) in body["error"] and "empty" in body["error"]
    with open(path, "ab") as out:
        for cut in (len(leak_bytes) // 3, 2 * len(leak_bytes) // 3):
            out.write(leak_bytes[out.tell() : cut])
            out.flush()
            status, body = _report(client)
            assert status == 422, body
            assert str(path) in body["error"] and "incomplete" in body["error"]
        out.write(leak_bytes[out.tell() :])
    status, body = _report(client)
    assert status == 200 and body["runs"][0]["verdict"] == "leak"
    fresh = _report(make_client(str(tmp_path))[0])
    assert (status, body) == fresh
