"""The history of a run of 100 captures after a restart, from the disk cache (issue #22: under 1 s).

    python benchmarks/bench_history.py [--captures 100] [--runs 5]

A run of --captures sessions of one job (tb_leakfinder.testing.history_runs,
each a short profile of 10 steps) is analysed once into a fresh disk cache.
Then each measured run is a fresh process (a restarted TensorBoard or CLI):
imports, discovery, and the history from each capture's cached points (the
entries' points.json members, `model.history.HostPoints`). The peer is the
same history in a fresh process without the cache (every capture analysed),
measured in the same run. Medians are reported; the target is the cached
history under 1 s. tb_leakfinder's modules are byte-compiled first, as an
install has them (bench_memory.py's `byte_compile`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_memory import byte_compile, child_env

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 1.0

CHILD = """
import json, sys, time
start = time.perf_counter()
from tb_leakfinder.engine.engine import Engine
from tb_leakfinder.store.disk_cache import DiskCache
disk = DiskCache(sys.argv[2], 1 << 32) if sys.argv[2] else None
engine = Engine.for_path(sys.argv[1], disk=disk)
history = engine.history("job")
print(json.dumps({"wall": time.perf_counter() - start, "verdict": history["verdict"], "analyses": engine.analyses,
                  "captures": history["num_captures"]}))
"""


def _child(logdir: Path, cache: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(logdir), cache],
        cwd=ROOT,
        env=child_env(),
        check=True,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--captures", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tb_leakfinder.testing.history_runs import slow_leak_run

    byte_compile()

    with tempfile.TemporaryDirectory() as tmp:
        logdir, cache = Path(tmp) / "logs", str(Path(tmp) / "cache")
        t = time.perf_counter()
        slow_leak_run(logdir, captures=args.captures)
        print(f"{args.captures} captures written in {time.perf_counter() - t:.1f} s")
        filled = _child(logdir, cache)
        print(f"cache filled: {filled['wall']:.2f} s, {int(filled['analyses'])} analyses")
        warm, cold = [], []
        for _ in range(args.runs):
            warm.append(_child(logdir, cache))
            cold.append(_child(logdir, ""))
        w, c = statistics.median(r["wall"] for r in warm), statistics.median(r["wall"] for r in cold)
        assert all(r["analyses"] == 0 for r in warm), f"a restarted engine analysed captures the cache holds: {warm}"
        assert all(r["verdict"] == "leak" and r["captures"] == args.captures for r in warm + cold)
        print(f"history of {args.captures} captures after a restart, medians of {args.runs} fresh processes:")
        print(f"  from the disk cache: {w:.3f} s (target < {TARGET_S:.0f} s)")
        print(f"  analysing every capture (no cache): {c:.3f} s; ratio {w / c:.2f}x")
        return 0 if w < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
