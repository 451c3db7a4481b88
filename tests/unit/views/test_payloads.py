"""Responses stay bounded whatever the event count: a 1,000,000-event run through TensorBoard's WSGI app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_leakfinder.testing.plugin_client import PREFIX, make_client
from tb_leakfinder.testing.xspace_builder import write_training

ONE_MB = 1_000_000
RUN = "big/session"

# Every test reads one run of a million events, built once for the module: seconds of CPU.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict]:
    logdir = tmp_path_factory.mktemp("payloads")
    folder = Path(logdir) / "big" / "plugins" / "profile" / "session"
    folder.mkdir(parents=True)
    planted = write_training(folder / "host0.xplane.pb", num_events=1_000_000, steps=100, allocators=("GPU_0_bfc", "GPU_1_bfc"))
    client, _ = make_client(str(logdir))
    return client, planted


def _get(client, route: str, **args: object) -> tuple[int, bytes, dict]:
    response = client.get(f"{PREFIX}/{route}", query_string={"run": RUN, **args})
    raw = response.get_data()
    return response.status_code, raw, json.loads(raw)


def test_timeline_of_a_million_events_is_under_a_megabyte(big):
    client, planted = big
    status, raw, body = _get(client, "timeline", allocator="GPU_0_bfc")
    assert status == 200, body
    assert body["total_events"] > 400_000
    assert len(raw) < ONE_MB
    assert 8 <= len(body["time_ps"]) <= 1000
    # The downsampled curve keeps the peak.
    assert max(body["heap_bytes"]) == body["peak"]["bytes"] == planted["peak_bytes_in_use"]["GPU_0_bfc"]


@pytest.mark.parametrize("points", [8, 500, 5000, 20000])
def test_timeline_points_bound_the_payload(big, points):
    client, _ = big
    status, raw, body = _get(client, "timeline", allocator="GPU_1_bfc", points=points)
    assert status == 200, body
    assert len(body["time_ps"]) <= points
    assert all(len(body[k]) == len(body["time_ps"]) for k in ("heap_bytes", "stack_bytes", "fragmentation", "never_freed_bytes"))
    assert len(raw) < 100 * points + 20_000  # bytes per point, whatever the event count


def test_points_past_the_limit_are_refused(big):
    client, _ = big
    status, _, body = _get(client, "timeline", allocator="GPU_1_bfc", points=20001)
    assert status == 400 and "points" in body["error"]


def test_buffer_pages_are_bounded(big):
    client, _ = big
    status, raw, body = _get(client, "buffers", allocator="GPU_0_bfc")
    assert status == 200, body
    assert body["total"] > 200_000 and len(body["buffers"]) == 100 and len(raw) < 100_000
    status, raw, body = _get(client, "buffers", allocator="GPU_0_bfc", limit=5000, sort="lifetime_ps", offset=1000)
    assert status == 200 and len(body["buffers"]) == 5000 and len(raw) < 2 * ONE_MB
    status, _, _ = _get(client, "buffers", allocator="GPU_0_bfc", limit=5001)
    assert status == 400


def test_report_of_a_million_events_is_small_and_finds_the_leak(big):
    client, planted = big
    status, raw, body = _get(client, "report")
    assert status == 200, body
    assert len(raw) < ONE_MB
    (host,) = body["runs"][0]["hosts"]
    leaky = next(a for a in host["allocators"] if a["allocator"] == planted["leak"]["allocator"])
    top = leaky["families"][0]
    assert leaky["verdict"] == "leak" and top["kind"] == "growing"
    assert (top["op"], top["shape"], top["count"]) == (planted["leak"]["op"], planted["leak"]["shape"], planted["leak"]["count"])
