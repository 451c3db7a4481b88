"""What the holder finder's walk costs in a process holding 1M Python objects and 10k tensors (issue 40).

    python benchmarks/bench_holders.py [--objects 1000000] [--tensors 10000] [--repeat 5]

The process holds `--objects` small Python objects (half one-item lists, half instances of a class with a
`__dict__`, in lists of 1000, as a dataset's index or a cache would), `--tensors` small PyTorch tensors in a
model-like structure (a dict of lists), and a leak: 100 tensors appended to a list, one per step. Timed, each the
median of `--repeat` runs:
- `found`: the walk (holders/walk.py) from this process's roots to the leak's 100 buffers, as a capture runs it;
- `whole heap`: the walk when no buffer is ever found (every reachable object is read), unbounded: what the
  2 s bound (TIME_LIMIT_S) cuts, and objects read per second;
- the peer, `gc.get_referrers` of one object: one pass of the collector over every tracked object, the step an
  objgraph-style search repeats per level; the ratios are against it.
Each is given in wall seconds and CPU seconds (the machine is shared; the CPU times carry no one else's load).
Then one real capture (5 steps, the same process) gives the holder section's own `elapsed_s` (reading the profile
back and pairing it included).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class Record:
    """A small object with a __dict__, as a dataset's or a cache's entries are."""

    def __init__(self, i: int) -> None:
        self.index = i
        self.label = "x"


def _median(run: Any, repeat: int) -> tuple[float, float, Any]:
    """The median wall and CPU seconds of `repeat` runs (this machine is shared: its wall times carry the others'
    load, the CPU times do not), and the last run's result."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1_000_000)
    parser.add_argument("--tensors", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import torch

    import tb_leakfinder
    from tb_leakfinder.capture.holders.matchers import TorchMatcher
    from tb_leakfinder.capture.holders.walk import Walk, roots

    half = args.objects // 2
    dataset = [[[i] for i in range(k, min(k + 1000, half))] for k in range(0, half, 1000)]
    cache = [[Record(i) for i in range(k, min(k + 1000, half))] for k in range(0, half, 1000)]
    weights = {f"layer{k}": [torch.ones(16) for _ in range(100)] for k in range(args.tensors // 100)}
    kept = [torch.ones(64) * step for step in range(100)]
    leak = {int(t.untyped_storage().data_ptr()) for t in kept}
    matcher = TorchMatcher(torch)
    tracked = len(gc.get_objects())

    def walk(targets: set[int], limit_s: float) -> Walk:
        w = Walk(matcher, targets, 50_000_000, limit_s)
        with matcher.session():
            w.run(roots())
        return w

    found_s, found_cpu, found = _median(lambda: walk(leak, 60.0), args.repeat)
    whole_s, whole_cpu, whole = _median(lambda: walk({1}, 600.0), args.repeat)
    bounded_s, _, bounded = _median(lambda: walk({1}, 2.0), args.repeat)
    peer_s, peer_cpu, _ = _median(lambda: gc.get_referrers(kept), args.repeat)
    assert len(found.found) == len(leak) and not found.stopped, found.stopped

    with tempfile.TemporaryDirectory() as logdir:
        with tb_leakfinder.capture(logdir, start=1, count=5, framework="torch") as cap:
            for step in range(6):
                with cap.step(step):
                    kept.append(torch.ones(64) * step)
        section = json.loads(cap.sessions[-1].recordings.read_text())["holders"]
    rows = {
        "gc_tracked_objects": tracked,
        "tensors": args.tensors + len(kept),
        "found_s": round(found_s, 4),
        "found_cpu_s": round(found_cpu, 4),
        "found_objects": found.visited,
        "whole_heap_s": round(whole_s, 3),
        "whole_heap_cpu_s": round(whole_cpu, 3),
        "whole_heap_objects": whole.visited,
        "whole_heap_objects_per_cpu_s": round(whole.visited / whole_cpu),
        "bounded_s": round(bounded_s, 3),
        "bounded_status": "partial" if bounded.stopped else "complete",
        "bounded_objects": bounded.visited,
        "peer_gc_get_referrers_s": round(peer_s, 4),
        "peer_gc_get_referrers_cpu_s": round(peer_cpu, 4),
        "found_vs_peer_cpu": round(found_cpu / peer_cpu, 3),
        "whole_heap_vs_peer_cpu": round(whole_cpu / peer_cpu, 1),
        "capture_section_elapsed_s": section["elapsed_s"],
        "capture_section_status": section["status"],
        "capture_section_holders": [(h["path"], h["count"]) for h in section["holders"]],
    }
    del dataset, cache, weights
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
