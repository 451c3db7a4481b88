"""An XSpace's wall-clock start: the Task Environment plane's profile_start_time plus the first line's offset."""

from __future__ import annotations

import calendar
import time

import pytest

from tb_leakfinder import compiled
from tb_leakfinder.read.formats.xplane import clock, reader
from tb_leakfinder.testing.xspace_builder import ProfileBuilder
from tests.support.demo import DEMO_LOGS

JAX_GPU = DEMO_LOGS.parent.parent / "shared" / "profiles" / "jax_gpu"


def real_sessions() -> list:
    found = sorted(DEMO_LOGS.glob("*/plugins/profile/*/*.xplane.pb")) + sorted(JAX_GPU.glob("*/plugins/profile/*/*.xplane.pb"))
    assert len(found) >= 4
    return found


@pytest.mark.parametrize("path", real_sessions(), ids=lambda p: p.parent.name)
def test_a_real_capture_starts_when_its_events_do(path, monkeypatch):
    """The demo sessions are named by XProf at about the second it began them (this machine's local time, UTC
    here): the profile's own start is within a second of it. The shared JAX GPU sessions carry other names."""
    data = path.read_bytes()
    fast = reader.read_host(str(path), "h").start_time_ns
    monkeypatch.setenv(compiled.PURE_PYTHON_ENV, "1")
    assert reader.read_host(str(path), "h").start_time_ns == fast
    assert fast is not None and fast >= clock.profile_start_ns(data)  # its first line begins a few µs after the start
    assert fast - clock.profile_start_ns(data) < 1_000_000
    if path.is_relative_to(DEMO_LOGS):
        named = calendar.timegm(time.strptime(path.parent.name, "%Y_%m_%d_%H_%M_%S"))
        assert abs(fast / 1e9 - named) < 1.5


def test_a_built_profile_starts_at_its_task_environment_start_and_without_one_has_no_time():
    b = ProfileBuilder("h", start_time_ns=1_795_946_635_387_916_431)
    b.step(0, 0, 5_000_000)
    b.alloc(1000, 0x1000, 4096, op="Mul")
    assert reader.decode(b.to_bytes(), "h", "/x/h.xplane.pb").start_time_ns == 1_795_946_635_387_916_431
    plain = ProfileBuilder("h")
    plain.step(0, 0, 5_000_000)
    plain.alloc(1000, 0x1000, 4096, op="Mul")
    assert reader.decode(plain.to_bytes(), "h", "/x/h.xplane.pb").start_time_ns is None


def test_a_start_before_2000_or_a_cut_off_plane_is_no_time():
    early = ProfileBuilder("h", start_time_ns=5_000_000_000)  # seconds since a boot, not the epoch
    early.step(0, 0, 5_000)
    assert clock.profile_start_ns(early.to_bytes()) is None
    whole = ProfileBuilder("h", start_time_ns=1_795_946_635_387_916_431)
    whole.step(0, 0, 5_000)
    data = whole.to_bytes()
    assert clock.profile_start_ns(data) == 1_795_946_635_387_916_431
    plane = data.index(b"Task Environment")
    for cut in (plane + 20, plane + 40, len(data) - len(b"h") - 8, 1):
        assert clock.profile_start_ns(data[:cut]) is None


def test_a_damaged_task_environment_plane_is_no_time():
    b = ProfileBuilder("h", start_time_ns=1_795_946_635_387_916_431)
    b.step(0, 0, 5_000)
    data = bytearray(b.to_bytes())
    stats = data.index(b"profile_start_time") + len(b"profile_start_time")
    data[stats] = 0x0F  # a field of wire type 7, which no message has
    assert clock.profile_start_ns(bytes(data)) is None
