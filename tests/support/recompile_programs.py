"""JAX loops that compile a program per step, and their look-alike that compiles once, each saving a device memory
profile after every step (`capture(memory_profile_every=1)`) and profiling steps 1..CAPTURED in one XSpace session;
run as `python recompile_programs.py MODE LOGDIR`, it prints one JSON object: the profiles it saved, the line of
the call that compiled the step's program and the name JAX gives that program.

MODE: `static_step` (a jitted function whose static argument is the step number), `new_jit_kept` (a new
`jax.jit(lambda ...)` each step, kept in a list), `new_jit_dropped` (the same, not kept), `static_constant`
(the jitted function of `static_step` called with a constant static argument: compiled once).
"""

from __future__ import annotations

import inspect
import json
import re
import sys

STEPS = 5
CAPTURED = 4  # the XSpace session's steps
MODES = ("static_step", "new_jit_kept", "new_jit_dropped", "static_constant")


def main(mode: str, logdir: str) -> dict:
    import jax
    import jax.numpy as jnp

    import tb_leakfinder

    def scaled(x, k):
        return jnp.tanh(x * k).sum()

    jitted = jax.jit(scaled, static_argnums=1)
    x = jnp.ones((32, 32))
    kept = []
    lines: set[int] = set()
    names: set[str] = set()
    with tb_leakfinder.capture(logdir, start=1, count=CAPTURED, framework="jax", memory_profile_every=1) as cap:
        for step in range(STEPS + 1):
            with cap.step(step):
                here = inspect.currentframe()
                assert here is not None
                if mode == "static_step":
                    lines.add(here.f_lineno + 1)
                    y = jitted(x, step)
                elif mode == "static_constant":
                    lines.add(here.f_lineno + 1)
                    y = jitted(x, 3)
                else:
                    fresh = jax.jit(lambda v: jnp.tanh(v * 2.0).sum())
                    if mode == "new_jit_kept":
                        kept.append(fresh)
                    lines.add(here.f_lineno + 1)
                    y = fresh(x)
                y.block_until_ready()
                if not names:  # JAX's name of the step's program, as it lowers it (lowering compiles nothing)
                    lowered = jitted.lower(x, step) if mode.startswith("static") else fresh.lower(x)
                    names.add(re.search(r"module @(\S+)", lowered.as_text())[1])
    (line,) = lines
    (name,) = names
    return {
        "memory_profiles": [str(p) for p in cap.memory_profiles],
        "steps": [int(p.stem.rpartition("_")[2]) for p in cap.memory_profiles],
        "compiled_at": f"recompile_programs.py:{line} in main",
        "program": name,  # "jit_scaled", "jit__lambda"
        "sessions": [str(s.path) for s in cap.sessions],
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
