"""Capture the TensorFlow demo profiles: `tf_leak` and `tf_fixed`.

Run with a Python that has tensorflow-cpu (not the project's Python):

    /work/venv-tf/bin/python demo_logs/capture_tf.py [--mode leak|fixed] [--logdir DIR]

Without --mode it captures both runs, each in a fresh process so that one
run's allocator state (peak, pool) does not carry into the other. Each run
gets `<logdir>/<run>/plugins/profile/<session>/<host>.xplane.pb` plus
`<logdir>/<run>/capture.json`, which states what the loop leaks on purpose.
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

STEPS = 25
BATCH = 128
IN_DIM = 256
HIDDEN = 1024
OUT_DIM = 10
LEAK_SCALE = 0.5  # the kept tensor is hidden * LEAK_SCALE, made by tf.multiply
LEAK_OP = "Mul"  # the TF op type tf.multiply runs, which the allocation's tf_op stat names
LEAK_REGION = "output"
LEAK_DTYPE = "float"  # TF DataType name of the kept tensor (DT_FLOAT)
LEAK_BYTES_PER_STEP = BATCH * HIDDEN * 4
LEAK_SHAPE = f"[{BATCH},{HIDDEN}]"

HERE = pathlib.Path(__file__).resolve().parent
RUNS = {"leak": "tf_leak", "fixed": "tf_fixed"}


def capture(run_dir: pathlib.Path, leak: bool) -> None:
    import tensorflow as tf

    tf.random.set_seed(0)
    x = tf.random.normal([BATCH, IN_DIM])
    y = tf.random.uniform([BATCH], maxval=OUT_DIM, dtype=tf.int32)
    w1 = tf.Variable(tf.random.normal([IN_DIM, HIDDEN], stddev=0.05))
    b1 = tf.Variable(tf.zeros([HIDDEN]))
    w2 = tf.Variable(tf.random.normal([HIDDEN, OUT_DIM], stddev=0.05))
    b2 = tf.Variable(tf.zeros([OUT_DIM]))
    params = [w1, b1, w2, b2]
    optimizer = tf.keras.optimizers.SGD(0.01)
    kept: list[tf.Tensor] = []

    def step() -> tf.Tensor:
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(hidden, w2) + b2
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        optimizer.apply_gradients(zip(tape.gradient(loss, params), params, strict=True))
        return hidden

    # A warm-up step outside the window, so one-off setup allocations are not in the profile.
    step()
    tf.profiler.experimental.start(str(run_dir))
    for i in range(STEPS):
        with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
            hidden = step()
            if leak:
                kept.append(tf.multiply(hidden, LEAK_SCALE))
    tf.profiler.experimental.stop()

    for extra in (run_dir / "plugins" / "profile").glob("*/*"):
        if not extra.name.endswith(".xplane.pb"):
            extra.unlink()
    info = {
        "leaked_bytes_per_step": LEAK_BYTES_PER_STEP if leak else 0,
        "leaked_op": LEAK_OP,
        "leaked_shape": LEAK_SHAPE,
        "leaked_region": LEAK_REGION,
        "leaked_dtype": LEAK_DTYPE,
        "steps": STEPS,
        "leaks": leak,
        "tensorflow": tf.__version__,
    }
    (run_dir / "capture.json").write_text(json.dumps(info, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=sorted(RUNS))
    parser.add_argument("--logdir", type=pathlib.Path, default=HERE)
    args = parser.parse_args()
    modes = [args.mode] if args.mode else sorted(RUNS)
    for mode in modes:
        run_dir = args.logdir / RUNS[mode]
        if args.mode is None:
            subprocess.run(
                [sys.executable, __file__, "--mode", mode, "--logdir", str(args.logdir)],
                check=True,
            )
            continue
        shutil.rmtree(run_dir, ignore_errors=True)
        capture(run_dir, leak=mode == "leak")


if __name__ == "__main__":
    main()
