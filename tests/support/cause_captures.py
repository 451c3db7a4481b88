"""Real captures of each likely cause (docs/causes.md) beside a look-alike that does not leak.

    python tests/support/cause_captures.py torch|tf LOGDIR

records every case of the framework as the TensorBoard run LOGDIR/<case> with tb_leakfinder.capture and prints
one JSON object: per case, its report. tests/integration/test_cause_captures.py runs it in a process of its own.

CASES hold the truth, from each program's own code below: which cause the leaking families must get, and, for a
look-alike, that nothing leaks. Every PyTorch case runs the same small model (Linear, Tanh, Linear) on one batch;
two warm-up steps (an optimizer's state made on its first step, gradients on the first backward) run before
the capture.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import weakref
from typing import Any

STEPS = 6  # captured steps
WARM_UP = 2  # steps run before the capture starts
BATCH, FEATURES, HIDDEN = 32, 64, 128
RING = 4  # rows of the ring buffer
ROWS_PER_STEP = 4  # rows a regrown buffer gains each step


@dataclasses.dataclass(frozen=True)
class Case:
    framework: str
    description: str
    cause: str | None  # the cause every leaking family must get; None: a look-alike, which must not leak
    ops: tuple[str, ...] = ()  # leaking families that must be there, by op
    tracer: bool = False  # TensorFlow: captured with the Python tracer (python_tracer=True)


CASES = {
    # Tanh saves its output for TanhBackward0, mse_loss its input (the last Linear's addmm output); the running
    # total keeps every step's graph, and retain_graph=True keeps the tensors it saved.
    "graph_kept": Case(
        "torch", "loss.backward(retain_graph=True); total = total + loss", "graph_kept", ("aten::tanh", "aten::addmm")
    ),
    # Adam's _init_group makes exp_avg and exp_avg_sq (torch.zeros_like) and a step tensor per parameter.
    "optimizer_per_step": Case("torch", "a new torch.optim.Adam every step", "optimizer_per_step", ("aten::zeros_like",)),
    # Linear.__init__ makes its weight and bias (aten::empty); backward makes their gradients.
    "modules_per_step": Case("torch", "a new nn.Linear every step, kept in a list", "modules_per_step", ("aten::empty",)),
    # Windows.__getitem__ clones a new window into its memo dict every step.
    "cache_per_step": Case("torch", "a __getitem__ that memoizes a new index every step", "cache_per_step", ("aten::clone",)),
    "regrown": Case("torch", "torch.cat of a buffer with new rows every step", "regrown", ("aten::cat",)),
    "weak_cache": Case("torch", "the same __getitem__ memo, in a WeakValueDictionary", None),
    "ema": Case("torch", "an exponential moving average of the weights, updated in place", None),
    "ring_buffer": Case("torch", "a preallocated ring buffer written at step % RING", None),
    "grad_accumulation": Case("torch", "gradients accumulated over two steps, loss.item() kept", None),
    # tf.Variable(h) makes a resource handle (VarHandleOp) and keeps h's buffer (Relu's output) as its value.
    "variable_per_step": Case(
        "tf", "a new tf.Variable of the hidden layer every step", "variable_per_step", ("VarHandleOp", "Relu")
    ),
    "tf_regrown": Case("tf", "tf.concat of a buffer with new rows every step", "regrown", ("ConcatV2",)),
    # With the Python tracer: Keras' Adam makes its variables (iterations, learning rate, a momentum and a velocity
    # per weight) in its __init__ and build, under apply_gradients; a Dense layer its kernel and bias in add_weight.
    "keras_optimizer_per_step": Case(
        "tf", "a new keras.optimizers.Adam every step", "optimizer_per_step", ("VarHandleOp", "Fill"), tracer=True
    ),
    "keras_layer_per_step": Case("tf", "a new keras.layers.Dense every step", "modules_per_step", ("VarHandleOp",), tracer=True),
    "variable_assigned": Case("tf", "one tf.Variable, assigned the hidden layer every step", None),
    # JAX on CPU: its XSpace has no memory events, and each device memory profile is one moment (inconclusive on
    # its own; growth shows in the run's history), so a buffer regrown by jnp.concatenate and a function compiled
    # again each step (a static argument that changes) get no cause.
    "jax_regrown_recompiled": Case("jax", "jnp.concatenate of a buffer, and a recompile, every step", None),
}


class Windows:
    """Windows of a dataset, each made once and kept: a memo that gains an entry for every new index."""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.memo: dict[int, Any] = {}

    def __getitem__(self, i: int) -> Any:
        if i not in self.memo:
            self.memo[i] = self.data[i : i + BATCH].clone()
        return self.memo[i]


class WeakWindows(Windows):
    """The same memo holding its windows weakly: an entry goes when nothing else holds its window."""

    def __init__(self, data: Any) -> None:
        super().__init__(data)
        self.memo = weakref.WeakValueDictionary()  # type: ignore[assignment]

    def __getitem__(self, i: int) -> Any:
        window = self.memo.get(i)
        if window is None:
            window = self.memo[i] = self.data[i : i + BATCH].clone()
        return window


def record_torch(logdir: pathlib.Path, name: str) -> dict[str, Any]:
    import torch

    import tb_leakfinder

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
    data = torch.randn(BATCH + STEPS + WARM_UP, FEATURES)
    x, y = data[:BATCH], torch.randn(BATCH, 1)
    loss_fn = torch.nn.functional.mse_loss
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    windows = WeakWindows(data) if name == "weak_cache" else Windows(data)
    ema = [p.detach().clone() for p in model.parameters()]
    ring = torch.zeros(RING, HIDDEN)
    kept: list[Any] = []
    total: Any = 0
    grown = torch.zeros(0, HIDDEN)
    with tb_leakfinder.capture(logdir / name, start=WARM_UP, count=STEPS, framework="torch") as cap:
        for step in range(WARM_UP + STEPS):
            with cap.step(step):
                if name == "graph_kept":
                    loss = loss_fn(model(x), y)
                    loss.backward(retain_graph=True)
                    total = total + loss
                    opt.step()
                    opt.zero_grad()
                elif name == "optimizer_per_step":
                    fresh = torch.optim.Adam(model.parameters(), lr=1e-3)
                    loss_fn(model(x), y).backward()
                    fresh.step()
                    fresh.zero_grad()
                    kept.append(fresh)
                elif name == "modules_per_step":
                    head = torch.nn.Linear(FEATURES, FEATURES)
                    kept.append(head)
                    head(x).sum().backward()
                elif name in ("cache_per_step", "weak_cache"):
                    loss = loss_fn(model(windows[step]), y)
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
                elif name == "regrown":
                    hidden = torch.tanh(x @ model[0].weight.detach().T)
                    grown = torch.cat([grown, hidden[:ROWS_PER_STEP]])
                elif name == "ema":
                    loss_fn(model(x), y).backward()
                    opt.step()
                    opt.zero_grad()
                    with torch.no_grad():
                        for shadow, p in zip(ema, model.parameters(), strict=True):
                            shadow.mul_(0.9).add_(p, alpha=0.1)
                elif name == "ring_buffer":
                    with torch.no_grad():
                        ring[step % RING] = model[1](model[0](x))[0]
                elif name == "grad_accumulation":
                    loss = loss_fn(model(x), y) / 2
                    loss.backward()
                    total += loss.item()
                    if step % 2 == 1:
                        opt.step()
                        opt.zero_grad()
    return {"report": cap.report()}


def record_tf(logdir: pathlib.Path, name: str) -> dict[str, Any]:
    import tensorflow as tf

    import tb_leakfinder

    tf.random.set_seed(0)
    x = tf.random.normal([BATCH, FEATURES])
    w = tf.Variable(tf.random.normal([FEATURES, HIDDEN], stddev=0.05))
    value = tf.Variable(tf.zeros([BATCH, HIDDEN]))
    layer = tf.keras.layers.Dense(HIDDEN)
    layer(x)
    kept: list[Any] = []
    grown = tf.zeros([0, HIDDEN])
    tracer = CASES[name].tracer
    with tb_leakfinder.capture(logdir / name, start=WARM_UP, count=STEPS, python_tracer=tracer) as cap:
        for step in range(WARM_UP + STEPS):
            with cap.step(step):
                hidden = tf.nn.relu(tf.matmul(x, w))
                if name == "variable_per_step":
                    kept.append(tf.Variable(hidden))
                elif name == "tf_regrown":
                    grown = tf.concat([grown, hidden[:ROWS_PER_STEP]], 0)
                elif name == "variable_assigned":
                    value.assign(hidden)
                elif name == "keras_optimizer_per_step":
                    optimizer = tf.keras.optimizers.Adam()
                    with tf.GradientTape() as tape:
                        loss = tf.reduce_mean(layer(x))
                    weights = layer.trainable_variables
                    optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights, strict=True))
                    kept.append(optimizer)
                elif name == "keras_layer_per_step":
                    dense = tf.keras.layers.Dense(FEATURES)
                    dense(x)
                    kept.append(dense)
    return {"report": cap.report()}


def _scaled_tanh(a: Any, k: int) -> Any:
    import jax.numpy as jnp

    return jnp.tanh(a) * k


def record_jax(logdir: pathlib.Path, name: str) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    import tb_leakfinder

    step_fn = jax.jit(_scaled_tanh, static_argnums=1)
    x = jnp.ones((BATCH, HIDDEN))
    grown = jnp.zeros((0, HIDDEN))
    with tb_leakfinder.capture(logdir / name, start=WARM_UP, count=STEPS, memory_profile_every=1) as cap:
        for step in range(WARM_UP + STEPS):
            with cap.step(step):
                grown = jnp.concatenate([grown, step_fn(x, step)[:ROWS_PER_STEP]]).block_until_ready()
    # Every capture of the run: the XSpace session and each device memory profile.
    return {"report": tb_leakfinder.analyze(str(logdir / name), cache=False)}


def main() -> None:
    framework, logdir = sys.argv[1], pathlib.Path(sys.argv[2])
    record = {"torch": record_torch, "tf": record_tf, "jax": record_jax}[framework]
    out = {name: record(logdir, name) for name, case in CASES.items() if case.framework == framework}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
