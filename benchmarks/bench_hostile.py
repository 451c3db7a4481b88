"""Issue 31's hostile files at the scale the probe found them, each through the real CLI (issue #31: each under 10 s
and 512 MiB).

    python benchmarks/bench_hostile.py [--only NAME,...] [--timeout 120]

Each input (tb_leakfinder.testing.hostile) is written once, then `check FILE --no-cache` runs in a fresh process
under a 4 GiB address-space limit and `/usr/bin/time`-like accounting (the child's peak RSS from wait4). A row
gives the file's size, the seconds, the peak RSS, the exit status and the last line the CLI wrote; a case past
--timeout is killed and shown as such. The tests (tests/unit/read/test_hostile_inputs.py) hold the outcomes;
this holds the costs.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 10.0
TARGET_RSS_MIB = 512
ADDRESS_SPACE = 4 << 30


def _cases() -> dict[str, Callable[[Path], Path]]:
    sys.path.insert(0, str(ROOT))
    from tb_leakfinder.testing import hostile

    def dev_zero(folder: Path) -> Path:
        path = folder / "m.prof"
        path.symlink_to("/dev/zero")
        return path

    return {
        "fifo_trace": lambda d: hostile.fifo(d / "w.pt.trace.json"),
        "fifo_prof": lambda d: hostile.fifo(d / "m.prof"),
        "dev_zero_prof": dev_zero,
        "deep_location": lambda d: hostile.deep_location(d / "m.prof"),
        "memo_1e7": lambda d: hostile.memo_entries(d / "s.pickle", 10_000_000),
        "long_integer": lambda d: hostile.long_integer(d / "w.pt.trace.json"),
        "empty_events_170M": lambda d: hostile.empty_events(d / "w.pt.trace.json.gz", 170_000_000),
        "devices_60k": lambda d: hostile.devices(d / "w.pt.trace.json.gz", 60_000),
        "names_100k": lambda d: hostile.function_names(d / "w.pt.trace.json.gz", 100_000),
        "threads_200k": lambda d: hostile.threads(d / "w.pt.trace.json.gz", 200_000),
        "device_labels_50k": lambda d: hostile.device_labels(d / "m.prof", 50_000),
        "xspace_allocators_60k": lambda d: hostile.xspace_allocators(d / "h.xplane.pb", 60_000),
        "xspace_threads_200k": lambda d: hostile.xspace_threads(d / "h.xplane.pb", 200_000),
        "xspace_names_100k": lambda d: hostile.xspace_names(d / "h.xplane.pb", 100_000),
        "xspace_devices_100k": lambda d: hostile.xspace_devices(d / "h.xplane.pb", 100_000),
        "xspace_empty_planes_5M": lambda d: hostile.xspace_empty_planes(d / "h.xplane.pb", 5_000_000),
    }


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _run(path: Path, timeout: float) -> tuple[float, int, str, str]:
    """(seconds, peak RSS in MiB, exit status or "killed", last line of output) of `check PATH`."""
    command = [sys.executable, "-m", "tb_leakfinder.views.cli", "check", str(path), "--no-cache"]
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_limit
    )
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    out = b""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        out += proc.stdout.read() or b""
        if pid:
            break
        if time.perf_counter() - start > timeout:
            os.kill(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            return time.perf_counter() - start, usage.ru_maxrss >> 10, "killed", ""
        time.sleep(0.02)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = out.decode(errors="replace").strip().splitlines()
    return seconds, usage.ru_maxrss >> 10, str(proc.returncode), (lines[-1] if lines else "")[:110]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    cases = _cases()
    chosen = args.only.split(",") if args.only else list(cases)
    missed = 0
    print(f"{'case':<24} {'file':>10} {'seconds':>8} {'RSS MiB':>8} {'exit':>6}  output")
    with tempfile.TemporaryDirectory() as tmp:
        for name in chosen:
            folder = Path(tmp) / name
            folder.mkdir()
            path = cases[name](folder)
            size = path.stat().st_size if path.is_file() and not path.is_symlink() else 0
            seconds, rss, status, last = _run(path, args.timeout)
            missed += seconds > TARGET_S or rss > TARGET_RSS_MIB or status == "killed"
            print(f"{name:<24} {size:>10} {seconds:>8.2f} {rss:>8} {status:>6}  {last}", flush=True)
    print(f"{len(chosen) - missed} of {len(chosen)} within {TARGET_S:g} s and {TARGET_RSS_MIB} MiB")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
