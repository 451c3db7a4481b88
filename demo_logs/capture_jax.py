"""Capture the JAX CPU demo profiles: a training step that returns a large activation by mistake.

Run with a Python that has jax (never the project's main Python), from the repo root:

    /work/venv-jax/bin/python demo_logs/capture_jax.py demo_logs

It writes two runs, each `<run>/plugins/profile/<session>/<host>.xplane.pb` plus
`<run>/capture.json`:
- `jax_liveout`: the jitted step also returns the hidden activation `h`, so XLA
  must keep it alive to the end of the program (a maybe-live-out buffer).
- `jax_clean`: the same step without that output.
Only the `.xplane.pb` files are kept: JAX also writes a trace, removed here.
Each run is captured in a process of its own, because JAX records in a profile
every module compiled so far, and the clean run must not hold the other step.
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp

BATCH = 256
FEATURES = 128
HIDDEN = 3072  # wide on purpose: the returned activation is [BATCH, HIDDEN] f32 = 3 MiB
CLASSES = 16
STEPS = 5


def init_params(key: jax.Array) -> dict[str, jax.Array]:
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (FEATURES, HIDDEN)) * 0.02,
        "b1": jnp.zeros((HIDDEN,)),
        "w2": jax.random.normal(k2, (HIDDEN, CLASSES)) * 0.02,
        "b2": jnp.zeros((CLASSES,)),
    }


def loss_and_hidden(params: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    loss = -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))
    return loss, h


def sgd(params: dict[str, jax.Array], grads: dict[str, jax.Array]) -> dict[str, jax.Array]:
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


# Parameters are donated, so the updated ones alias the inputs: those live-out
# buffers are expected; only the returned activation is the mistake.
@functools.partial(jax.jit, donate_argnums=0)
def train_step_liveout(params, x, y):
    (loss, h), grads = jax.value_and_grad(loss_and_hidden, has_aux=True)(params, x, y)
    return sgd(params, grads), loss, h  # h returned by mistake: kept alive to the end


@functools.partial(jax.jit, donate_argnums=0)
def train_step_clean(params, x, y):
    (loss, _), grads = jax.value_and_grad(loss_and_hidden, has_aux=True)(params, x, y)
    return sgd(params, grads), loss


VARIANTS = {"jax_liveout": train_step_liveout, "jax_clean": train_step_clean}


def capture(run_dir: pathlib.Path, step_fn, returns_activation: bool) -> None:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    key = jax.random.PRNGKey(0)
    params = init_params(key)
    x = jax.random.normal(key, (BATCH, FEATURES))
    y = jax.nn.one_hot(jnp.arange(BATCH) % CLASSES, CLASSES)
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # keeps the file small; the HLO is what matters here
    jax.profiler.start_trace(str(run_dir), profiler_options=options)
    for step in range(STEPS):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss, *rest = step_fn(params, x, y)
            jax.block_until_ready(loss)
    jax.profiler.stop_trace()
    for path in run_dir.rglob("*"):
        if path.is_file() and not path.name.endswith(".xplane.pb"):
            path.unlink()
    module = f"jit_{step_fn.__name__}"
    info: dict[str, object] = {
        "framework": f"jax {jax.__version__} (CPU)",
        "module": module,
        "steps": STEPS,
        "returned_by_mistake": None,
    }
    if returns_activation:
        h = rest[0]
        info["returned_by_mistake"] = {
            "what": "hidden activation h = relu(x @ w1 + b1), returned as the step's third output",
            "shape": list(h.shape),
            "dtype": str(h.dtype),
            "bytes": int(h.size * h.dtype.itemsize),
        }
    (run_dir / "capture.json").write_text(json.dumps(info, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logdir", type=pathlib.Path)
    parser.add_argument("--run", choices=sorted(VARIANTS), help="capture only this run, in this process")
    args = parser.parse_args()
    if args.run:
        capture(args.logdir / args.run, VARIANTS[args.run], returns_activation=args.run == "jax_liveout")
        return
    for run in VARIANTS:
        subprocess.run([sys.executable, __file__, str(args.logdir), "--run", run], check=True)


if __name__ == "__main__":
    main()
