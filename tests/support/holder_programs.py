"""Training loops that keep buffers alive through each kind of holder, captured with tb_leakfinder.capture; each
prints the companion file its capture wrote, and HOLDERS says what each must find, from the program's own constants.

    python tests/support/holder_programs.py PROGRAM LOGDIR

tests/integration/test_holders.py runs each in a process of its own (tests/support/capture_programs.run_script).
Every program captures steps 1..STEPS after one warm-up step; what a holder keeps is made in those steps only.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

STEPS = 4  # captured steps, after one warm-up step
BATCH, FEATURES, HIDDEN = 8, 32, 64
ROWS = 2  # rows the regrown buffer gains per step
F32 = 4


@dataclasses.dataclass(frozen=True)
class Holder:
    """A holder a program makes: its access path, kind, type, how many of the window's buffers it keeps, their bytes."""

    path: str
    kind: str
    type: str
    count: int
    bytes: int


_ACTIVATION = BATCH * HIDDEN * F32
HOLDERS: dict[str, list[Holder]] = {
    "torch_holders": [
        # A Linear(FEATURES, HIDDEN) per step: its weight and its bias.
        Holder("model.heads", "module", "ModuleList", 2 * STEPS, STEPS * (FEATURES * HIDDEN + HIDDEN) * F32),
        # One buffer regrown by ROWS rows of HIDDEN floats each step (torch.cat): the last one, the warm-up step's
        # rows and every captured step's, is never freed.
        Holder("model.grown", "buffer", "Tensor", 1, (1 + STEPS) * ROWS * HIDDEN * F32),
        Holder("ScaledSiLU.cache", "class_attribute", "list", STEPS, STEPS * _ACTIVATION),
        Holder("metrics['loss_map']", "dict_entry", "list", STEPS, STEPS * _ACTIVATION),
        Holder("rotary_table._memo", "default_argument", "dict", STEPS, STEPS * HIDDEN * HIDDEN * F32),
        Holder("remember.seen", "closure", "list", STEPS, STEPS * _ACTIVATION),
        # `total = total + tanh(h @ w).sum()`: each step's graph, with what it saved: tanh's result and mm's h.
        Holder("total.grad_fn", "autograd_graph", "AddBackward0", 2 * STEPS, 2 * STEPS * _ACTIVATION),
        Holder("history", "frame_local", "list", STEPS, STEPS * _ACTIVATION),
        Holder("GLOBAL_LOG", "global", "list", STEPS, STEPS * _ACTIVATION),
        Holder("trainer.kept", "attribute", "list", STEPS, STEPS * _ACTIVATION),
        Holder("buckets[0]", "list", "list", STEPS, STEPS * _ACTIVATION),
    ],
    "tensorflow_holders": [
        # A tf.Variable copy of the weights per step.
        Holder("snapshots", "frame_local", "list", STEPS, STEPS * FEATURES * HIDDEN * F32),
        Holder("metrics['acts']", "dict_entry", "list", STEPS, STEPS * _ACTIVATION),
    ],
    # The program's objects are hostile (each method a walk could call raises and says so), a list holds itself, a
    # generator is suspended, a million small objects: its holders are found all the same, none of its code runs.
    "torch_hostile": [
        Holder("owner.kept", "attribute", "list", STEPS, STEPS * _ACTIVATION),
        Holder("table[<Hostile>]", "dict_entry", "list", STEPS, STEPS * _ACTIVATION),
        Holder("loop[1]", "list", "list", STEPS, STEPS * _ACTIVATION),
        Holder("paused.held", "frame_local", "list", STEPS, STEPS * _ACTIVATION),
    ],
    "jax_holders": [
        Holder("trainer.history", "attribute", "list", STEPS, STEPS * _ACTIVATION),
        Holder("GLOBAL_LOG", "global", "list", STEPS, STEPS * _ACTIVATION),
    ],
}
GLOBAL_LOG: list[Any] = []


def companion(cap: Any) -> dict[str, Any]:
    (session,) = cap.sessions
    return {"doc": json.loads(session.recordings.read_text()), "warnings": cap.warnings}


def torch_holders(logdir: str) -> dict[str, Any]:
    import torch

    import tb_leakfinder

    class ScaledSiLU(torch.autograd.Function):
        cache: list[Any] = []  # noqa: RUF012 - the class attribute the test is about

        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ScaledSiLU.cache.append(x * 2)
            return x * torch.sigmoid(x)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return grad

    def rotary_table(step: int, _memo: dict[int, Any] = {}) -> Any:  # noqa: B006 - the mutable default under test
        _memo[step] = torch.ones(HIDDEN, HIDDEN)
        return _memo[step]

    def make_remember() -> Any:
        seen: list[Any] = []

        def remember(t: Any) -> None:
            seen.append(t + 1)

        return remember

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(FEATURES, HIDDEN)
            self.heads = torch.nn.ModuleList()
            self.register_buffer("grown", torch.zeros(0, HIDDEN))

    class Trainer:
        def __init__(self) -> None:
            self.kept: list[Any] = []

    torch.manual_seed(0)
    model = Net()
    trainer = Trainer()
    metrics: dict[str, list[Any]] = {"loss_map": []}
    remember = make_remember()
    history: list[Any] = []
    buckets: list[list[Any]] = [[]]
    x = torch.randn(BATCH, FEATURES)
    w = torch.randn(HIDDEN, HIDDEN, requires_grad=True)
    total: Any = 0
    with tb_leakfinder.capture(logdir, start=1, count=STEPS, framework="torch") as cap:
        for step in range(1 + STEPS):
            with cap.step(step):
                model.heads.append(torch.nn.Linear(FEATURES, HIDDEN))
                with torch.no_grad():
                    h = model.fc(x)
                    model.grown = torch.cat([model.grown, h[:ROWS]])
                ScaledSiLU.apply(h)
                metrics["loss_map"].append(h * 3)
                rotary_table(step)
                remember(h)
                history.append(h * 4)
                GLOBAL_LOG.append(h * 5)
                trainer.kept.append(h * 6)
                buckets[0].append(h * 7)
                total = total + torch.tanh(h @ w).sum()
                del h
    return companion(cap)


def tensorflow_holders(logdir: str) -> dict[str, Any]:
    import tensorflow as tf

    import tb_leakfinder

    tf.random.set_seed(0)
    snapshots: list[Any] = []
    metrics: dict[str, list[Any]] = {"acts": []}
    w = tf.Variable(tf.random.normal([FEATURES, HIDDEN]))
    x = tf.random.normal([BATCH, FEATURES])
    with tb_leakfinder.capture(logdir, start=1, count=STEPS, framework="tensorflow") as cap:
        for step in range(1 + STEPS):
            with cap.step(step):
                h = tf.nn.relu(tf.matmul(x, w))
                snapshots.append(tf.Variable(w * 1.0))
                metrics["acts"].append(h * 0.5)
                del h
    return companion(cap)


def jax_holders(logdir: str) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    import tb_leakfinder

    class Trainer:
        def __init__(self) -> None:
            self.history: list[Any] = []

    @jax.jit
    def forward(x: Any, w: Any) -> Any:
        return jnp.tanh(x @ w)

    trainer = Trainer()
    x = jnp.ones((BATCH, FEATURES))
    w = jnp.ones((FEATURES, HIDDEN)) * 0.01
    with tb_leakfinder.capture(logdir, start=1, count=STEPS, framework="jax") as cap:
        for step in range(1 + STEPS):
            with cap.step(step):
                h = forward(x, w)
                trainer.history.append(h * 0.5)
                GLOBAL_LOG.append(h * 2)
                del h
    return companion(cap)


CALLED: list[str] = []  # the hostile methods something called


def _hostile_method(name: str) -> Any:
    def method(self: object, *args: object, **kwargs: object) -> Any:
        CALLED.append(name)
        raise RuntimeError(f"{name} of a hostile object")

    return method


_HOSTILE_NAMES = "__getattr__ __getattribute__ __setattr__ __eq__ __ne__ __repr__ __str__ __len__ __iter__ __bool__ __dir__"


def _hostile_class() -> type:
    armed: list[bool] = []

    def hash_once(self: object) -> int:
        if armed:
            CALLED.append("__hash__")
            raise RuntimeError("__hash__ of a hostile object")
        return id(self)

    def meta_method(name: str) -> Any:
        def method(cls: type, *args: object) -> Any:
            CALLED.append(f"metaclass {name}")
            raise RuntimeError(name)

        return method

    meta = type("HostileMeta", (type,), {n: meta_method(n) for n in ("__eq__", "__instancecheck__", "__subclasscheck__")})
    meta.__hash__ = lambda cls: id(cls)  # type: ignore[method-assign,assignment]
    namespace: dict[str, Any] = {name: _hostile_method(name) for name in _HOSTILE_NAMES.split()}
    namespace.update(__hash__=hash_once, value=property(_hostile_method("a property")), arm=lambda: armed.append(True))
    return meta("Hostile", (), namespace)


def _paused(count: int, make: Any) -> Any:
    held = [make() for _ in range(count)]
    yield len(held)


def torch_hostile(logdir: str) -> dict[str, Any]:
    import torch

    import tb_leakfinder
    from tb_leakfinder.capture.holders.finder import HolderFinder

    hostile = _hostile_class()
    crowd = [[i] for i in range(1_000_000)]  # a million small objects the walk must read through
    owner, key = hostile(), hostile()
    object.__setattr__(owner, "kept", [])
    table: dict[Any, list[Any]] = {key: []}
    hostile.__dict__["arm"]()
    loop: list[Any] = [None, []]
    loop[0] = loop
    x = torch.ones(BATCH, HIDDEN)
    paused = None
    with tb_leakfinder.capture(logdir, start=1, count=STEPS, framework="torch") as cap:
        for step in range(1 + STEPS):
            with cap.step(step):
                object.__getattribute__(owner, "kept").append(x * 2)
                next(iter(dict.values(table))).append(x * 3)
                loop[1].append(x * 4)
                if step == STEPS:
                    paused = _paused(STEPS, lambda: x * 5)
                    next(paused)
    # A walk stopped at once by its time bound: what it found is written as partial.
    bounded = HolderFinder("torch", torch, time_limit_s=0.0)
    with tb_leakfinder.capture(f"{logdir}/bounded", start=1, count=STEPS, framework="torch", recorders=[bounded]) as fast:
        for step in range(1 + STEPS):
            with fast.step(step):
                object.__getattribute__(owner, "kept").append(x * 6)
    del crowd, paused
    return {**companion(cap), "bounded": companion(fast), "called": CALLED}


def main() -> None:
    program, logdir = sys.argv[1], sys.argv[2]
    out = globals()[program](logdir)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
