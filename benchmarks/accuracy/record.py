"""Record the leak accuracy benchmark's real TensorFlow CPU captures, one process per case.

    python benchmarks/accuracy/record.py                 # every case
    python benchmarks/accuracy/record.py late_onset ...  # some cases
    python benchmarks/accuracy/record.py --list          # the cases and what they leak

Each case is a small training-like eager loop (a batch gathered from a fixed
dataset, a MatMul/Relu/MatMul forward, a mean) whose temporaries are freed every
step, plus the one thing the case is about: a tensor kept in a Python list, a
rolling window, an LRU cache, a regrown history, a Keras callback... Every case
writes

    captures/<case>/plugins/profile/<session>/<host>.xplane.pb
    captures/<case>/truth.json

so `tb_leakfinder.analyze("benchmarks/accuracy/captures")` sees one run per
case. `truth.json` states what the loop leaks on purpose, computed from the
constants in this script, never from the profile; its `capture` object holds
facts measured from the file afterwards (event counts, allocator names, step
markers) as a sanity check, and is not truth.

TensorFlow reads its environment at import, so each case runs in a fresh
process that sets, before importing it:
- TF_CPU_ALLOCATOR_USE_BFC=true: without it TF on CPU records no memory events;
- TF_ENABLE_ONEDNN_OPTS=0: with oneDNN on (x86 Linux default) TF allocates
  through `mklcpu`, which records only large blocks;
- TF_CPP_MIN_LOG_LEVEL=2.
The recorder refuses a capture whose allocator is not TF's CPU BFC allocator.

What a case leaks is deterministic (fixed shapes, seeds and step counts); the
timestamps, the session folder and the host name are not.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import random
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
CAPTURES = HERE / "captures"

ENV = {"TF_CPU_ALLOCATOR_USE_BFC": "true", "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "2"}
BFC_ALLOCATOR = "bfc_cpu_allocator_for_gpu"  # TF's CPU BFC allocator, as its memory events name it

STEPS = 40
F32 = 4  # bytes of a float32

# The model every eager case trains: batch [BATCH, IN_DIM] -> MatMul/Relu [BATCH, HIDDEN] -> MatMul [BATCH, OUT_DIM].
BATCH, IN_DIM, HIDDEN, OUT_DIM = 128, 256, 256, 10
NUM_BATCHES = 4  # the dataset the batches are gathered from, made before the capture
KEPT_SHAPE = [BATCH, HIDDEN]  # tf.multiply(hidden, 0.5): Mul [128,256], 128 KiB
KEPT_BYTES = BATCH * HIDDEN * F32

EVERY_NTH = 5
LATE_ONSET = 20
REGROWN_SHAPE = [HIDDEN, HIDDEN]  # the Gram matrix of the hidden layer, appended to the history every step
DYNAMIC_ROWS = 32
DYNAMIC_SEED = 11  # chosen so that the least-squares rate of the kept bytes is within 0.3% of their mean
_DYNAMIC_RNG = random.Random(DYNAMIC_SEED)
DYNAMIC_COLUMNS = [64 * _DYNAMIC_RNG.randint(8, 32) for _ in range(STEPS)]  # n of step i: 512..2048
SECOND_SHAPE = [BATCH // 2, HIDDEN]  # tf.square(hidden[:64]): Square [64,256], 64 KiB
SMALL = {"batch": 512, "in_dim": 1024, "hidden": 1024}  # ~6 MiB of temporaries per step
SMALL_SHAPE = [16, 256]  # 16 KiB
SNAPSHOT_SHAPE = [IN_DIM, HIDDEN]  # the first layer's weights, snapshotted with tf.identity
KERAS_BATCHES, KERAS_BATCH = 30, 32
KERAS_KERNEL = [IN_DIM, HIDDEN]  # the first Dense layer's kernel
ROLLING = 5
LRU_CAPACITY, LRU_STEPS = 30, 45
SAWTOOTH = 8
FIXED_AT = 20
WARM_UP_STEPS = 3
OPTIMIZER_STEPS = 30
# The harder cases (each with STEPS steps).
LATE_ONSET_NEAR_END = 32  # kept from step 32 of 40 on: 8 steps of growth
EVERY_10TH = 10
SLOW_SHAPE = [4, HIDDEN]  # tf.multiply(hidden[:4], 0.5): Mul [4,256], 4 KiB
NOISE_COLUMNS = 1024  # the noisy temporaries: Mul [rows, 1024] float32, 512 KiB-4 MiB
NOISE_SEED = 5
_NOISE_RNG = random.Random(NOISE_SEED)
NOISE_ROWS = [[128 * _NOISE_RNG.randint(1, 8) for _ in range(3)] for _ in range(STEPS)]  # 3 freed Mul temporaries a step
NOISE_PENDING_EVERY, NOISE_PENDING_AT = 5, 2  # on steps 2, 7, ..., 37 one more Mul temporary lives until the next step
NOISE_PENDING_ROWS = [128 * _NOISE_RNG.randint(2, 8) for _ in range(STEPS)]  # its rows on those steps: 1-4 MiB
CACHE_CLEAR_EVERY = 8
CACHE_LEAK_SHAPE = [32, HIDDEN]  # tf.square(hidden[:32]): Square [32,256], 32 KiB
KV_LAYERS, KV_ROWS = 4, 32  # per layer a [32,256] projection (32 KiB) concatenated to its cache every step
LRU_LATE_CAPACITY = 34  # fills at step 33 of 40: flat for the last 6 steps
RAMP_ROWS = [32, 48, 64, 96, 128]  # the batch rows of steps 0-4, then 128 to the end
SAWTOOTH_INTERVALS = [7, 11, 6, 9]  # cleared before the append of steps 7, 18, 24 and 33
SAWTOOTH_CLEARS = [sum(SAWTOOTH_INTERVALS[: k + 1]) for k in range(len(SAWTOOTH_INTERVALS))]


@dataclass
class Case:
    name: str
    leak: bool
    description: str
    op: str | None = None  # the TF op the leaked memory's allocations name (their tf_op stat)
    shape: str | None = None  # its shape, or a pattern with * where it varies
    bytes_per_step: float | None = None  # tensor bytes per step over the steps where it leaks, all families
    onset_step: int | None = None
    rate_tolerance: float = 0.05
    step_source: str = "markers"  # markers, root_events or time_windows
    steps: int = STEPS
    families: list[dict[str, Any]] = field(default_factory=list)  # each leaking family: op, shape, bytes_per_step
    bytes_per_window: float | None = None  # time windows: about the rate per window (not exact: windows are by time)

    def truth(self) -> dict[str, Any]:
        out = {"case": self.name, **asdict(self)}
        del out["name"]
        if self.bytes_per_window is None:
            del out["bytes_per_window"]
        else:
            out["bytes_per_window_exact"] = False  # score.py shows it and does not score it
        return out


def _shape(dims: list[int]) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _bytes(dims: list[int]) -> int:
    size = F32
    for d in dims:
        size *= d
    return size


def _leak(name: str, op: str, dims: list[int] | str, per_step: float, description: str, **kw: Any) -> Case:
    shape = dims if isinstance(dims, str) else _shape(dims)
    family = {"op": op, "shape": shape, "bytes_per_step": per_step}
    return Case(name, True, description, op, shape, per_step, families=[family], **{"onset_step": 0, **kw})


_DYNAMIC_MEAN = sum(DYNAMIC_ROWS * n * F32 for n in DYNAMIC_COLUMNS) / STEPS
_DYNAMIC_MIN_KIB = DYNAMIC_ROWS * min(DYNAMIC_COLUMNS) * F32 // 1024
_DYNAMIC_MAX_KIB = DYNAMIC_ROWS * max(DYNAMIC_COLUMNS) * F32 // 1024
_MUL = _shape(KEPT_SHAPE)

CASES: dict[str, Case] = {
    c.name: c
    for c in [
        _leak(
            "kept_every_step",
            "Mul",
            KEPT_SHAPE,
            KEPT_BYTES,
            f"tf.multiply(hidden, 0.5) ({_MUL} float32, 128 KiB) appended to a Python list every step from step 0.",
        ),
        _leak(
            "kept_every_nth",
            "Mul",
            KEPT_SHAPE,
            KEPT_BYTES / EVERY_NTH,
            f"tf.multiply(hidden, 0.5) is computed every step and kept in a list every {EVERY_NTH}th step"
            f" (steps 0, 5, ..., 35): 128 KiB / {EVERY_NTH} per step.",
        ),
        _leak(
            "late_onset",
            "Mul",
            KEPT_SHAPE,
            KEPT_BYTES,
            f"tf.multiply(hidden, 0.5) is a freed temporary in steps 0-{LATE_ONSET - 1} and is appended to a list"
            f" from step {LATE_ONSET} of {STEPS} on.",
            onset_step=LATE_ONSET,
        ),
        _leak(
            "regrown",
            "ConcatV2",
            "[*,256]",
            _bytes(REGROWN_SHAPE),
            "hist = tf.concat([hist, gram], 0) every step, gram = tf.matmul(hidden, hidden, transpose_a=True)"
            " ([256,256], 256 KiB): one history buffer regrown every step, the older one freed, so only the newest"
            " buffer is never freed. Live memory grows 256 KiB per step.",
            rate_tolerance=0.10,
        ),
        _leak(
            "dynamic_shapes",
            "Tanh",
            f"[{DYNAMIC_ROWS},*]",
            _DYNAMIC_MEAN,
            f"tf.tanh(seq) of an unpadded sequence batch seq = data[:, :n] ([{DYNAMIC_ROWS}, n] float32) appended to"
            f" a list every step, n from random.Random({DYNAMIC_SEED}): 64 * randint(8, 32),"
            f" {len(set(DYNAMIC_COLUMNS))} distinct shapes between [{DYNAMIC_ROWS},{min(DYNAMIC_COLUMNS)}] and"
            f" [{DYNAMIC_ROWS},{max(DYNAMIC_COLUMNS)}] ({_DYNAMIC_MIN_KIB}-{_DYNAMIC_MAX_KIB} KiB); the rate is"
            " their mean over the 40 steps.",
            rate_tolerance=0.10,
        ),
        Case(
            "several_families",
            True,
            f"Two lists, both appended to every step: tf.multiply(hidden, 0.5) (Mul {_MUL}, 128 KiB) and"
            f" tf.square(hidden[:64]) (Square {_shape(SECOND_SHAPE)}, 64 KiB): 192 KiB per step in all.",
            op="Mul",
            shape=_MUL,
            bytes_per_step=KEPT_BYTES + _bytes(SECOND_SHAPE),
            onset_step=0,
            families=[
                {"op": "Mul", "shape": _MUL, "bytes_per_step": KEPT_BYTES},
                {"op": "Square", "shape": _shape(SECOND_SHAPE), "bytes_per_step": _bytes(SECOND_SHAPE)},
            ],
        ),
        _leak(
            "small_under_temporaries",
            "Mul",
            SMALL_SHAPE,
            _bytes(SMALL_SHAPE),
            f"A {_bytes(SMALL_SHAPE) // 1024} KiB leak (tf.multiply(hidden[:16, :256], 0.5), {_shape(SMALL_SHAPE)})"
            " per step under about 6 MiB of temporaries per step (batch [512,1024], hidden [512,1024]).",
        ),
        _leak(
            "tf_function",
            "Mul",
            KEPT_SHAPE,
            KEPT_BYTES,
            "A @tf.function train step returns, beside its loss, tf.multiply(x, 0.5) of its input batch"
            f" ({_MUL}); the loop appends it to a list. No step markers: steps come from the function's"
            " root events (FunctionRun, __inference_train_step).",
            step_source="root_events",
        ),
        _leak(
            "keras_fit_callback",
            "Mul",
            KERAS_KERNEL,
            _bytes(KERAS_KERNEL),
            f"Keras model.fit ({KERAS_BATCHES} batches of {KERAS_BATCH}, Dense 256-256-10, SGD) with a callback"
            " whose on_train_batch_end appends tf.multiply(first_dense.kernel, 1.0) (a snapshot of the"
            f" {_shape(KERAS_KERNEL)} kernel, 256 KiB) to a list. No step markers: steps come from fit's"
            " FunctionRun root events.",
            step_source="root_events",
            steps=KERAS_BATCHES,
        ),
        _leak(
            "time_windows",
            "Mul",
            KEPT_SHAPE,
            KEPT_BYTES,
            f"kept_every_step without any step marker (an eager loop, no tf.function): the analysis can only cut"
            f" the capture into equal time windows. {STEPS} steps of equal work, so about {STEPS // 10} per window;"
            " rates are per window, so bytes_per_step is not scored (bytes_per_window is approximate).",
            step_source="time_windows",
            bytes_per_window=KEPT_BYTES * STEPS / 10,
        ),
        _leak(
            "weight_snapshots",
            "AssignSubVariableOp",
            SNAPSHOT_SHAPE,
            _bytes(SNAPSHOT_SHAPE),
            "history.append(tf.identity(w)) every step, then w.assign_sub(update): tf.identity allocates nothing"
            " (it aliases the variable's buffer), so the update copies the variable into a new buffer"
            " (AssignSubVariableOp, region temp, [256,256]) and the list keeps every old one: +256 KiB per step.",
        ),
        _leak(
            "late_onset_near_end",
            "Mul",
            KEPT_SHAPE,
            KEPT_BYTES,
            f"late_onset with a later start: tf.multiply(hidden, 0.5) ({_MUL}) is a freed temporary in steps"
            f" 0-{LATE_ONSET_NEAR_END - 1} and is appended to a list from step {LATE_ONSET_NEAR_END} of {STEPS} on:"
            f" only {STEPS - LATE_ONSET_NEAR_END} steps of growth.",
            onset_step=LATE_ONSET_NEAR_END,
        ),
        _leak(
            "kept_every_10th",
            "Mul",
            KEPT_SHAPE,
            KEPT_BYTES / EVERY_10TH,
            f"tf.multiply(hidden, 0.5) ({_MUL}) is computed every step and kept in a list every {EVERY_10TH}th step"
            f" (steps 0, 10, 20, 30): {STEPS // EVERY_10TH} rises in {STEPS} steps, the last one followed by"
            f" {STEPS - 1 - (STEPS - 1) // EVERY_10TH * EVERY_10TH} steps without one; 128 KiB / {EVERY_10TH} per step.",
        ),
        _leak(
            "slow_leak_noisy_temporaries",
            "Mul",
            SLOW_SHAPE,
            _bytes(SLOW_SHAPE),
            f"A {_bytes(SLOW_SHAPE) // 1024} KiB leak (tf.multiply(hidden[:4], 0.5), Mul {_shape(SLOW_SHAPE)} float32)"
            f" kept every step, under large temporaries of the same op and dtype: 3 tf.multiply(noise[:rows], 0.5) per"
            f" step (Mul [rows,{NOISE_COLUMNS}] float32, rows 128-1024 from random.Random({NOISE_SEED}), 512 KiB-4 MiB),"
            f" freed within the step, and on steps {NOISE_PENDING_AT}, {NOISE_PENDING_AT + NOISE_PENDING_EVERY}, ...,"
            f" {NOISE_PENDING_AT + NOISE_PENDING_EVERY * ((STEPS - 1 - NOISE_PENDING_AT) // NOISE_PENDING_EVERY)}"
            " one more (1-4 MiB) kept until the next step starts, then freed: the family's live bytes at a step"
            " boundary jump by MiBs and fall back.",
        ),
        Case(
            "leak_after_cleared_cache",
            True,
            f"Both in one run: a cache of tf.multiply(hidden, 0.5) ({_MUL}, 128 KiB) appended every step and cleared"
            f" every {CACHE_CLEAR_EVERY} steps (before the append of steps 8, 16, ...), a sawtooth that is no leak;"
            f" and tf.square(hidden[:32]) (Square {_shape(CACHE_LEAK_SHAPE)}, 32 KiB) kept every step, the leak.",
            op="Square",
            shape=_shape(CACHE_LEAK_SHAPE),
            bytes_per_step=_bytes(CACHE_LEAK_SHAPE),
            onset_step=0,
            families=[{"op": "Square", "shape": _shape(CACHE_LEAK_SHAPE), "bytes_per_step": _bytes(CACHE_LEAK_SHAPE)}],
        ),
        _leak(
            "regrown_kv_cache_per_layer",
            "ConcatV2",
            f"[*,{HIDDEN}]",
            KV_LAYERS * _bytes([KV_ROWS, HIDDEN]),
            f"A KV cache of {KV_LAYERS} layers: every step each layer's cache = tf.concat([cache, proj], 0), proj ="
            f" tf.matmul(hidden[:{KV_ROWS}], w_layer) ([{KV_ROWS},{HIDDEN}], 32 KiB): {KV_LAYERS} buffers regrown"
            f" every step in one family (ConcatV2), each older one freed. Live memory grows {KV_LAYERS} x 32 KiB"
            " per step.",
            rate_tolerance=0.10,
        ),
        Case(
            "weights_and_optimizer",
            False,
            "tf.Variables (Dense 256-256-10) and a Keras SGD-with-momentum optimizer are created in step 0 (inside"
            f" the capture), its momentum slots on the first apply_gradients; {OPTIMIZER_STEPS} steps of"
            " GradientTape + apply_gradients update them (Keras hands the new momentum buffer to its variable, so the"
            " slots' buffers are replaced, never added to).",
            steps=OPTIMIZER_STEPS,
        ),
        Case(
            "rolling_window",
            False,
            f"collections.deque(maxlen={ROLLING}) of tf.multiply(hidden, 0.5) ({_MUL}) per step: it fills in"
            f" {ROLLING} steps, then every append frees the oldest.",
        ),
        Case(
            "filled_lru",
            False,
            f"An LRU cache (OrderedDict) of capacity {LRU_CAPACITY} that inserts tf.multiply(hidden, 0.5) ({_MUL})"
            f" every step for {LRU_STEPS} steps and evicts the least recent entry once full: memory grows for"
            f" {LRU_CAPACITY} steps and is flat for the last {LRU_STEPS - LRU_CAPACITY}.",
            steps=LRU_STEPS,
        ),
        Case(
            "sawtooth",
            False,
            f"tf.multiply(hidden, 0.5) ({_MUL}) appended every step to a list that is cleared every {SAWTOOTH}"
            f" steps (before the append of steps 8, 16, ...): at the end it holds steps 32-39.",
        ),
        Case(
            "fixed_mid_window",
            False,
            f"tf.multiply(hidden, 0.5) ({_MUL}) kept every step for steps 0-{FIXED_AT - 1}; at step {FIXED_AT}"
            f" the list is cleared and nothing more is kept ({STEPS} steps).",
        ),
        Case(
            "warm_up",
            False,
            f"In steps 0-{WARM_UP_STEPS - 1} only, a cache gets tf.multiply(hidden, 0.5) ({_MUL}) and"
            f" tf.square(hidden) ({_MUL}) each step (6 tensors); nothing is kept afterwards.",
        ),
        Case("steady_temporaries", False, "Only the model's temporaries and two more per step (Mul, Sum), all freed."),
        Case(
            "clean_no_markers",
            False,
            "steady_temporaries without any step marker: the analysis falls back to equal time windows.",
            step_source="time_windows",
        ),
        Case(
            "lru_filled_late",
            False,
            f"filled_lru filled late: an LRU cache (OrderedDict) of capacity {LRU_LATE_CAPACITY} that inserts"
            f" tf.multiply(hidden, 0.5) ({_MUL}) every step for {STEPS} steps and evicts the least recent entry once"
            f" full. It is full from step {LRU_LATE_CAPACITY - 1} on: memory grows in steps 0-{LRU_LATE_CAPACITY - 1}"
            f" and is flat for the last {STEPS - LRU_LATE_CAPACITY} steps (15% of the window). No leak: the program's"
            f" memory is bounded by the capacity, and the capture shows it stop, flat for more than the rule's"
            f" max(2 steps, 2 cadences = 2, 10% of the window = 4) = 4 steps after its last rise. A borderline case:"
            " a 6-step plateau at the end of a 40-step capture is thin evidence.",
        ),
        Case(
            "growing_then_constant_batch",
            False,
            f"A batch-size warm-up beside the base loop: a second forward on the first"
            f" {', '.join(map(str, RAMP_ROWS))} rows of the batch in steps 0-{len(RAMP_ROWS) - 1}, then {RAMP_ROWS[-1]}"
            f" rows to the end; its tf.multiply(hidden, 0.5) (Mul [rows,{HIDDEN}]) is kept until the next step's"
            f" replaces it. The family's live bytes grow for {len(RAMP_ROWS)} steps and are constant for the last"
            f" {STEPS - len(RAMP_ROWS)}.",
        ),
        Case(
            "sawtooth_irregular",
            False,
            f"tf.multiply(hidden, 0.5) ({_MUL}) appended every step to a list cleared at irregular intervals of"
            f" {', '.join(map(str, SAWTOOTH_INTERVALS))} steps (before the append of steps"
            f" {', '.join(map(str, SAWTOOTH_CLEARS))}): teeth of {', '.join(map(str, SAWTOOTH_INTERVALS))} and"
            f" {STEPS - SAWTOOTH_CLEARS[-1]} steps; at the end it holds steps {SAWTOOTH_CLEARS[-1]}-{STEPS - 1}.",
        ),
    ]
}


# --- the loops (run in the case's own process) ----------------------------------


class Model:
    """A MatMul/Relu/MatMul forward on batches gathered from a fixed dataset; every activation is a temporary."""

    def __init__(self, tf: Any, batch: int = BATCH, in_dim: int = IN_DIM, hidden: int = HIDDEN) -> None:
        self.tf = tf
        self.data = tf.random.stateless_normal([NUM_BATCHES, batch, in_dim], seed=[0, 1])
        self.w1 = tf.Variable(tf.random.stateless_normal([in_dim, hidden], seed=[0, 2]) * 0.05)
        self.w2 = tf.Variable(tf.random.stateless_normal([hidden, OUT_DIM], seed=[0, 3]) * 0.05)

    def batch(self, i: int) -> Any:
        return self.tf.gather(self.data, i % NUM_BATCHES)  # GatherV2 [batch, in_dim], a temporary

    def step(self, i: int) -> tuple[Any, Any]:
        """(hidden, loss) of batch i."""
        tf = self.tf
        hidden = tf.nn.relu(tf.matmul(self.batch(i), self.w1))
        return hidden, tf.reduce_mean(tf.matmul(hidden, self.w2))


def lru_put(lru: Any, key: int, value: Any, capacity: int) -> None:
    """An LRU of `capacity` entries (an OrderedDict): the newest goes last, the oldest out when it is full."""
    lru[key] = value
    lru.move_to_end(key)
    if len(lru) > capacity:
        lru.popitem(last=False)


def _eager_case(tf: Any, name: str) -> tuple[Any, Any]:
    """(body(i, state), new_state()) of an eager case; body runs step i and keeps what the case keeps in state."""
    model = Model(tf, **SMALL) if name == "small_under_temporaries" else Model(tf)
    sequences = tf.random.stateless_normal([DYNAMIC_ROWS, max(DYNAMIC_COLUMNS)], seed=[0, 4])
    if name == "slow_leak_noisy_temporaries":
        noise = tf.random.stateless_normal([max(map(max, NOISE_ROWS)), NOISE_COLUMNS], seed=[0, 5])
    if name == "regrown_kv_cache_per_layer":
        w_layers = [tf.Variable(tf.random.stateless_normal([HIDDEN, HIDDEN], seed=[2, k]) * 0.05) for k in range(KV_LAYERS)]

    def half(hidden: Any) -> Any:
        return tf.multiply(hidden, 0.5)

    def new_state() -> dict[str, Any]:
        return {
            "kept": [],
            "more": [],
            "window": collections.deque(maxlen=ROLLING),
            "lru": collections.OrderedDict(),
            "hist": tf.zeros([0, HIDDEN]),
            "cache": {},
            "pending": None,
            "layers": [tf.zeros([0, HIDDEN]) for _ in range(KV_LAYERS)],
        }

    def body(i: int, s: dict[str, Any]) -> None:
        hidden, _loss = model.step(i)
        if name in ("kept_every_step", "time_windows"):
            s["kept"].append(half(hidden))
        elif name == "kept_every_nth":
            act = half(hidden)
            if i % EVERY_NTH == 0:
                s["kept"].append(act)
        elif name == "late_onset":
            act = half(hidden)
            if i >= LATE_ONSET:
                s["kept"].append(act)
        elif name == "regrown":
            gram = tf.matmul(hidden, hidden, transpose_a=True)
            s["hist"] = tf.concat([s["hist"], gram], 0)
        elif name == "dynamic_shapes":
            seq = sequences[:, : DYNAMIC_COLUMNS[i]]  # StridedSlice [32, n], a temporary
            s["kept"].append(tf.tanh(seq))
        elif name == "several_families":
            s["kept"].append(half(hidden))
            s["more"].append(tf.square(hidden[: SECOND_SHAPE[0]]))
        elif name == "small_under_temporaries":
            s["kept"].append(half(hidden[: SMALL_SHAPE[0], : SMALL_SHAPE[1]]))
        elif name == "weight_snapshots":
            s["kept"].append(tf.identity(model.w1))
            model.w1.assign_sub(0.001 * tf.matmul(hidden, hidden, transpose_a=True))
        elif name == "rolling_window":
            s["window"].append(half(hidden))
        elif name == "filled_lru":
            lru_put(s["lru"], i, half(hidden), LRU_CAPACITY)
        elif name == "sawtooth":
            if i % SAWTOOTH == 0:
                s["kept"].clear()
            s["kept"].append(half(hidden))
        elif name == "fixed_mid_window":
            act = half(hidden)
            if i < FIXED_AT:
                s["kept"].append(act)
            elif i == FIXED_AT:
                s["kept"].clear()
        elif name == "warm_up":
            if i < WARM_UP_STEPS:
                s["cache"][f"half{i}"] = half(hidden)
                s["cache"][f"square{i}"] = tf.square(hidden)
        elif name == "late_onset_near_end":
            act = half(hidden)
            if i >= LATE_ONSET_NEAR_END:
                s["kept"].append(act)
        elif name == "kept_every_10th":
            act = half(hidden)
            if i % EVERY_10TH == 0:
                s["kept"].append(act)
        elif name == "slow_leak_noisy_temporaries":
            s["pending"] = None  # the previous step's pending temporary, if any, is freed now
            for rows in NOISE_ROWS[i]:
                tf.reduce_sum(half(noise[:rows]))  # Mul [rows,1024], freed within the step
            if i % NOISE_PENDING_EVERY == NOISE_PENDING_AT:
                s["pending"] = half(noise[: NOISE_PENDING_ROWS[i]])  # lives until the next step starts
            s["kept"].append(half(hidden[: SLOW_SHAPE[0]]))
        elif name == "leak_after_cleared_cache":
            if i % CACHE_CLEAR_EVERY == 0:
                s["kept"].clear()
            s["kept"].append(half(hidden))
            s["more"].append(tf.square(hidden[: CACHE_LEAK_SHAPE[0]]))
        elif name == "regrown_kv_cache_per_layer":
            for k in range(KV_LAYERS):
                proj = tf.matmul(hidden[:KV_ROWS], w_layers[k])
                s["layers"][k] = tf.concat([s["layers"][k], proj], 0)
        elif name == "lru_filled_late":
            lru_put(s["lru"], i, half(hidden), LRU_LATE_CAPACITY)
        elif name == "growing_then_constant_batch":
            rows = RAMP_ROWS[min(i, len(RAMP_ROWS) - 1)]
            small = tf.nn.relu(tf.matmul(model.batch(i)[:rows], model.w1))
            tf.reduce_mean(tf.matmul(small, model.w2))
            s["pending"] = half(small)  # replaces (frees) the previous step's
        elif name == "sawtooth_irregular":
            if i in SAWTOOTH_CLEARS:
                s["kept"].clear()
            s["kept"].append(half(hidden))
        elif name in ("steady_temporaries", "clean_no_markers"):
            tf.reduce_sum(half(hidden))
        else:
            raise ValueError(f"no eager loop for {name}")

    return body, new_state


def _optimizer_case(tf: Any) -> tuple[Any, Any]:
    import keras

    model = Model(tf)

    def new_state() -> dict[str, Any]:
        return {}

    def body(i: int, s: dict[str, Any]) -> None:
        if i == 0:
            s["params"] = [
                tf.Variable(tf.random.stateless_normal([IN_DIM, HIDDEN], seed=[1, 1]) * 0.05),
                tf.Variable(tf.zeros([HIDDEN])),
                tf.Variable(tf.random.stateless_normal([HIDDEN, OUT_DIM], seed=[1, 2]) * 0.05),
            ]
            s["optimizer"] = keras.optimizers.SGD(0.01, momentum=0.9)
        w1, b1, w2 = s["params"]
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(tf.matmul(model.batch(i), w1) + b1)
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2)))
        grads = tape.gradient(loss, s["params"])
        s["optimizer"].apply_gradients(zip(grads, s["params"], strict=True))

    return body, new_state


def _tf_function_case(tf: Any) -> tuple[Any, Any]:
    model = Model(tf)

    @tf.function
    def train_step(x: Any) -> tuple[Any, Any]:
        hidden = tf.nn.relu(tf.matmul(x, model.w1))
        loss = tf.reduce_mean(tf.matmul(hidden, model.w2))
        return loss, tf.multiply(x, 0.5)  # the input, scaled "for logging": a new [128,256] buffer per call

    def new_state() -> dict[str, Any]:
        return {"kept": []}

    def body(i: int, s: dict[str, Any]) -> None:
        _loss, scaled = train_step(model.batch(i))
        s["kept"].append(scaled)

    return body, new_state


def _run_loop(tf: Any, run_dir: pathlib.Path, case: Case) -> None:
    if case.name == "weights_and_optimizer":
        body, new_state = _optimizer_case(tf)
    elif case.name == "tf_function":
        body, new_state = _tf_function_case(tf)
    else:
        body, new_state = _eager_case(tf, case.name)
    # A warm-up step outside the capture, on a state thrown away: kernels, function tracing and one-off setup.
    warm = new_state()
    body(0, warm)
    del warm
    state = new_state()
    markers = case.step_source == "markers"
    tf.profiler.experimental.start(str(run_dir))
    for i in range(case.steps):
        if markers:
            with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                body(i, state)
        else:
            body(i, state)
    tf.profiler.experimental.stop()


def _run_keras(tf: Any, run_dir: pathlib.Path, case: Case) -> None:
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    n = KERAS_BATCHES * KERAS_BATCH
    x = rng.standard_normal((n, IN_DIM), dtype=np.float32)
    y = rng.integers(0, OUT_DIM, n)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((IN_DIM,)), keras.layers.Dense(HIDDEN, activation="relu"), keras.layers.Dense(OUT_DIM)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    kept: list[Any] = []

    class KeepKernel(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            kept.append(tf.multiply(model.layers[0].kernel, 1.0))

    model.fit(x, y, batch_size=KERAS_BATCH, epochs=1, verbose=0, shuffle=False)  # warm-up: traces the train function
    tf.profiler.experimental.start(str(run_dir))
    model.fit(x, y, batch_size=KERAS_BATCH, epochs=1, verbose=0, shuffle=False, callbacks=[KeepKernel()])
    tf.profiler.experimental.stop()
    assert len(kept) == KERAS_BATCHES, len(kept)


def _measure(path: pathlib.Path, case: Case) -> dict[str, Any]:
    """Facts about the capture, read back from the file: a sanity check, not truth."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    counts: collections.Counter[str] = collections.Counter()
    allocators: collections.Counter[str] = collections.Counter()
    culprit: collections.Counter[str] = collections.Counter()
    by_kind: collections.Counter[str] = collections.Counter()
    step_nums: set[int] = set()
    for plane in space.planes:
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if name in ("MemoryAllocation", "MemoryDeallocation", "FunctionRun") or name.startswith("__inference_"):
                    counts[name] += 1
                stats: dict[str, Any] = {}
                for s in event.stats:
                    key = stat_names.get(s.metadata_id, "")
                    if s.HasField("ref_value"):
                        stats[key] = plane.stat_metadata[s.ref_value].name
                    else:
                        stats[key] = getattr(s, s.WhichOneof("value")) if s.WhichOneof("value") else None
                if "step_num" in stats and name == "train":
                    step_nums.add(int(stats["step_num"]))
                if name == "MemoryAllocation":
                    allocators[str(stats.get("allocator_name"))] += 1
                    kind = f"{stats.get('tf_op')} {stats.get('shape')} {stats.get('region_type')}"
                    by_kind[kind] += 1
                    if stats.get("tf_op") in {f["op"] for f in case.families}:
                        culprit[kind] += 1
    return {
        "file_bytes": path.stat().st_size,
        "memory_allocations": counts["MemoryAllocation"],
        "memory_deallocations": counts["MemoryDeallocation"],
        "allocators": dict(allocators),
        "step_markers": len(step_nums),
        "function_runs": counts["FunctionRun"],
        "culprit_op_allocations": dict(culprit.most_common(8)),
        "most_frequent_allocations": dict(by_kind.most_common(12)),  # "tf_op shape region_type": count
    }


def record_one(case: Case) -> None:
    """Record one case in this process (TensorFlow must not be imported yet)."""
    if "tensorflow" in sys.modules:
        raise RuntimeError("record_one needs a process that has not imported tensorflow yet")
    os.environ.update(ENV)
    import tensorflow as tf

    tf.random.set_seed(0)
    run_dir = CAPTURES / case.name
    shutil.rmtree(run_dir, ignore_errors=True)
    if case.name == "keras_fit_callback":
        _run_keras(tf, run_dir, case)
    else:
        _run_loop(tf, run_dir, case)
    files = sorted((run_dir / "plugins" / "profile").glob("*/*"))
    for extra in files:
        if not extra.name.endswith(".xplane.pb"):
            extra.unlink()  # the .trace.json.gz TF writes beside it: XProf and tb_leakfinder read the .xplane.pb
    (xplane,) = [f for f in files if f.name.endswith(".xplane.pb")]
    facts = _measure(xplane, case)
    if set(facts["allocators"]) != {BFC_ALLOCATOR}:
        raise RuntimeError(f"{case.name}: allocators {facts['allocators']}, expected only {BFC_ALLOCATOR}")
    want_markers = case.steps if case.step_source == "markers" else 0
    if facts["step_markers"] != want_markers:
        raise RuntimeError(f"{case.name}: {facts['step_markers']} step markers, expected {want_markers}")
    truth = case.truth()
    truth["capture"] = {"tensorflow": tf.__version__, "host": socket.gethostname(), **facts}
    (run_dir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    print(
        f"{case.name}: {xplane.relative_to(HERE)} {facts['file_bytes']:,} B, {facts['memory_allocations']} allocations,"
        f" {facts['step_markers']} markers, {facts['function_runs']} FunctionRuns"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"cases to record (default: all): {', '.join(CASES)}")
    parser.add_argument("--list", action="store_true", help="print the cases and their truth, record nothing")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)  # one case, in this process
    args = parser.parse_args()
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(CASES)}")
    names = args.cases or list(CASES)
    if args.list:
        for name in names:
            print(json.dumps(CASES[name].truth()))
        return
    if args.in_process:
        (name,) = names
        record_one(CASES[name])
        return
    env = {**os.environ, **ENV}
    for name in names:
        subprocess.run([sys.executable, __file__, "--in-process", name], check=True, env=env)


if __name__ == "__main__":
    main()
