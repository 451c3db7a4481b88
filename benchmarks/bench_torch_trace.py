"""A PyTorch profiler trace of a gigabyte, analysed as a stream (issue #23).

    python benchmarks/bench_torch_trace.py [--gigabytes 1.0] [--runs 3] [--gzip]
    python benchmarks/bench_torch_trace.py --ci [--record]   # CI's small run: 20 MB, ratios against ci_ratios.json

A Kineto trace of the newer form is synthesised into a temporary folder: ProfilerStep#N steps, each a
run of `python_function` frames around `cpu_op` events with their input shapes, `[memory]` events with
`Addr` and `Total Allocated` on cuda:0 (temporaries freed by the next op) and the CPU, and one planted
leak per step (`aten::leaky_cache`, 64 KiB never freed). Each measured run is a fresh process: the
analysis the plugin runs for a host (`analyze_file`, then its report JSON), and the peer, `json.load` of
the same file alone (what any reader that parses the whole JSON at once holds), alternating, and the
reader alone (`read_host`: its peak RSS against the bytes of the model's columns it returns); wall time,
CPU time and peak RSS (the child's own, from wait4) are medians of --runs. With --gzip the analysis is
also measured on the gzipped file. Exits non-zero when the planted leak is not found or a target of issue #32
is missed: the analysis within 0.15x json.load's wall time (0.2x gzipped) and 1.5 GiB of peak RSS.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from bench_memory import Measure, byte_compile, child_env, run_child

LEAK_BYTES = 64 << 10
MAX_TIME_RATIO = 0.15
MAX_GZIP_TIME_RATIO = 0.2
MAX_RSS_BYTES = 1.5 * (1 << 30)
CI_GIGABYTES = 0.02
TEMP_BYTES = 1 << 20
OPS_PER_STEP = 20_000
STEPS_PER_GB = 40
ANALYSIS = """
import json, sys
from tb_leakfinder.engine.engine import analyze_file
result = analyze_file(sys.argv[1], "worker0", sys.argv[2])
body = result.json()
(cuda,) = [a for a in body["allocators"] if a["memory_id"] == "cuda:0"]
events = sum(a["num_allocations"] + a["num_deallocations"] for a in body["allocators"])
print(json.dumps({"verdict": cuda["verdict"], "events": events, "label": next((f["label"] for f in cuda["families"]), "")}))
"""
READ = """
import json, sys
from tb_leakfinder.read.formats.torch_trace.reader import read_host
profile = read_host(sys.argv[1], "worker0")
model = sum(getattr(part, name).nbytes for part in (profile.events, profile.spans, profile.steps) for name in vars(part)
            if hasattr(getattr(part, name), "nbytes"))
print(json.dumps({"model_bytes": model}))
"""
PEER = """
import json, sys
with open(sys.argv[1], "rb") as f:
    trace = json.load(f)
print(json.dumps({"events": len(trace["traceEvents"])}))
"""


def write_trace(out: IO[str], target_bytes: int) -> int:
    """A trace of about `target_bytes` into `out`; the number of steps written."""
    rng = random.Random(23)
    out.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "totalGlobalMem": 85899345920}],')
    out.write(' "baseTimeNanoseconds": 1751410836000000000, "traceEvents": [\n')
    written = 0
    ts = 1000.0
    total = 1 << 30  # weights allocated before the trace
    addr = 0x7F0000000000
    step = 0
    first = True
    steps = max(3, round(target_bytes / (1 << 30) * STEPS_PER_GB))
    per_step = max(50, target_bytes // steps // 1000)  # about a kilobyte per op
    while step < steps:
        step_start = ts
        events: list[str] = []
        pending: int | None = None
        for k in range(per_step):
            dur = 8.0 + rng.random()
            rows = 64 << (k % 4)
            events.append(
                f'{{"ph": "X", "cat": "python_function", "name": "train.py({40 + k % 7}): forward", "pid": 7, "tid": 7,'
                f' "ts": {ts:.3f}, "dur": {dur + 1:.3f}, "args": {{"Python id": {k}, "Python parent id": 1}}}}'
            )
            events.append(
                f'{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": {ts + 0.5:.3f},'
                f' "dur": {dur:.3f}, "args": {{"External id": {k}, "Input Dims": [[{rows}, 1024], [1024, 1024]],'
                f' "Input type": ["float", "float"], "Sequence number": {k}}}}}'
            )
            if pending is not None:
                total -= TEMP_BYTES
                events.append(_memory(ts + 1.0, -TEMP_BYTES, pending, total))
            addr += 1 << 21
            pending = addr
            total += TEMP_BYTES
            events.append(_memory(ts + 2.0, TEMP_BYTES, addr, total))
            if k == per_step // 2:
                events.append(
                    f'{{"ph": "X", "cat": "cpu_op", "name": "aten::leaky_cache", "pid": 7, "tid": 7, "ts": {ts + 3:.3f},'
                    f' "dur": 1.0, "args": {{"Input Dims": [[16384]], "Input type": ["float"]}}}}'
                )
                addr += 1 << 21
                total += LEAK_BYTES
                events.append(_memory(ts + 3.5, LEAK_BYTES, addr, total))
            if k % 100 == 0:
                events.append(_memory(ts + 4.0, 4096, addr + 1, 4096, device_type=0, device_id=-1))
                events.append(_memory(ts + 5.0, -4096, addr + 1, 0, device_type=0, device_id=-1))
            ts += dur + 2.0
        if pending is not None:
            total -= TEMP_BYTES
            events.append(_memory(ts, -TEMP_BYTES, pending, total))
        ts += 1.0
        events.append(
            f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step + 1}", "pid": 7, "tid": 7,'
            f' "ts": {step_start:.3f}, "dur": {ts - step_start:.3f}, "args": {{}}}}'
        )
        text = ",\n".join(events)
        out.write(text if first else ",\n" + text)
        written += len(text)
        first = False
        step += 1
    out.write("\n]}\n")
    return steps


def _memory(ts: float, nbytes: int, addr: int, total: int, device_type: int = 1, device_id: int = 0) -> str:
    return (
        f'{{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": {ts:.3f},'
        f' "args": {{"Total Reserved": {total + (1 << 30)}, "Total Allocated": {total}, "Bytes": {nbytes},'
        f' "Addr": {addr}, "Device Id": {device_id}, "Device Type": {device_type}}}}}'
    )


def _medians(measures: list[Measure]) -> tuple[float, float, float]:
    """Median wall time, CPU time and peak RSS."""
    wall, cpu, rss = (
        statistics.median(m.wall_s for m in measures),
        statistics.median(m.cpu_s for m in measures),
        statistics.median(m.rss_bytes for m in measures),
    )
    return wall, cpu, rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gzip", action="store_true", help="also analyse the gzipped trace")
    parser.add_argument("--ci", action="store_true", help="CI's small run: a 20 MB trace, CPU ratios against ci_ratios.json")
    parser.add_argument("--record", action="store_true", help="with --ci: record its ratios instead")
    args = parser.parse_args()
    if args.ci:
        args.gigabytes, args.gzip = CI_GIGABYTES, True
    byte_compile()
    env = child_env()
    tmp = Path(tempfile.mkdtemp(prefix="bench_torch_trace_"))
    try:
        plain = tmp / "worker0.1751410836000000000.pt.trace.json"
        start = time.perf_counter()
        with open(plain, "w", buffering=16 << 20) as out:
            steps = write_trace(out, int(args.gigabytes * (1 << 30)))
        size = plain.stat().st_size
        print(f"trace: {size / 1e9:.2f} GB, {steps} steps, written in {time.perf_counter() - start:.1f} s")
        files = {"plain": plain}
        if args.gzip:
            packed = tmp / "worker0.1751410836000000001.pt.trace.json.gz"
            with open(plain, "rb") as src, gzip.open(packed, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 16 << 20)
            files["gzip"] = packed
            print(f"gzipped: {packed.stat().st_size / 1e6:.0f} MB")
        ours: dict[str, list[Measure]] = {name: [] for name in files}
        peer: list[Measure] = []
        reads: list[Measure] = []
        for _ in range(args.runs):
            for name, path in files.items():
                ours[name].append(run_child(ANALYSIS, str(path), str(tmp), env=env))
            peer.append(run_child(PEER, str(plain), env=env))
            reads.append(run_child(READ, str(plain), env=env))
        answer = json.loads(ours["plain"][0].stdout.strip().splitlines()[-1])
        events = json.loads(peer[0].stdout.strip().splitlines()[-1])["events"]
        print(f"{events:,} trace events, {answer['events']:,} memory events; cuda:0: {answer['verdict']}, {answer['label']}")
        model = json.loads(reads[0].stdout.strip().splitlines()[-1])["model_bytes"]
        peer_wall, peer_cpu, peer_rss = _medians(peer)
        print(f"medians of {args.runs} fresh processes, alternating:")
        print(f"  json.load alone (peer): {peer_wall:.1f} s, CPU {peer_cpu:.1f} s, peak RSS {peer_rss / (1 << 20):,.0f} MiB")
        wall, cpu, rss = _medians(reads)
        print(f"  the reader alone: {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss / (1 << 20):,.0f} MiB", end="")
        print(f" for a model of {model / (1 << 20):,.0f} MiB")
        ok = answer["verdict"] == "leak" and "leaky_cache" in answer["label"]
        ratios: dict[str, float] = {}
        for name, measures in ours.items():
            wall, cpu, rss = _medians(measures)
            print(
                f"  analysis of the {name} trace: {wall:.2f} s, CPU {cpu:.2f} s, peak RSS {rss / (1 << 20):,.0f} MiB;"
                f" ratio to the peer {wall / peer_wall:.3f}x time, {cpu / peer_cpu:.3f}x CPU, {rss / peer_rss:.2f}x RSS"
            )
            ratios[f"analysis_cpu_vs_json_load_{name}"] = cpu / peer_cpu
            limit = MAX_GZIP_TIME_RATIO if name == "gzip" else MAX_TIME_RATIO
            ok &= args.ci or (wall / peer_wall <= limit and rss <= MAX_RSS_BYTES)
        if args.ci:
            from ci_ratios import record_or_check

            ok &= record_or_check("bench_torch_trace", ratios, args.record)
        else:
            print(f"targets (<= {MAX_TIME_RATIO}x time, gzipped <= {MAX_GZIP_TIME_RATIO}x, <= 1.5 GiB) met: {ok}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
