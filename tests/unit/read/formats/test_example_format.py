"""Adding a format touches its folder and the registry only: the example allocation log (tests/support/
example_format), added to a copy of FORMATS, is discovered, analysed and reported with its own hints, by the API,
the CLI and the routes' report, though nothing else in tb_leakfinder names it."""

from __future__ import annotations

import json

import pytest

import tb_leakfinder
from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.read import discovery
from tb_leakfinder.read.formats import registry
from tb_leakfinder.views import cli
from tests.support.example_format.format import EXAMPLE, HINTS

MIB = 1 << 20
STEPS = 8


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setattr(registry, "FORMATS", (*registry.FORMATS, EXAMPLE))


def _leaking_log(path):
    """Each step a 4 MiB temporary, freed, and a 1 MiB buffer kept for good: a leak of 1 MiB a step."""
    rows = ["time_us,event,bytes,address,op"]
    for step in range(STEPS):
        t = 1000 * step
        rows += [
            f"{t},step,{step},0,",
            f"{t + 10},alloc,{4 * MIB},{0x9000 + step:x},matmul",
            f"{t + 20},alloc,{MIB},{0x1000 + step:x},cache_append",
            f"{t + 30},free,{4 * MIB},{0x9000 + step:x},matmul",
        ]
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_a_registered_format_gets_a_full_report_with_its_own_hints(registered, tmp_path):
    _leaking_log(tmp_path / "train" / "plugins" / "profile" / "2026_01_01" / "worker0.allocs.csv")
    report = tb_leakfinder.analyze(str(tmp_path), cache=False)
    (run,) = report["runs"]
    (host,) = run["hosts"]
    assert (run["run"], host["host"], host["format"]) == ("train/2026_01_01", "worker0", "allocation_log")
    assert (run["verdict"], host["verdict"]) == ("leak", "leak")
    (allocator,) = host["allocators"]
    assert allocator["leak_bytes_per_step"] == pytest.approx(MIB, rel=0.01)
    assert allocator["stack_hint"] == HINTS.python_frames
    assert host["format_hints"] == {
        "name": "allocation log",
        "record_events": HINTS.record_events,
        "memory_id_note": ", the device its profile names",
        "static_modules": False,
        "xprof_tools": False,
        "shape_label": "shape",  # the default: its shapes are the buffers' own
        "live_entry": "buffer",  # the default: a file of one moment lists buffers
    }


def test_the_cli_reports_it_and_lists_it_in_its_help(registered, tmp_path, capsys):
    path = _leaking_log(tmp_path / "logs" / "worker0.allocs.csv")
    assert cli.main(["report", "--json", "--no-cache", str(path)]) == cli.EXIT_OK
    (host,) = json.loads(capsys.readouterr().out)["runs"][0]["hosts"]
    assert host["format_hints"]["name"] == "allocation log"
    assert cli.main(["report", "--no-cache", str(path)]) == cli.EXIT_OK
    assert HINTS.python_frames in capsys.readouterr().out
    assert cli.main(["check", "--no-cache", str(path)]) == cli.EXIT_LEAK
    with pytest.raises(SystemExit):
        cli.main(["report", "--help"])
    assert "or one allocation log (.allocs.csv)" in " ".join(capsys.readouterr().out.split())


def test_discoverys_errors_name_it(registered, tmp_path):
    with pytest.raises(
        LeakfinderError, match=r"no profiles found \(expected .* or <run>/plugins/profile/<session>/<host>\.allocs\.csv\)"
    ):
        discovery.runs_for_path(str(tmp_path))
    with pytest.raises(LeakfinderError, match=r"no such logdir, session folder, .*, \.pickle or \.allocs\.csv file"):
        discovery.runs_for_path(str(tmp_path / "missing"))


def test_what_it_does_not_implement_it_has_not(registered, tmp_path):
    """No compiled programs to look up (the module route's 404), no companions in a host's cache key."""
    path = _leaking_log(tmp_path / "s" / "worker0.allocs.csv")
    (run,) = discovery.runs_for_path(str(path))
    assert run.companions == ()
    assert not registry.has_modules(EXAMPLE.name)
    with pytest.raises(NotFoundError, match="allocation logs hold no compiled programs, so none named 'jit_f'"):
        registry.module(EXAMPLE, {}, "jit_f", str(path))


def test_unregistered_its_files_are_no_profiles(tmp_path):
    path = _leaking_log(tmp_path / "s" / "worker0.allocs.csv")
    with pytest.raises(LeakfinderError, match="not a profile file of any known format"):
        registry.format_of(str(path))
    with pytest.raises(LeakfinderError, match="no profiles found"):
        discovery.runs_for_path(str(tmp_path))
