"""Which JSON library decodes a PyTorch trace fastest (issue #32): the measurement behind torch_trace/chunks.py.

    python benchmarks/bench_json_libraries.py [--megabytes 200] [--runs 3]

bench_torch_trace's synthesized trace of --megabytes is decoded whole, each way in a fresh process, the ways
alternating; wall and CPU time are medians of --runs. The ways: the json module; orjson; msgspec without a type
(dicts and lists, as the others); msgspec into the reader's typed structs (`chunks.Event`: the fields the reader
uses, `args` reduced to its figures, the shapes kept raw); pysimdjson parsing the file and reading each event's
`ph`, `name` and `ts` (its objects are lazy: unread values cost nothing); and the reader itself (`read_host`:
decoding in chunks and storing the model's columns). A library that is not installed is left out.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from bench_memory import byte_compile, child_env, run_child
from bench_torch_trace import write_trace

WAYS = {
    "json (standard library)": "import json\nwith open(sys.argv[1], 'rb') as f:\n    json.load(f)",
    "orjson": "import orjson\nwith open(sys.argv[1], 'rb') as f:\n    orjson.loads(f.read())",
    "msgspec, untyped": "import msgspec\nwith open(sys.argv[1], 'rb') as f:\n    msgspec.json.decode(f.read())",
    "msgspec, typed structs (chunks.Event)": (
        "import msgspec\nfrom tb_leakfinder.read.formats.torch_trace.chunks import Event\n"
        "class Trace(msgspec.Struct):\n    traceEvents: list[Event]\n"
        "with open(sys.argv[1], 'rb') as f:\n    msgspec.json.decode(f.read(), type=Trace)"
    ),
    "pysimdjson, reading ph, name, ts": (
        "import simdjson\nwith open(sys.argv[1], 'rb') as f:\n    doc = simdjson.Parser().parse(f.read())\n"
        "for event in doc['traceEvents']:\n    event.get('ph'), event.get('name'), event.get('ts')"
    ),
    "the reader (read_host: chunks of msgspec structs into the model's columns)": (
        "from tb_leakfinder.read.formats.torch_trace.reader import read_host\nread_host(sys.argv[1], 'h')"
    ),
}
MODULES = {"orjson": "orjson", "msgspec": "msgspec", "pysimdjson": "simdjson"}


def available(way: str) -> bool:
    for name, module in MODULES.items():
        if way.startswith(name):
            try:
                __import__(module)
            except ImportError:
                return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    byte_compile()
    env = child_env()
    ways = {name: f"import sys\n{code}" for name, code in WAYS.items() if available(name)}
    with tempfile.TemporaryDirectory(prefix="bench_json_libraries_") as tmp:
        path = Path(tmp) / "trace.pt.trace.json"
        with open(path, "w", buffering=16 << 20) as out:
            write_trace(out, int(args.megabytes * (1 << 20)))
        print(f"trace: {path.stat().st_size / 1e6:.0f} MB; medians of {args.runs} fresh processes, the ways alternating")
        measures: dict[str, list] = {name: [] for name in ways}
        for _ in range(args.runs):
            for name, code in ways.items():
                measures[name].append(run_child(code, str(path), env=env))
    base_wall = statistics.median(m.wall_s for m in measures["json (standard library)"])
    base_cpu = statistics.median(m.cpu_s for m in measures["json (standard library)"])
    print("| decoding | wall | CPU | to json's wall | to json's CPU | peak RSS |")
    print("|---|---|---|---|---|---|")
    for name, runs in measures.items():
        wall, cpu = statistics.median(m.wall_s for m in runs), statistics.median(m.cpu_s for m in runs)
        rss = statistics.median(m.rss_bytes for m in runs)
        ratios = f"{wall / base_wall:.2f}x | {cpu / base_cpu:.2f}x"
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {ratios} | {rss / (1 << 20):,.0f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
