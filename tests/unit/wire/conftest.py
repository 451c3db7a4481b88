import pytest

from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session


@pytest.fixture(scope="package")
def hosts(tmp_path_factory):
    """Real host reports by host: three allocators with a planted leak (`host0`), and a broken file (`bad`)."""
    logdir = tmp_path_factory.mktemp("logs")
    builder, _ = synthesize_training(num_events=3_000, steps=6, allocators=("GPU_0_bfc", "GPU_1_bfc", "cpu_bfc"))
    write_session(logdir, "pod", "session", {"host0": builder, "bad": builder})
    (logdir / "pod" / "plugins" / "profile" / "session" / "bad.xplane.pb").write_bytes(b"\x0a\xff")
    (run,) = Engine.for_path(str(logdir)).report()["runs"]
    return {h["host"]: h for h in run["hosts"]}
