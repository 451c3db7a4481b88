"""Capture real TensorFlow CPU profiles with no step annotations, for the step-source tests.

    python tests/data/capture_tf_unmarked.py [--mode keras_fit|tf_function] [--logdir DIR]

Without --mode it captures both, each in a fresh process. Neither program marks
its steps (no `step_num`, no `_r`): tb_leakfinder has to find them itself.
- `keras_fit`: `model.fit` over BATCHES batches whose callback keeps one
  [BATCH,10] float tensor (the model's logits for a probe batch) per batch.
  TF's allocator names the buffer after the op that made it, `BiasAdd`
  (tf.identity hands the same buffer on).
- `tf_function`: a custom loop calling one `tf.function` train step STEPS
  times; the loop keeps each step's [BATCH,HIDDEN] hidden activations. Relu
  runs in place in the buffer `MatMul` allocated, so that is the op named.

Each run gets `<logdir>/<run>/plugins/profile/<session>/<host>.xplane.pb` and
`<logdir>/<run>/capture.json`, which states what it leaks, from the constants.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

# TF emits memory events on CPU only from its BFC allocator; it reads this at import.
os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BATCH = 64
IN_DIM = 128
HIDDEN = 256
OUT_DIM = 10
BATCHES = 40  # keras_fit: batches in the one epoch captured
STEPS = 30  # tf_function: calls of the train step captured
HERE = pathlib.Path(__file__).resolve().parent
MODES = ("keras_fit", "tf_function")


def _leaks(op: str, shape: list[int], steps: int) -> dict:
    """What capture.json says: one float32 tensor of `shape`, made by `op`, kept per step."""
    return {
        "leaked_bytes_per_step": 4 * shape[0] * shape[1],
        "leaked_op": op,
        "leaked_shape": f"[{shape[0]},{shape[1]}]",
        "leaked_dtype": "float",
        "steps": steps,
    }


def keras_fit(run_dir: pathlib.Path) -> dict:
    import tensorflow as tf

    tf.random.set_seed(0)
    x = tf.random.normal([BATCH * BATCHES, IN_DIM])
    y = tf.random.uniform([BATCH * BATCHES], maxval=OUT_DIM, dtype=tf.int32)
    model = tf.keras.Sequential(
        [tf.keras.Input([IN_DIM]), tf.keras.layers.Dense(HIDDEN, activation="relu"), tf.keras.layers.Dense(OUT_DIM)]
    )
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    probe = x[:BATCH]
    kept: list[tf.Tensor] = []

    class KeepLogits(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            kept.append(tf.identity(model(probe, training=False)))

    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # warm-up: tracing and first allocations
    tf.profiler.experimental.start(str(run_dir))
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[KeepLogits()])
    tf.profiler.experimental.stop()
    return _leaks("BiasAdd", [BATCH, OUT_DIM], BATCHES)


def tf_function(run_dir: pathlib.Path) -> dict:
    import tensorflow as tf

    tf.random.set_seed(0)
    x = tf.random.normal([BATCH, IN_DIM])
    w1 = tf.Variable(tf.random.normal([IN_DIM, HIDDEN], stddev=0.05))
    w2 = tf.Variable(tf.random.normal([HIDDEN, OUT_DIM], stddev=0.05))
    optimizer = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.matmul(x, w1))
            loss = tf.reduce_mean(tf.matmul(hidden, w2))
        optimizer.apply_gradients(zip(tape.gradient(loss, [w1, w2]), [w1, w2], strict=True))
        return hidden

    kept = [train_step()]  # warm-up: tracing
    tf.profiler.experimental.start(str(run_dir))
    for _ in range(STEPS):
        kept.append(train_step())
    tf.profiler.experimental.stop()
    return _leaks("MatMul", [BATCH, HIDDEN], STEPS)


def capture(run_dir: pathlib.Path, mode: str) -> None:
    import tensorflow as tf

    info = {"keras_fit": keras_fit, "tf_function": tf_function}[mode](run_dir)
    for extra in (run_dir / "plugins" / "profile").glob("*/*"):
        if not extra.name.endswith(".xplane.pb"):
            extra.unlink()
    info["tensorflow"] = tf.__version__
    (run_dir / "capture.json").write_text(json.dumps(info, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES)
    parser.add_argument("--logdir", type=pathlib.Path, default=HERE / "tf_unmarked")
    args = parser.parse_args()
    for mode in [args.mode] if args.mode else MODES:
        if args.mode is None:
            subprocess.run([sys.executable, __file__, "--mode", mode, "--logdir", str(args.logdir)], check=True)
            continue
        run_dir = args.logdir / mode
        shutil.rmtree(run_dir, ignore_errors=True)
        capture(run_dir, mode)


if __name__ == "__main__":
    main()
