"""Real training loops whose memory grows outside the framework's allocator, and their clean look-alikes, captured with
tb_leakfinder.capture (which records the process's memory beside the profile).

    python tests/support/process_memory_captures.py CASE LOGDIR

runs one case, captured into LOGDIR, and prints one JSON object: the host's report and the pids of its DataLoader
workers. tests/integration/test_process_memory.py runs each in a process of its own (the frameworks' native libraries
and the workers stay out of the test process). The truth is each case's constants (CASES):
- worker_cache (PyTorch): a Dataset whose __getitem__ makes an ITEM_BYTES numpy array and keeps it in a dict, read by
  a DataLoader with WORKERS workers and BATCH items a batch: each batch adds BATCH * ITEM_BYTES to the worker that
  made it, and the workers take turns, so each grows BATCH * ITEM_BYTES / WORKERS per step;
- numpy_copies (PyTorch): the loop keeps `weight.detach().numpy().copy()` of a [1024,1024] float32 weight, 4 MiB;
- numpy_copies_tf (TensorFlow): the loop keeps `variable.numpy().copy()` of a [1024,1024] float32 variable, 4 MiB;
- clean (PyTorch): a WORKERS-worker DataLoader over a preallocated numpy array, nothing kept;
- numpy_copies_periodic (PyTorch): numpy_copies captured in PERIODIC windows of 4 steps every 6, each a trace of its
  own: the run's history follows the training process across them;
- allocator_leak (PyTorch): the loop keeps `torch.ones(1024, 1024)`, 4 MiB, which PyTorch's CPU allocator hands out:
  its leak, which the process's RSS shows too and which must not be counted again outside the allocator.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

ITEM_BYTES = 1 << 20
BATCH = 4
WORKERS = 2
KEPT_BYTES = 1024 * 1024 * 4  # a [1024,1024] float32 array
WARMUP, STEPS = 2, 12
FEATURES = ITEM_BYTES // 4

CASES = {
    # case: (framework, bytes per step outside the allocator in the training process, in each worker, in the allocator)
    "worker_cache": ("torch", 0, BATCH * ITEM_BYTES // WORKERS, 0),
    "numpy_copies": ("torch", KEPT_BYTES, 0, 0),
    "numpy_copies_tf": ("tensorflow", KEPT_BYTES, 0, 0),
    "clean": ("torch", 0, 0, 0),
    "allocator_leak": ("torch", 0, 0, KEPT_BYTES),
    "numpy_copies_periodic": ("torch", KEPT_BYTES, 0, 0),
}
PERIODIC = {"start": 2, "count": 4, "every": 6}
PERIODIC_STEPS = 20  # three windows: steps 2-5, 8-11, 14-17


def _torch_loop(case: str, logdir: str) -> list[int]:
    import numpy as np
    import torch

    import tb_leakfinder

    torch.manual_seed(0)
    torch.set_num_threads(1)

    class Caching(torch.utils.data.Dataset):  # type: ignore[type-arg]
        """Makes each item once and keeps it: in each worker, its own cache."""

        def __init__(self) -> None:
            self.cache: dict[int, np.ndarray] = {}

        def __len__(self) -> int:
            return 10_000

        def __getitem__(self, i: int) -> np.ndarray:
            if i not in self.cache:
                self.cache[i] = np.full(FEATURES, i % 7, np.float32)
            return self.cache[i][:64]

    class Preallocated(torch.utils.data.Dataset):  # type: ignore[type-arg]
        """Rows of one array made before the workers start: read, never written."""

        def __init__(self) -> None:
            self.data = np.random.default_rng(0).standard_normal((4096, 64), dtype=np.float32)

        def __len__(self) -> int:
            return len(self.data)

        def __getitem__(self, i: int) -> np.ndarray:
            return self.data[i]

    model = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    weight = model[2].weight  # [1024,1024] float32: KEPT_BYTES
    pids: set[int] = set()
    kept: list[object] = []
    if case in ("worker_cache", "clean"):
        dataset = Caching() if case == "worker_cache" else Preallocated()
        loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS, shuffle=False)
        batches = iter(loader)
    else:
        batches = iter(lambda: torch.randn(BATCH, 64), None)
    periodic = case == "numpy_copies_periodic"
    window = PERIODIC if periodic else {"start": WARMUP, "count": STEPS}
    with tb_leakfinder.capture(logdir, **window) as cap:
        for step in range(PERIODIC_STEPS if periodic else WARMUP + STEPS):
            with cap.step(step):
                x = next(batches)
                loss = model(x).square().mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if case in ("numpy_copies", "numpy_copies_periodic"):
                    kept.append(weight.detach().numpy().copy())
                elif case == "allocator_leak":
                    kept.append(torch.ones(1024, 1024))
    if case in ("worker_cache", "clean"):
        pids = {w.pid for w in batches._workers}  # type: ignore[attr-defined]
    return sorted(pids)


def _tf_loop(logdir: str) -> list[int]:
    import tensorflow as tf

    import tb_leakfinder

    variable = tf.Variable(tf.random.normal([1024, 1024]))
    x = tf.random.normal([BATCH, 1024])
    kept = []
    with tb_leakfinder.capture(logdir, start=WARMUP, count=STEPS) as cap:
        for step in range(WARMUP + STEPS):
            with cap.step(step):
                variable.assign_add(tf.matmul(tf.transpose(x), x) * 1e-6)
                kept.append(variable.numpy().copy())
    return []


def main() -> None:
    case, logdir = sys.argv[1], sys.argv[2]
    framework = CASES[case][0]
    pids = _tf_loop(logdir) if framework == "tensorflow" else _torch_loop(case, logdir)
    from tb_leakfinder import analyze

    report = analyze(logdir)
    companions = sorted(p.name for p in pathlib.Path(logdir).rglob("*.leakfinder.json"))
    out = {"worker_pids": pids, "companions": companions, "pid": os.getpid(), "histories": report["histories"]}
    out["host"] = report["runs"][-1]["hosts"][0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
