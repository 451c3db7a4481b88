"""Decoder throughput: the compiled scanner against protobuf's own parser (upb), on the same bytes, warm.

    python benchmarks/bench_scan.py              # the 1M-event profile of bench_memory.py, 7 rounds
    python benchmarks/bench_scan.py --rounds 15

The peer is `XSpace.FromString` (upb, C): it only builds message objects,
where the scanner also extracts every column, span and group. The file is
read once; each round times, in turn, the scanner with one thread and with
read/reader.py's SCAN_THREADS, the whole `reader.decode` (scan, then the
columns sorted and the model built), and the upb parse. Medians and bests are
reported in MB/s of file, with the ratio of each to upb's median, in wall time
and in CPU time (all threads). The machine is shared: the load average is
printed beside the figures, and on a loaded machine CPU time is the fairer one.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_memory import profile  # noqa: E402 - the same synthesised 1M-event profile

from tb_leakfinder import proto  # noqa: E402
from tb_leakfinder.read.formats.xplane import reader, scan  # noqa: E402


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds of one call; CPU counts every thread of the process."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    result = work()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    del result
    return seconds, cpu_seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tb_leakfinder_bench"))
    args = parser.parse_args()
    scanner = scan.compiled_scanner()
    if scanner is None:
        print("the C scanner is not built (python setup.py build_ext --inplace)", file=sys.stderr)
        return 2
    session, _ = profile(args.workdir, 1_000_000, 100)
    path = session / "host0.xplane.pb"
    data = path.read_bytes()
    megabytes = len(data) / 1e6
    threads = scan.SCAN_THREADS
    cases: dict[str, Callable[[], object]] = {
        "scanner, 1 thread": lambda: scanner.scan(data, threads=1),
        f"scanner, {threads} threads": lambda: scanner.scan(data, threads=threads),
        f"reader.decode ({threads} threads)": lambda: reader.decode(data, "host0", str(path)),
        "upb XSpace.FromString (peer)": lambda: proto.XSpace().FromString(data),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for name, work in cases.items():
            wall, cpu_seconds = timed(work)
            times[name].append(wall)
            cpu[name].append(cpu_seconds)
        load.append(os.getloadavg()[0])
    print(f"{path}: {megabytes:.0f} MB; {args.rounds} rounds")
    print(f"load average {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} CPUs")
    for label, measured in (("wall", times), ("CPU", cpu)):
        peer = statistics.median(measured["upb XSpace.FromString (peer)"])
        print(f"\n{label + ' time':34} {'median':>9} {'MB/s':>6} {'best':>9} {'MB/s':>6} {'vs upb (median)':>16}")
        for name, values in measured.items():
            median, best = statistics.median(values), min(values)
            print(
                f"{name:34} {median * 1000:7.0f}ms {megabytes / median:6.0f} {best * 1000:7.0f}ms {megabytes / best:6.0f} "
                f"{median / peer:15.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
