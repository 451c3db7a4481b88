"""What naming each allocation (issue #21: program buffer, line, Python frames) costs a cold analysis.

    python benchmarks/bench_attribution.py                  # against the revision before the join (--against)
    python benchmarks/bench_attribution.py --against REV --pairs 9

Two profiles of 1M memory events, both in --workdir:
- bench_memory.py's TensorFlow-style profile (ops named, no Python frames, no programs): the join finds
  nothing to do there, and what it adds is the reader's thread column and the buffers' site column;
- a JAX-style PJRT profile (tb_leakfinder.testing.pjrt_profile: memory events that name nothing, a jitted
  call per step, Python frames around each): every allocation is joined.

Each is analysed cold (a fresh process: imports, read, decode, the analyses and the report JSON) by this
tree and by the tree at --against (checked out into a worktree and built), alternating, --pairs times.
The ratio of medians is this tree's time over the other's: at most 1.15 is the target. On the PJRT
profile the old tree names nothing, so its time is the analysis without the join.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_RATIO = 1.15
BEFORE_JOIN = "6988491"

CHILD = """
import json, sys, time
start = time.perf_counter()
cpu = time.process_time()
import tb_leakfinder
report = tb_leakfinder.analyze(sys.argv[1], cache=False)
wall = time.perf_counter() - start
named = sum(1 for h in report["runs"][0]["hosts"] for a in h["allocators"] for g in a["peak_breakdown"] if g.get("where"))
print(json.dumps({"wall": wall, "cpu": time.process_time() - cpu, "named": named}))
"""


def _profiles(workdir: Path) -> dict[str, Path]:
    sys.path.insert(0, str(ROOT))
    from tb_leakfinder.testing import pjrt_profile
    from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session

    runs = {"tensorflow_1m": workdir / "tensorflow_1m", "pjrt_1m": workdir / "pjrt_1m"}
    if not any(runs["tensorflow_1m"].rglob("*.xplane.pb")):
        builder, _ = synthesize_training(1_000_000, 100)
        write_session(workdir, "tensorflow_1m", "session", {"host0": builder})
    if not any(runs["pjrt_1m"].rglob("*.xplane.pb")):
        # About 14 memory events per step.
        builder, _ = pjrt_profile.jax_training(71_500, eval_every=0, step_ps=2_000_000)
        write_session(workdir, "pjrt_1m", "session", {"gpu-host": builder})
    return runs


def _tree(workdir: Path, revision: str) -> Path:
    base = workdir / f"tree_{revision}"
    if not base.exists():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), revision], check=True, capture_output=True
        )
        subprocess.run(
            [sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"], cwd=base, check=True, capture_output=True
        )
    return base


def _run(tree: Path, run: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(run)], env=env, cwd=tempfile.gettempdir(), check=True, capture_output=True, text=True
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default=BEFORE_JOIN, help=f"the revision to compare with (default {BEFORE_JOIN})")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--workdir", default="/tmp/tb_leakfinder_bench")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    runs = _profiles(workdir)
    old = _tree(workdir, args.against)
    ok = True
    print(f"{'profile':<16} {'this tree':>10} {args.against:>10} {'ratio':>6}  cpu time, named peak rows (this / other)")
    for name, run in runs.items():
        mine, theirs = [], []
        for _ in range(args.pairs):
            mine.append(_run(ROOT, run))
            theirs.append(_run(old, run))
        a, b = statistics.median(r["wall"] for r in mine), statistics.median(r["wall"] for r in theirs)
        cpu_a, cpu_b = statistics.median(r["cpu"] for r in mine), statistics.median(r["cpu"] for r in theirs)
        ratio = a / b
        ok = ok and ratio <= MAX_RATIO
        named = f"{int(mine[0]['named'])} / {int(theirs[0]['named'])}"
        print(f"{name:<16} {a:>9.3f}s {b:>9.3f}s {ratio:>5.2f}x  cpu {cpu_a:.3f}s / {cpu_b:.3f}s = {cpu_a / cpu_b:.2f}x  {named}")
    print(f"target: at most {MAX_RATIO:.2f}x of the analysis without the join (medians of {args.pairs} cold runs each)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
