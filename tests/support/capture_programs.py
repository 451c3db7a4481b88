"""Programs that record their profile with tb_leakfinder.capture; tests/integration/test_capture.py runs each in a process.

    python tests/support/capture_programs.py PROGRAM LOGDIR

prints one JSON object: the report of the capture plus what the program saw (warnings, modules loaded).
Each runs in its own process because TensorFlow reads TF_CPU_ALLOCATOR_USE_BFC at import and because
the frameworks' native libraries are kept out of the test process; `run_script` starts such a process.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import warnings

BATCH, IN_DIM, HIDDEN = 64, 128, 512
LEAK_SHAPE = f"[{BATCH},{HIDDEN}]"
LEAK_BYTES_PER_STEP = BATCH * HIDDEN * 4


def run_script(
    script: pathlib.Path, args: list[str], bfc: bool = True, keras_backend: str = "tensorflow", onednn: bool | None = None
) -> dict:
    """Runs a program (`python SCRIPT ARGS…`, the repository's root on its path) that prints one JSON object last.

    `bfc` sets TF_CPU_ALLOCATOR_USE_BFC=true (else unset); `onednn` sets TF_ENABLE_ONEDNN_OPTS (None: as this process has it).
    """
    root = pathlib.Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "TF_CPP_MIN_LOG_LEVEL": "2", "KERAS_BACKEND": keras_backend}
    env.pop("TF_CPU_ALLOCATOR_USE_BFC", None)
    if bfc:
        env["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
    if onednn is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def tf_model():
    import tensorflow as tf

    tf.random.set_seed(0)
    x = tf.random.normal([BATCH, IN_DIM])
    w = tf.Variable(tf.random.normal([IN_DIM, HIDDEN], stddev=0.05))
    optimizer = tf.keras.optimizers.SGD(0.01)

    def step() -> tf.Tensor:
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.matmul(x, w))
            loss = tf.reduce_mean(hidden)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
        return hidden

    return tf, step


def tf_leak(logdir: str) -> dict:
    """A loop that keeps one [BATCH, HIDDEN] float tensor (made by tf.multiply) per step; steps 3..14 are captured."""
    import tb_leakfinder

    tf, step = tf_model()
    kept = []
    with tb_leakfinder.capture(logdir, start=3, count=12) as cap:
        for i in range(20):
            with cap.step(i):
                kept.append(tf.multiply(step(), 0.5))
    return {
        "report": cap.report(),
        "warnings": cap.warnings,
        "steps": cap.steps,
        "framework": cap.framework,
        "session_dir": str(cap.session_dir),
    }


def tf_fixed(logdir: str) -> dict:
    """The same loop without the leak; then captures (without and with the Python tracer) while another profile is taken."""
    import tb_leakfinder
    from tb_leakfinder.capture import CaptureError

    tf, step = tf_model()
    with tb_leakfinder.capture(logdir, start=3, count=12) as cap:
        for i in range(20):
            with cap.step(i):
                tf.multiply(step(), 0.5)
    tf.profiler.experimental.start(f"{logdir}/other")
    busy = busy_tracer = None
    try:
        with tb_leakfinder.capture(f"{logdir}/second") as second, second.step(0):
            step()
    except CaptureError as exc:
        busy = exc.message
    try:
        with tb_leakfinder.capture(f"{logdir}/third", python_tracer=True) as third, third.step(0):
            step()
    except CaptureError as exc:
        busy_tracer = exc.message
    tf.profiler.experimental.stop()
    return {"report": cap.report(), "warnings": cap.warnings, "steps": cap.steps, "busy": busy, "busy_tracer": busy_tracer}


def tf_warning(logdir: str) -> dict:
    """TensorFlow without the BFC allocator: the capture warns when it starts."""
    import tb_leakfinder

    _, step = tf_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tb_leakfinder.capture(logdir, count=3) as cap:
            for i in range(3):
                with cap.step(i):
                    step()
    return {
        "report": cap.report(),
        "warnings": cap.warnings,
        "caught": [f"{w.category.__name__}: {w.message}" for w in caught],
    }


def tf_late_bfc(logdir: str) -> dict:
    """TF_CPU_ALLOCATOR_USE_BFC set only once TensorFlow has made its CPU device: too late, so the warning says so."""
    import os

    import tensorflow as tf

    tf.ones([4])  # TensorFlow makes its CPU device, and with it the CPU allocator
    os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
    return tf_warning(logdir)


def jax_static(logdir: str) -> dict:
    """A jitted step that returns its large activation by mistake (a maybe-live-out buffer)."""
    import jax
    import jax.numpy as jnp

    import tb_leakfinder

    @jax.jit
    def train_step(w, x):
        h = jax.nn.relu(x @ w)
        return w - 0.01 * (x.T @ h), h

    w = jnp.ones((IN_DIM, HIDDEN)) * 0.01
    x = jnp.ones((2048, IN_DIM))
    with tb_leakfinder.capture(logdir, start=1, count=4) as cap:
        for i in range(6):
            with cap.step(i):
                w, h = train_step(w, x)
                h.block_until_ready()
    return {
        "report": cap.report(),
        "warnings": cap.warnings,
        "steps": cap.steps,
        "framework": cap.framework,
        "tensorflow_loaded": "tensorflow" in sys.modules,
        "session_dir": str(cap.session_dir),
    }


def host_step(train_step, w, x):
    """The Python around one jitted step: the Python tracer names it `$capture_programs.py:<this line> host_step`."""
    w, h = train_step(w, x)
    h.block_until_ready()
    return w


def jax_python_tracer(logdir: str) -> dict:
    """A jitted step called from a Python function of this file, captured with python_tracer=True (steps 1..3)."""
    import jax
    import jax.numpy as jnp

    import tb_leakfinder

    @jax.jit
    def train_step(w, x):
        return w * 0.99, x @ w

    w, x = jnp.ones((IN_DIM, IN_DIM)), jnp.ones((BATCH, IN_DIM))
    with tb_leakfinder.capture(logdir, start=1, count=3, python_tracer=True) as cap:
        for i in range(5):
            with cap.step(i):
                w = host_step(train_step, w, x)
    return {
        "report": cap.report(),
        "steps": cap.steps,
        "session_dir": str(cap.session_dir),
        "host_step": f"$capture_programs.py:{host_step.__code__.co_firstlineno} host_step",
    }


def keras_fit(logdir: str) -> dict:
    """`fit` over 3 epochs of 4 batches with LeakCapture on batches 2..7; another callback keeps a tensor per batch."""
    import keras
    import numpy as np
    import tensorflow as tf

    from tb_leakfinder.capture.keras_callback import LeakCapture

    kept = []

    class Hoarder(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            kept.append(tf.random.normal([BATCH, HIDDEN]))

    model = keras.Sequential([keras.Input((IN_DIM,)), keras.layers.Dense(HIDDEN, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4 * BATCH, IN_DIM)).astype("float32"), rng.normal(size=(4 * BATCH, 1)).astype("float32")
    capture = LeakCapture(logdir, start_batch=2, num_batches=6)
    model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0, callbacks=[capture, Hoarder()])
    return {"report": capture.report(), "warnings": capture.capture.warnings, "steps": capture.capture.steps}


def keras_jax_fit(logdir: str) -> dict:
    """`fit` on the JAX backend: LeakCapture profiles JAX, whose compiled train step gives the static view."""
    import keras
    import numpy as np

    from tb_leakfinder.capture.keras_callback import LeakCapture

    model = keras.Sequential([keras.Input((IN_DIM,)), keras.layers.Dense(HIDDEN, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4 * BATCH, IN_DIM)).astype("float32"), rng.normal(size=(4 * BATCH, 1)).astype("float32")
    capture = LeakCapture(logdir, start_batch=1, num_batches=3)
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[capture])
    return {
        "report": capture.report(),
        "framework": capture.capture.framework,
        "steps": capture.capture.steps,
        "backend": keras.backend.backend(),
    }


def no_framework(logdir: str) -> dict:
    import tb_leakfinder
    from tb_leakfinder.errors import LeakfinderError

    try:
        tb_leakfinder.capture(logdir)
        error = None
    except LeakfinderError as exc:
        error = exc.message
    return {"error": error, "loaded": sorted(m for m in ("tensorflow", "jax", "keras") if m in sys.modules)}


PROGRAMS = {
    f.__name__: f
    for f in (tf_leak, tf_fixed, tf_warning, tf_late_bfc, jax_static, jax_python_tracer, keras_fit, keras_jax_fit, no_framework)
}

if __name__ == "__main__":
    print(json.dumps(PROGRAMS[sys.argv[1]](sys.argv[2])))
