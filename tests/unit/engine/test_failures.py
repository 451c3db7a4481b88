"""engine.py: a file that cannot be read is an error like any other, kept like a success (issue 31)."""

from __future__ import annotations

import pytest

from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.pprof import reader as pprof_reader
from tb_leakfinder.store.disk_cache import DiskCache
from tb_leakfinder.testing import hostile
from tb_leakfinder.testing.pprof_builder import PprofBuilder


def test_an_unreadable_file_is_read_once_then_remembered_in_memory_and_on_disk(tmp_path):
    (tmp_path / "logs").mkdir()
    path = hostile.long_integer(tmp_path / "logs" / "w.pt.trace.json")
    disk = DiskCache(str(tmp_path / "cache"))
    engine = Engine.for_path(str(path), disk=disk)
    for _ in range(3):
        with pytest.raises(LeakfinderError) as err:
            engine.report()
        assert err.value.message.startswith(f"{path}: not a readable PyTorch profiler trace")
    assert engine.analyses == 1
    restarted = Engine.for_path(str(path), disk=DiskCache(str(tmp_path / "cache")))
    with pytest.raises(LeakfinderError) as again:
        restarted.report()
    assert again.value.message == err.value.message and restarted.analyses == 0


@pytest.mark.parametrize("raised", [MemoryError(), RecursionError("maximum recursion depth exceeded"), OverflowError("x")])
def test_what_a_parser_raises_on_a_hostile_file_is_the_projects_error_naming_it(tmp_path, monkeypatch, raised):
    path = PprofBuilder().write(tmp_path / "m.prof")

    def parse(data: bytes, where: str) -> None:
        raise raised

    monkeypatch.setattr(pprof_reader, "parse_profile", parse)
    engine = Engine.for_path(str(path))
    with pytest.raises(LeakfinderError) as err:
        engine.report()
    assert err.value.message.startswith(f"{path}: not a readable pprof profile ({type(raised).__name__}")
    assert err.value.source == str(path)
    with pytest.raises(LeakfinderError):
        engine.report()
    assert engine.analyses == 1


def test_a_bug_outside_the_parsers_stays_a_bug(tmp_path, monkeypatch):
    path = PprofBuilder().write(tmp_path / "m.prof")

    def parse(data: bytes, where: str) -> None:
        raise KeyError("a bug, not a hostile file")

    monkeypatch.setattr(pprof_reader, "parse_profile", parse)
    with pytest.raises(KeyError):
        Engine.for_path(str(path)).report()
