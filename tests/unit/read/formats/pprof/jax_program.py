"""A JAX loop that keeps one array per step and saves a device memory profile every few steps, on CPU.

    python tests/unit/read/formats/pprof/jax_program.py LOGDIR STEPS EVERY

writes `LOGDIR/memory_profiles/step_<N>.prof` after steps N = EVERY - 1, 2 * EVERY - 1, ... (the layout
tb_leakfinder discovers as the captures of TensorBoard run `memory_profiles`), and prints one JSON object:
the files, the bytes kept at each, and the line that makes the kept arrays.
"""

from __future__ import annotations

import inspect
import json
import os
import pathlib
import sys

ROWS, COLS = 256, 1024  # one float32 array of 1 MiB kept per step
KEPT_BYTES = ROWS * COLS * 4
PROGRAM = pathlib.Path(__file__)


def make_batch(step):
    import jax.numpy as jnp

    return jnp.full((ROWS, COLS), step, jnp.float32) * 2.0


def _line_of(function, text: str) -> int:
    """The line of `function` that holds `text`: where the kept array is made."""
    source, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(source) if text in line)


def main(logdir: str, steps: int, every: int) -> dict:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    folder = pathlib.Path(logdir) / "memory_profiles"
    folder.mkdir(parents=True, exist_ok=True)
    kept = []
    saved = []
    for step in range(steps):
        kept.append(make_batch(step))
        if step % every == every - 1:
            jax.block_until_ready(kept)
            path = folder / f"step_{step}.prof"
            jax.profiler.save_device_memory_profile(str(path))
            saved.append({"path": str(path), "step": step, "kept_bytes": sum(int(a.nbytes) for a in kept)})
    return {
        "saved": saved,
        "make_batch": f"{PROGRAM.name}:{_line_of(make_batch, 'jnp.full')} in make_batch",
        "jax": jax.__version__,
    }


def run(logdir: pathlib.Path, steps: int, every: int) -> dict:
    """Runs this program in a process of its own (JAX's native libraries stay out of the test process); skips
    the test without JAX installed, unless TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI)."""
    import importlib.util

    import pytest

    from tests.support import capture_programs

    if importlib.util.find_spec("jax") is None:
        if os.environ.get("TB_LEAKFINDER_REQUIRE_FRAMEWORKS") == "1":
            pytest.fail("jax is not installed, and TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1")
        pytest.skip("jax is not installed (pip install '.[test]')")
    return capture_programs.run_script(PROGRAM, [str(logdir), str(steps), str(every)], bfc=False)


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
