"""Real TensorFlow captures with the Python tracer on, whose leak is on a known line of this file.

    from tests.support.python_tracer_captures import record
    captures = record(tmp_path)  # about 10 s: one process imports TensorFlow and Keras
    captures.tf_eager.session_dir, captures.tf_eager.leak_site  # "python_tracer_captures.py:<line>"

`record(directory)` runs this file as a program, `python tests/support/python_tracer_captures.py DIRECTORY`
(TF_CPU_ALLOCATOR_USE_BFC=true, the Keras backend TensorFlow), which records two sessions with `python_tracer=True`:

- `directory/tf_eager`: an eager loop of STEPS steps, STEPS_CAPTURED of them captured (steps 2..7), whose
  `leaky_step` keeps one `tf.multiply` output of LEAK_SHAPE (LEAK_BYTES_PER_STEP) per step in a Python list;
- `directory/keras_fit`: `fit` over 2 epochs of 4 batches with `LeakCapture` on batches 2..7, where the
  callback `Hoarder`'s `on_train_batch_begin` keeps one `tf.random.normal` of LEAK_SHAPE per batch.

Each `Recorded` names its session folder (one `<host>.xplane.pb` holding the memory events, the `train` step
markers and the Python events, all on the /host:CPU line of the main thread), the line of the statement that
leaks (`leak_site`, the line an attribution should name) and the Python event of the function around it
(`leak_function`: the tracer names a function by its first line, `$python_tracer_captures.py:<def line> name`),
which appears once per captured step. `python_events(session_dir)` counts the Python events of a session.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import pathlib
import sys
from collections.abc import Callable
from typing import Any

from tests.support.capture_programs import run_script

BATCH, HIDDEN = 64, 512
LEAK_SHAPE = f"[{BATCH},{HIDDEN}]"
LEAK_BYTES_PER_STEP = BATCH * HIDDEN * 4
STEPS, FIRST_STEP, STEPS_CAPTURED = 8, 2, 6
LEAK_MARK = "# the leak"
BASENAME = pathlib.Path(__file__).name


@dataclasses.dataclass(frozen=True)
class Recorded:
    """One capture: its session folder, the `file:line` of the leaking statement and the Python event around it."""

    session_dir: pathlib.Path
    leak_site: str
    leak_function: str
    steps: list[int]


@dataclasses.dataclass(frozen=True)
class PythonTracerCaptures:
    tf_eager: Recorded
    keras_fit: Recorded
    warnings: list[str]  # the CaptureWarnings of both captures (none where BFC is on)


def leaky_step(kept: list[Any], tf: Any, x: Any) -> None:
    """One eager step: a temporary freed at once, and one tensor kept for good."""
    hidden = tf.nn.relu(x)
    kept.append(tf.multiply(hidden, 0.5))  # the leak


def on_train_batch_begin(self: Any, batch: int, logs: Any = None) -> None:
    """The Keras callback's hook (Hoarder's, made in the program): one tensor kept per batch."""
    self.kept.append(self.tf.random.normal([BATCH, HIDDEN]))  # the leak


def _leak_line(function: Callable[..., Any]) -> int:
    lines, first = inspect.getsourcelines(function)
    (offset,) = [i for i, line in enumerate(lines) if line.rstrip().endswith(LEAK_MARK)]
    return first + offset


def _recorded(function: Callable[..., Any], session_dir: str, steps: list[int]) -> Recorded:
    return Recorded(
        session_dir=pathlib.Path(session_dir),
        leak_site=f"{BASENAME}:{_leak_line(function)}",
        leak_function=f"${BASENAME}:{function.__code__.co_firstlineno} {function.__name__}",
        steps=steps,
    )


def record(directory: str | pathlib.Path) -> PythonTracerCaptures:
    """Records both captures into `directory` (in a process of their own) and says where each leaks."""
    out = run_script(pathlib.Path(__file__), [str(directory)])
    return PythonTracerCaptures(
        tf_eager=_recorded(leaky_step, out["tf_eager"], out["tf_eager_steps"]),
        keras_fit=_recorded(on_train_batch_begin, out["keras_fit"], out["keras_fit_steps"]),
        warnings=out["warnings"],
    )


def python_events(session_dir: str | pathlib.Path) -> dict[str, int]:
    """How many times each Python event (`$…`) occurs on the /host:CPU plane of a session's profiles."""
    from tb_leakfinder import proto

    counts: dict[str, int] = {}
    for path in sorted(pathlib.Path(session_dir).glob("*.xplane.pb")):
        for plane in proto.XSpace().FromString(path.read_bytes()).planes:
            if plane.name != "/host:CPU":
                continue
            for line in plane.lines:
                for event in line.events:
                    name = plane.event_metadata[event.metadata_id].name
                    if name.startswith("$"):
                        counts[name] = counts.get(name, 0) + 1
    return counts


def _record_in_process(directory: str) -> dict[str, Any]:
    import keras
    import numpy as np
    import tensorflow as tf

    import tb_leakfinder
    from tb_leakfinder.capture.keras_callback import LeakCapture

    kept: list[Any] = []
    x = tf.random.normal([BATCH, HIDDEN])
    with tb_leakfinder.capture(f"{directory}/tf_eager", start=FIRST_STEP, count=STEPS_CAPTURED, python_tracer=True) as cap:
        for i in range(STEPS):
            with cap.step(i):
                leaky_step(kept, tf, x)

    model = keras.Sequential([keras.Input((HIDDEN,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=(4 * BATCH, HIDDEN)).astype("float32"), rng.normal(size=(4 * BATCH, 1)).astype("float32")
    hoarder = type("Hoarder", (keras.callbacks.Callback,), {"on_train_batch_begin": on_train_batch_begin, "kept": kept, "tf": tf})
    callback = LeakCapture(f"{directory}/keras_fit", start_batch=2, num_batches=6, python_tracer=True)
    model.fit(xs, ys, batch_size=BATCH, epochs=2, verbose=0, callbacks=[callback, hoarder()])
    return {
        "tf_eager": str(cap.session_dir),
        "tf_eager_steps": cap.steps,
        "keras_fit": str(callback.capture.session_dir),
        "keras_fit_steps": callback.capture.steps,
        "warnings": cap.warnings + callback.capture.warnings,
    }


if __name__ == "__main__":
    print(json.dumps(_record_in_process(sys.argv[1])))
