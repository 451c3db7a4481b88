"""Programs that record their profile with tb_leakfinder.capture; tests/integration/test_capture.py runs each in a process.

    python tests/support/capture_programs.py PROGRAM LOGDIR

prints one JSON object: the report of the capture plus what the program saw (warnings, modules loaded).
Each runs in its own process because TensorFlow reads TF_CPU_ALLOCATOR_USE_BFC at import and because
the frameworks' native libraries are kept out of the test process; `run_script` starts such a process.

    python tests/support/capture_programs.py served_job tensorflow|jax leak|clean

is a job that serves its profiler on a free port (printed first, as {"port": N}) and trains for at most
SERVED_JOB_SECONDS; `served_job(framework, leak)` runs one, and `watched_tf_job(directory, leak)` watches a
TensorFlow one with `tb-leakfinder watch` (WATCH_ARGS) into `directory` and says what it wrote (`WatchedJob`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import select
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[2]
BATCH, IN_DIM, HIDDEN = 64, 128, 512
LEAK_SHAPE = f"[{BATCH},{HIDDEN}]"
LEAK_BYTES_PER_STEP = BATCH * HIDDEN * 4


def run_script(
    script: pathlib.Path, args: list[str], bfc: bool = True, keras_backend: str = "tensorflow", onednn: bool | None = None
) -> dict:
    """Runs a program (`python SCRIPT ARGS…`, the repository's root on its path) that prints one JSON object last.

    `bfc` sets TF_CPU_ALLOCATOR_USE_BFC=true (else unset); `onednn` sets TF_ENABLE_ONEDNN_OPTS (None: as this process has it).
    """
    env = program_env(bfc, keras_backend, onednn)
    done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def need(module: str) -> None:
    """Skips the test without `module` installed, unless TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI), where it fails."""
    import importlib.util

    import pytest

    if importlib.util.find_spec(module) is None:
        if os.environ.get("TB_LEAKFINDER_REQUIRE_FRAMEWORKS") == "1":
            pytest.fail(f"{module} is not installed, and TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1")
        pytest.skip(f"{module} is not installed (pip install '.[test]')")


def program_env(bfc: bool = True, keras_backend: str = "tensorflow", onednn: bool | None = None) -> dict[str, str]:
    """The environment of a program of this file (see run_script), the repository's root on its path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2", "KERAS_BACKEND": keras_backend}
    env.pop("TF_CPU_ALLOCATOR_USE_BFC", None)
    if bfc:
        env["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
    if onednn is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = "1" if onednn else "0"
    return env


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


def _fit(callback, epochs: int, hoard: bool = True, more: tuple = ()) -> None:
    """`fit` of a small model over `epochs` epochs of 4 batches with `callback` (and `more`); with `hoard`, another
    callback keeps one TensorFlow tensor of LEAK_SHAPE per batch."""
    import keras
    import numpy as np

    callbacks = [callback, *more]
    if hoard:
        import tensorflow as tf

        kept = []

        class Hoarder(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                kept.append(tf.random.normal([BATCH, HIDDEN]))

        callbacks.append(Hoarder())
    model = keras.Sequential([keras.Input((IN_DIM,)), keras.layers.Dense(HIDDEN, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4 * BATCH, IN_DIM)).astype("float32"), rng.normal(size=(4 * BATCH, 1)).astype("float32")
    model.fit(x, y, batch_size=BATCH, epochs=epochs, verbose=0, callbacks=callbacks)


def keras_fit(logdir: str) -> dict:
    """`fit` over 3 epochs of 4 batches with LeakCapture on batches 2..7; another callback keeps a tensor per batch."""
    from tb_leakfinder.capture.keras_callback import LeakCapture

    capture = LeakCapture(logdir, start_batch=2, num_batches=6)
    _fit(capture, epochs=3)
    return {"report": capture.report(), "warnings": capture.capture.warnings, "steps": capture.capture.steps}


def keras_jax_fit(logdir: str) -> dict:
    """`fit` on the JAX backend: LeakCapture profiles JAX, whose compiled train step gives the static view."""
    import keras

    from tb_leakfinder.capture.keras_callback import LeakCapture

    capture = LeakCapture(logdir, start_batch=1, num_batches=3)
    _fit(capture, epochs=1, hoard=False)
    return {
        "report": capture.report(),
        "framework": capture.capture.framework,
        "steps": capture.capture.steps,
        "backend": keras.backend.backend(),
    }


def keras_torch_fit(logdir: str) -> dict:
    """`fit` over 2 epochs of 4 batches on the PyTorch backend, LeakCapture on batches 1..6; another callback keeps
    a torch tensor of LEAK_SHAPE per batch (`hoard_torch`)."""
    import keras
    import torch

    from tb_leakfinder.capture.keras_callback import LeakCapture

    kept = []

    class Hoarder(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            hoard_torch(torch, kept)

    capture = LeakCapture(logdir, start_batch=1, num_batches=6)
    _fit(capture, epochs=2, hoard=False, more=(Hoarder(),))
    return {
        "report": capture.report(),
        "framework": capture.capture.framework,
        "steps": capture.capture.steps,
        "backend": keras.backend.backend(),
    }


def hoard_torch(torch, kept: list) -> None:
    kept.append(torch.ones(BATCH, HIDDEN))


def no_framework(logdir: str) -> dict:
    import tb_leakfinder
    from tb_leakfinder.errors import LeakfinderError

    try:
        tb_leakfinder.capture(logdir)
        error = None
    except LeakfinderError as exc:
        error = exc.message
    return {"error": error, "loaded": sorted(m for m in ("tensorflow", "jax", "keras", "torch") if m in sys.modules)}


def tf_periodic(logdir: str) -> dict:
    """The leaking loop over 17 steps with capture(start=2, count=3, every=5): sessions of steps 2..4, 7..9, 12..14."""
    import tb_leakfinder

    tf, step = tf_model()
    kept = []
    with tb_leakfinder.capture(logdir, start=2, count=3, every=5) as cap:
        for i in range(17):
            with cap.step(i):
                kept.append(tf.multiply(step(), 0.5))
    return {
        "reports": cap.reports(),
        "report": cap.report(),
        "sessions": [str(s.path) for s in cap.sessions],
        "session_steps": [list(s.steps) for s in cap.sessions],
        "warnings": cap.warnings,
    }


def keras_periodic(logdir: str) -> dict:
    """`fit` over 3 epochs of 4 batches with LeakCapture(start_batch=1, num_batches=3, every_batches=4), a tensor kept
    per batch by another callback: sessions of batches 1..3, 5..7, 9..11."""
    from tb_leakfinder.capture.keras_callback import LeakCapture

    capture = LeakCapture(logdir, start_batch=1, num_batches=3, every_batches=4)
    _fit(capture, epochs=3)
    return {
        "reports": capture.reports(),
        "sessions": [str(s.path) for s in capture.capture.sessions],
        "session_steps": [list(s.steps) for s in capture.capture.sessions],
    }


def jax_memory_profiles(logdir: str) -> dict:
    """A jitted loop of 10 steps that keeps each step's output, with capture(start=1, count=3, memory_profile_every=3)."""
    import jax
    import jax.numpy as jnp

    import tb_leakfinder

    @jax.jit
    def train_step(w, x):
        return w * 0.99, x @ w

    w, x = jnp.ones((IN_DIM, IN_DIM)), jnp.ones((BATCH, IN_DIM))
    kept = []
    with tb_leakfinder.capture(logdir, start=1, count=3, memory_profile_every=3) as cap:
        for i in range(10):
            with cap.step(i):
                w, out = train_step(w, x)
                kept.append(out.block_until_ready())
    return {
        "memory_profiles": [str(p) for p in cap.memory_profiles],
        "sessions": [str(s.path) for s in cap.sessions],
        "session_steps": [list(s.steps) for s in cap.sessions],
    }


PROGRAMS = {
    f.__name__: f
    for f in (
        tf_leak,
        tf_fixed,
        tf_warning,
        tf_late_bfc,
        jax_static,
        jax_python_tracer,
        keras_fit,
        keras_jax_fit,
        keras_torch_fit,
        no_framework,
        tf_periodic,
        keras_periodic,
        jax_memory_profiles,
    )
}

# A served job: its loop ends by itself after this long (watched_tf_job ends it once the watch is done).
SERVED_JOB_SECONDS = 40.0
SERVED_STEP_PAUSE_S = 0.05  # between steps: some 15 to 20 steps a second
# The watch of watched_tf_job: 3 captures of 1 s, 5 s apart (about 11 s), given up after 50 s.
WATCH_ARGS = ("--every", "5s", "--duration", "1s", "--count", "3", "--timeout", "50s")
WATCH_COUNT = 3
# The slow leak of watched_tf_job(keep_every=SLOW_KEEP_EVERY): one Mul output kept every 50th step, watched in
# windows of some 80 steps (4.5 s), so that each window keeps one or two: too few to see it grow there.
SLOW_KEEP_EVERY = 50
SLOW_WATCH_ARGS = ("--every", "6s", "--duration", "4500ms", "--count", "3", "--timeout", "60s")


def served_step(kept: list, tf, x, leak: bool) -> None:
    """One step of a served TensorFlow job: a temporary freed at once and, with `leak`, one Mul output kept for good."""
    hidden = tf.nn.relu(x)
    out = tf.multiply(hidden, 0.5)
    if leak:
        kept.append(out)


def _served_job_main(framework: str, keep_every: int) -> None:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    kept: list = []
    if framework == "tensorflow":
        import tensorflow as tf

        tf.profiler.experimental.server.start(port)
        x = tf.random.normal([BATCH, HIDDEN])

        def step(i: int) -> None:
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                served_step(kept, tf, x, keep_every > 0 and i % keep_every == 0)

    else:
        import jax
        import jax.numpy as jnp

        jax.profiler.start_server(port)
        train_step = jax.jit(lambda w, x: (w * 0.99, x @ w))
        state = [jnp.ones((IN_DIM, IN_DIM)), jnp.ones((BATCH, IN_DIM))]

        def step(i: int) -> None:
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                state[0], out = train_step(*state)
                out.block_until_ready()
                if keep_every > 0 and i % keep_every == 0:
                    kept.append(out)

    step(0)  # warm up before anyone captures
    print(json.dumps({"port": port}), flush=True)
    end = time.monotonic() + SERVED_JOB_SECONDS
    i = 1
    while time.monotonic() < end:
        step(i)
        i += 1
        time.sleep(SERVED_STEP_PAUSE_S)


@contextlib.contextmanager
def served_job(framework: str, leak: bool = True, keep_every: int = 1) -> Iterator[int]:
    """A job of `framework` that serves its profiler, running while in the block: its port. With `leak`, it keeps
    its step's output every `keep_every` steps."""
    command = [sys.executable, __file__, "served_job", framework, str(keep_every if leak else 0)]
    with tempfile.TemporaryFile("w+") as log:  # a file, not a pipe: the job's logs never block it
        job = subprocess.Popen(command, env=program_env(), stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            ready, _, _ = select.select([job.stdout], [], [], 120)
            line = job.stdout.readline() if ready else ""
            if not line:
                job.kill()
                job.wait()
                log.seek(0)
                raise AssertionError(f"the served job did not start: {log.read()[-3000:]}")
            yield json.loads(line)["port"]
        finally:
            job.terminate()
            job.communicate(timeout=60)


def run_watch(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`tb-leakfinder watch ARGS` in a process of its own (this repository's tb_leakfinder)."""
    command = [sys.executable, "-m", "tb_leakfinder.views.cli", "watch", *args]
    return subprocess.run(command, env=program_env(), capture_output=True, text=True, timeout=timeout)


@dataclasses.dataclass(frozen=True)
class WatchedJob:
    """What `tb-leakfinder watch` wrote of a served TensorFlow job, and what that job really leaks."""

    logdir: pathlib.Path  # the watch's --logdir
    sessions: list[pathlib.Path]  # <logdir>/plugins/profile/<session>, oldest first (as their names sort)
    profiles: list[pathlib.Path]  # the one <host>_<port>.xplane.pb of each session, in the same order
    leak: bool
    leak_bytes_per_step: int  # the tensor bytes the job keeps each step: LEAK_BYTES_PER_STEP, or 0 when clean
    leak_op: str  # the op and shape of what it keeps ("Mul", "[64,512]"), float, an output
    leak_shape: str
    step_function: str  # the Python event of the job's step function, `$capture_programs.py:<line> served_step`
    watch: subprocess.CompletedProcess[str]  # the watch's exit status, stdout and stderr


def watched_tf_job(directory: str | os.PathLike[str], leak: bool = True, keep_every: int = 1) -> WatchedJob:
    """A TensorFlow CPU job (BFC) that keeps one [64,512] float tensor per step when `leak`, watched with
    `tb-leakfinder watch localhost:<port> --logdir DIRECTORY` and WATCH_ARGS: 3 sessions of about 1 s each
    (some 15 steps each), 5 s apart. About 17 s: the job starts, is watched for 11 s, and is ended.
    With `keep_every` > 1 it keeps one every that many steps, watched with SLOW_WATCH_ARGS (about 23 s)."""
    logdir = pathlib.Path(directory)
    with served_job("tensorflow", leak, keep_every) as port:
        args = WATCH_ARGS if keep_every == 1 else SLOW_WATCH_ARGS
        watch = run_watch(f"localhost:{port}", "--logdir", str(logdir), *args)
    sessions = sorted(p for p in (logdir / "plugins" / "profile").iterdir() if p.is_dir())
    return WatchedJob(
        logdir=logdir,
        sessions=sessions,
        profiles=[p for s in sessions for p in sorted(s.glob("*.xplane.pb"))],
        leak=leak,
        leak_bytes_per_step=LEAK_BYTES_PER_STEP // keep_every if leak else 0,
        leak_op="Mul",
        leak_shape=LEAK_SHAPE,
        step_function=f"${pathlib.Path(__file__).name}:{served_step.__code__.co_firstlineno} served_step",
        watch=watch,
    )


if __name__ == "__main__":
    if sys.argv[1] == "served_job":
        _served_job_main(sys.argv[2], int(sys.argv[3]))
    else:
        print(json.dumps(PROGRAMS[sys.argv[1]](sys.argv[2])))
