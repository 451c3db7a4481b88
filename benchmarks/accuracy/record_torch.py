"""Record the accuracy benchmark's real PyTorch CPU captures: tests/support/torch_captures.py's cases, as torch_<case>.

    python benchmarks/accuracy/record_torch.py            # every case (~10 s)
    python benchmarks/accuracy/record_torch.py regrown    # some cases

Each case writes

    captures/torch_<case>/<host>_<pid>.<ns>.pt.trace.json.gz
    captures/torch_<case>/truth.json

The capture program is the one the integration tests run (tests/support/torch_captures.py, in a process of
its own); its CASES give the truth, from the program's constants, never from the trace. `truth.json`'s `capture`
object holds facts read back from the trace (event counts, steps) as a sanity check, and is not truth.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]
CAPTURES = HERE / "captures"
PREFIX = "torch_"
RATE_TOLERANCE = {"regrown": 0.1}  # as the TensorFlow regrown case: the copy's size is rounded per step

sys.path.insert(0, str(CHECKOUT))
from tests.support import torch_captures  # noqa: E402 - the checkout's own tests package, on the path above


def truth_of(name: str) -> dict[str, Any]:
    case = torch_captures.CASES[name]
    families = [{"op": case.op, "shape": case.shape or "*", "bytes_per_step": case.bytes_per_step}] if case.leak else []
    families += [{"op": f.op, "shape": f.shape, "bytes_per_step": f.bytes_per_step} for f in case.others]
    return {
        "case": PREFIX + name,
        "leak": case.leak,
        "description": case.description,
        "op": case.op,
        "shape": case.shape,
        "bytes_per_step": sum(f["bytes_per_step"] for f in families) if case.leak else None,
        "onset_step": case.onset_step,
        "rate_tolerance": RATE_TOLERANCE.get(name, 0.05),
        "step_source": "markers",
        "steps": torch_captures.STEPS,
        "families": families,
    }


def measure(trace: pathlib.Path) -> dict[str, Any]:
    """Facts read back from a trace: a sanity check, not truth."""
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    memory = [e["args"] for e in events if e.get("name") == "[memory]"]
    ops: collections.Counter[str] = collections.Counter(e["name"] for e in events if e.get("cat") == "cpu_op")
    return {
        "file_bytes": trace.stat().st_size,
        "memory_allocations": sum(1 for m in memory if m["Bytes"] > 0),
        "memory_frees": sum(1 for m in memory if m["Bytes"] < 0),
        "step_markers": sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#")),
        "python_functions": sum(1 for e in events if e.get("cat") == "python_function"),
        "most_frequent_ops": dict(ops.most_common(8)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"cases to record (default: all): {', '.join(torch_captures.CASES)}")
    args = parser.parse_args()
    unknown = [c for c in args.cases if c not in torch_captures.CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(torch_captures.CASES)}")
    names = args.cases or list(torch_captures.CASES)
    import torch  # only its version, in this process: the captures run in their own

    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
        script = CHECKOUT / "tests" / "support" / "torch_captures.py"
        subprocess.run([sys.executable, str(script), scratch, *names], check=True, env=env, stdout=subprocess.DEVNULL)
        for name in names:
            run_dir = CAPTURES / (PREFIX + name)
            shutil.rmtree(run_dir, ignore_errors=True)
            shutil.copytree(pathlib.Path(scratch) / name, run_dir)
            (trace,) = run_dir.glob("*.pt.trace.json.gz")
            facts = measure(trace)
            if facts["step_markers"] != torch_captures.STEPS:
                raise RuntimeError(f"{name}: {facts['step_markers']} ProfilerSteps, expected {torch_captures.STEPS}")
            truth = {**truth_of(name), "capture": {"torch": torch.__version__, "host": socket.gethostname(), **facts}}
            (run_dir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
            allocations = facts["memory_allocations"]
            print(f"{PREFIX}{name}: {trace.relative_to(HERE)} {facts['file_bytes']:,} B, {allocations} allocations")


if __name__ == "__main__":
    main()
