"""Decoding HloProtos: the demo JAX captures' /host:metadata plane, XProf's session files, bad input."""

from __future__ import annotations

import functools
import random
import shutil
import subprocess
import sys

import pytest

from tb_leakfinder import proto
from tb_leakfinder.errors import LeakfinderError, NotFoundError
from tb_leakfinder.read.formats.xplane import decoder, hlo
from tests.support.demo import DEMO_LOGS, demo_capture, demo_xplane

JAX_RUNS = ("jax_liveout", "jax_clean")


@functools.cache
def metadata_protos(run: str) -> dict[str, bytes]:
    space = proto.XSpace().FromString(demo_xplane(run).read_bytes())
    (plane,) = [p for p in space.planes if p.name == decoder.METADATA_PLANE]
    return hlo.hlo_protos_from_metadata_plane(plane)


def step_module(run: str) -> str:
    return f"{demo_capture(run)['module']}("


def test_metadata_plane_yields_every_jitted_module_by_name_and_program_id():
    for run in JAX_RUNS:
        protos = metadata_protos(run)
        (step,) = [k for k in protos if k.startswith(step_module(run))]
        modules, warnings = hlo.decode_modules(protos, str(demo_xplane(run)))
        assert warnings == []
        assert [m.key for m in modules] == sorted(protos)
        for m in modules:
            assert m.key == f"{m.name}({m.program_id})"
            assert m.num_instructions >= len(m.instructions) > 0
        assert next(m for m in modules if m.key == step).num_instructions > 100


def test_the_returned_activation_is_decoded_with_shape_size_op_and_source_line():
    capture = demo_capture("jax_liveout")
    mistake = capture["returned_by_mistake"]
    protos = metadata_protos("jax_liveout")
    (key,) = [k for k in protos if k.startswith(step_module("jax_liveout"))]
    module = hlo.decode_module(key, protos[key], "demo")
    shape = f"f32[{','.join(str(d) for d in mistake['shape'])}]"
    a = module.allocations
    (out,) = [r for r in range(len(a)) if a.maybe_live_out[r] and not a.is_parameter[r] and a.size[r] == mistake["bytes"]]
    rows = [b for b in range(len(module.buffers)) if module.buffers.allocation[b] == out]
    assert [module.buffers.shape[b] for b in rows] == [shape]
    instruction = module.buffers.instruction[rows[0]]
    assert "relu" in module.instructions.op_name[instruction]
    # The stack frame index points at the line of capture_jax.py that computes h.
    script = DEMO_LOGS / "capture_jax.py"
    relu_line = next(i for i, line in enumerate(script.read_text().splitlines(), 1) if "h = jax.nn.relu" in line)
    assert module.instructions.source[instruction].endswith(f"capture_jax.py:{relu_line}")


def test_bare_names_get_the_program_id_and_events_without_hlo_are_skipped():
    plane = proto.message_class("tb_leakfinder.xplane.XPlane")()
    plane.name = decoder.METADATA_PLANE
    plane.stat_metadata[1].name = hlo.HLO_PROTO_STAT
    plane.stat_metadata[2].name = hlo.PROGRAM_ID_STAT
    bare = plane.event_metadata[1]
    bare.name = "jit_f"
    bare.stats.add(metadata_id=1, bytes_value=b"\x0a\x00")
    bare.stats.add(metadata_id=2, uint64_value=7)
    named = plane.event_metadata[2]
    named.name = "jit_g(3)"
    named.stats.add(metadata_id=1, bytes_value=b"g")
    plane.event_metadata[3].name = "not_a_module"
    assert hlo.hlo_protos_from_metadata_plane(plane) == {"jit_f(7)": b"\x0a\x00", "jit_g(3)": b"g"}


def test_session_files_written_by_xprof_decode_like_the_metadata_plane(tmp_path):
    session = tmp_path / "session"
    shutil.copytree(demo_xplane("jax_liveout").parent, session)
    xplane = next(session.glob("*.xplane.pb"))
    script = "import sys; from xprof.convert import raw_to_tool_data as r; r.xspace_to_tool_names([sys.argv[1]])"
    subprocess.run([sys.executable, "-c", script, str(xplane)], check=True, capture_output=True, timeout=300)
    (session / ".cached_tools.json").write_text("{}")
    files = hlo.session_hlo_files(str(session))
    protos = metadata_protos("jax_liveout")
    assert sorted(files) == sorted(protos)
    for key, data in files.items():
        from_file = hlo.decode_module(key, data, "file")
        from_plane = hlo.decode_module(key, protos[key], "plane")
        assert from_file.instructions == from_plane.instructions
        assert from_file.buffers.shape == from_plane.buffers.shape
        assert (from_file.buffers.size == from_plane.buffers.size).all()
        assert (from_file.allocations.size == from_plane.allocations.size).all()


def test_session_files_through_gfile_on_a_remote_filesystem():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    protos = metadata_protos("jax_clean")
    key = sorted(protos)[-1]
    folder = "/hlo_remote/run/plugins/profile/s1"
    for name, data in ((f"{key}.hlo_proto.pb", protos[key]), ("host.xplane.pb", b"x"), ("cache_version.txt", b"1")):
        with fs.open(f"{folder}/{name}", "wb") as f:
            f.write(data)
    try:
        assert hlo.session_hlo_files(f"memory://{folder}") == {key: protos[key]}
    finally:
        fs.rm("/hlo_remote", recursive=True)


def test_session_files_of_a_missing_folder_are_none_and_an_unreadable_one_is_an_error(tmp_path):
    assert hlo.session_hlo_files(str(tmp_path / "absent")) == {}
    (tmp_path / "jit_f(1).hlo_proto.pb").mkdir()
    with pytest.raises(LeakfinderError, match=r"jit_f\(1\)\.hlo_proto\.pb"):
        hlo.session_hlo_files(str(tmp_path))


def test_shape_text_of_nested_tuples():
    shape = proto.message_class("tb_leakfinder.hlo.ShapeProto")()
    shape.element_type = 13
    shape.tuple_shapes.add(element_type=16, dimensions=[2, 3])
    inner = shape.tuple_shapes.add(element_type=13)
    inner.tuple_shapes.add(element_type=4)
    inner.tuple_shapes.add(element_type=1, dimensions=[5])
    assert hlo.shape_text(shape) == "(bf16[2,3], (s32[], pred[5]))"


def _demo_step_proto() -> tuple[str, bytes]:
    protos = metadata_protos("jax_liveout")
    (key,) = [k for k in protos if k.startswith(step_module("jax_liveout"))]
    return key, protos[key]


def test_truncated_proto_is_a_leakfinder_error_naming_module_and_file():
    key, data = _demo_step_proto()
    for cut in (len(data) // 3, len(data) - 1):
        with pytest.raises(LeakfinderError) as err:
            hlo.decode_module(key, data[:cut], "run/host.xplane.pb")
        assert key in err.value.message and "run/host.xplane.pb" in err.value.message
        assert err.value.status == 422


def test_random_bytes_never_escape_as_another_exception():
    rng = random.Random(3)
    for _ in range(200):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        try:
            hlo.decode_module("jit_x(1)", data, "f.pb")
        except LeakfinderError as e:
            assert "jit_x(1)" in e.message and "f.pb" in e.message


def test_module_without_buffer_assignment_is_a_clear_error():
    key, data = _demo_step_proto()
    message = proto.HloProto().FromString(data)
    message.ClearField("buffer_assignment")
    with pytest.raises(LeakfinderError, match="no buffer assignment") as err:
        hlo.decode_module(key, message.SerializeToString(), "host.xplane.pb")
    assert key in err.value.message
    with pytest.raises(LeakfinderError, match="no HLO module"):
        hlo.decode_module(key, b"", "host.xplane.pb")


def test_decode_modules_keeps_the_good_ones_and_warns_about_the_bad():
    key, data = _demo_step_proto()
    modules, warnings = hlo.decode_modules({key: data, "jit_bad(9)": data[:100]}, "h.xplane.pb")
    assert [m.key for m in modules] == [key]
    assert len(warnings) == 1 and "jit_bad(9)" in warnings[0] and "h.xplane.pb" in warnings[0]


def test_unknown_module_name_is_not_found_and_lists_the_known_ones():
    protos = metadata_protos("jax_clean")
    with pytest.raises(NotFoundError) as err:
        hlo.read_module(protos, "jit_nope(1)", "h.xplane.pb")
    assert err.value.status == 404
    assert "jit_nope(1)" in err.value.message and sorted(protos)[0] in err.value.message
    key = sorted(protos)[0]
    assert hlo.read_module(protos, key, "h.xplane.pb").key == key


def test_demo_jax_captures_stay_small():
    files = [p for run in JAX_RUNS for p in (DEMO_LOGS / run).rglob("*") if p.is_file()]
    assert {p.suffix for p in files} == {".pb", ".json"}
    assert sum(p.stat().st_size for p in files) < 1.2 * 1024 * 1024
    assert all(p.name.endswith(".xplane.pb") for p in files if p.suffix == ".pb")


def test_capture_json_states_what_was_returned_by_mistake():
    mistake = demo_capture("jax_liveout")["returned_by_mistake"]
    assert mistake["bytes"] == 4 * functools.reduce(lambda x, y: x * y, mistake["shape"]) and mistake["dtype"] == "float32"
    assert demo_capture("jax_clean")["returned_by_mistake"] is None
