"""What one host's analysis gives its run's history: the figures its report states, made from the typed analysis."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tb_leakfinder.analyses.capacity import known_capacity
from tb_leakfinder.analyses.history_points import host_points
from tb_leakfinder.analyses.words import module_base_name, normalize_name
from tb_leakfinder.engine.engine import Engine, HostResult
from tb_leakfinder.engine.history import capture_points
from tb_leakfinder.model.history import ONE_MOMENT, PROFILE, HostPoints
from tb_leakfinder.testing.pprof_builder import PprofBuilder
from tests.support.demo import DEMO_LOGS, ROOT, demo_capture

PROFILES = ROOT.parent / "shared" / "profiles"
REAL = [
    DEMO_LOGS / "tf_leak",
    DEMO_LOGS / "jax_liveout",
    ROOT / "benchmarks" / "accuracy" / "captures" / "weight_snapshots",
    PROFILES / "jax_gpu" / "amd_jax08_gemm",
    PROFILES / "torch" / "kineto_resnet50_w4",
    PROFILES / "torch" / "snapshot_cs336_bcrafton",
]


def _hosts(path: Path) -> list[HostResult]:
    engine = Engine.for_path(str(path))
    return [engine.host(run, host) for run in engine.runs() for host in run.hosts]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_the_points_state_what_the_report_states(path):
    if not path.exists():
        pytest.skip(f"{path} is not here")
    machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for result in _hosts(path):
        body, points = result.json(), result.points()
        infos = result.unwrap().profile.allocators
        assert isinstance(points, HostPoints)
        assert (points.host, points.kind, points.start_time_ns) == (
            body["host"],
            ONE_MOMENT if body["one_moment"] else PROFILE,
            body["start_time_ns"],
        )
        assert points.duration_s == body["duration_ps"] / 1e12
        marked = [s["step"] for s in body["steps"]] if body["step_source"]["kind"] == "step_num" else []
        assert (points.first_step, points.last_step) == ((min(marked), max(marked)) if marked else (None, None))
        assert points.program == ", ".join(sorted({module_base_name(m["name"]) for m in body["modules"]}))
        assert [a.memory_id for a in points.allocators] == [a["memory_id"] for a in body["allocators"]]
        for a, stated in zip(points.allocators, body["allocators"], strict=True):
            assert (a.heap_start_bytes, a.peak_heap_bytes, a.heap_end_bytes, a.heap_floor_bytes) == (
                stated["heap_start_bytes"],
                stated["peak_heap_bytes"],
                stated["heap_end_bytes"],
                stated["heap_floor_bytes"],
            )
            # Host memory is bounded by the machine's too (this one's: no profile records its host's).
            host_memory = a.memory_id in infos and infos[a.memory_id].host_memory
            stated_capacity = known_capacity(stated["memory_capacity_bytes"], stated["peak_bytes_in_use"])
            capacity = min((c for c in (stated_capacity, machine if host_memory else 0) if c > 0), default=0)
            assert (a.never_freed_bytes, a.capacity_bytes, a.verdict) == (
                stated["never_freed_requested_bytes"],  # tensor bytes, the figure the capture's page shows
                capacity,
                stated["verdict"],
            )
            assert a.heap_growth_bytes_per_step == pytest.approx(stated["growth_bytes_per_step"], abs=0.05)
            # Only PyTorch's CPU heap counts what a profiler saw allocated, not what its allocator holds.
            assert a.profiled_heap == (body["format"] == "torch_trace" and a.label == "CPU")
            families = [(f.label, f.where, f.stack, f.kind, f.bytes, f.bytes_per_step, f.count) for f in a.families]
            groups = stated["families"]
            assert families == [
                (g["label"], g["where"], g["site"]["stack"], g["kind"], g["chunk_bytes"], g["bytes_per_step"], g["count"])
                for g in groups
            ]


def test_a_leaking_family_is_named_as_across_captures():
    expected = demo_capture("tf_leak")
    (result,) = _hosts(DEMO_LOGS / "tf_leak")
    points = result.points()
    assert points is not None and points.kind == PROFILE and points.first_step is not None
    top = points.allocators[0].families[0]
    parts = (expected["leaked_op"], expected["leaked_shape"], expected["leaked_dtype"], expected["leaked_region"])
    assert top.key == " ".join([normalize_name(parts[0]), *parts[1:]])
    assert top.kind == "growing" and top.bytes_per_step == expected["leaked_bytes_per_step"]


def test_a_snapshot_has_no_steps_of_its_own_but_its_name_may_give_one(tmp_path):
    builder = PprofBuilder()
    builder.sample(3 << 20, [("/src/train.py", "step", 10, 12)])
    path = builder.write(tmp_path / "step_120.prof")
    (result,) = _hosts(path)
    points = host_points(result.unwrap(), result.modules)
    assert points.kind == ONE_MOMENT and (points.first_step, points.last_step) == (None, None)
    (point,) = capture_points("job/step_120", points, mtime_ns=0)
    assert (point.first_step, point.last_step, point.capture) == (120, 120, "job/step_120")
    assert point.heap_end_bytes == points.allocators[0].heap_end_bytes == 3 << 20
