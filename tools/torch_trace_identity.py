"""Show that the PyTorch trace reader's three paths, and the reader of another revision, read traces alike.

The corpus: the real traces of ../shared/profiles/torch, and traces written here: the benchmark's synthesized
trace (small), the tests' training loop, each of them gzipped, and the first re-spaced, with integer times and with
names past ASCII. Each trace is read four ways: with runs of events scanned by the compiled scanner
(`_kineto_scan.c`, when built), with runs decoded by msgspec (`chunks.COMPILED` off), one event at a time
(`reader.CHUNKED` off: the reader without msgspec), and by the reader of `--against` (default HEAD) loaded from
git. Compared: every column of the events, spans and steps, the duration, start, warnings, allocators and step
marker, and the report JSON the plugin serves for the host.

    python tools/torch_trace_identity.py                  # against HEAD's reader
    python tools/torch_trace_identity.py --against main

Exits 1 naming the trace and the part that differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests" / "unit" / "read" / "formats" / "torch_trace")]

from bench_torch_trace import write_trace  # noqa: E402
from trace_files import training, write  # noqa: E402

from tb_leakfinder.engine.engine import analyze_file  # noqa: E402
from tb_leakfinder.read import files  # noqa: E402
from tb_leakfinder.read.formats.torch_trace import chunks, reader, stream  # noqa: E402

REAL = ROOT.parent / "shared" / "profiles" / "torch"
READER = "tb_leakfinder/read/formats/torch_trace/reader.py"


def flatten(profile: Any) -> dict[str, Any]:
    """A profile's parts as plain values, by name."""
    out: dict[str, Any] = {}
    for part in dataclasses.fields(profile):
        value = getattr(profile, part.name)
        if dataclasses.is_dataclass(value):
            for name, inner in vars(value).items():
                out[f"{part.name}.{name}"] = inner.tolist() if isinstance(inner, np.ndarray) else inner
        else:
            out[part.name] = value
    return out


def reader_at(revision: str) -> ModuleType:
    """The trace reader module as it is at `revision`."""
    source = subprocess.run(["git", "show", f"{revision}:{READER}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    name = re.sub(r"\W", "_", revision)
    spec = importlib.util.spec_from_loader(f"reader_at_{name}", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    exec(compile(source, f"{revision}:{READER}", "exec"), module.__dict__)
    return module


def corpus(tmp: Path) -> list[Path]:
    """The real traces and the ones written here."""
    traces = sorted(REAL.glob("*/*.json*")) if REAL.is_dir() else []
    bench = tmp / "bench.pt.trace.json"
    with open(bench, "w") as out:
        write_trace(out, 6 << 20)
    built = write(tmp / "training.pt.trace.json", training(steps=40))
    text = bench.read_text()
    spaced = tmp / "spaced.pt.trace.json"
    spaced.write_text(text.replace(",\n", " ,\n\t").replace('": ', '":'))
    integers = tmp / "integers.pt.trace.json"
    integers.write_text(re.sub(r'"(ts|dur)": (\d+)\.\d+', r'"\1": \2', text))
    unicode = tmp / "unicode.pt.trace.json"
    unicode.write_text(text.replace('"aten::', '"aten::ñ✓'), "utf-8")
    written = [bench, built, spaced, integers, unicode]
    for path in written[:2]:
        packed = path.with_name(path.name + ".gz")
        packed.write_bytes(gzip.compress(path.read_bytes()))
        written.append(packed)
    return traces + written


def read(path: Path, module: ModuleType) -> dict[str, Any]:
    return flatten(module.decode(files.read_blocks(str(path), limit=stream.MAX_TRACE_BYTES), "worker0", str(path)))


def report(path: Path, logdir: Path) -> Any:
    return json.loads(json.dumps(analyze_file(str(path), "worker0", str(logdir)).json(), sort_keys=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="HEAD")
    args = parser.parse_args()
    other = reader_at(args.against)
    other.CHUNKED = False  # a revision that has chunks reads one event at a time too
    failed = 0
    # The paths of this tree: each (COMPILED, CHUNKED); the compiled one only where it is built.
    paths = {"compiled": (True, True), "msgspec": (False, True), "one at a time": (False, False)}
    if chunks._scanner is None:
        print("(the compiled scanner is not built: python setup.py build_ext --inplace)")
        del paths["compiled"]
    with tempfile.TemporaryDirectory(prefix="torch_trace_identity_") as tmp:
        for path in corpus(Path(tmp)):
            profiles, reports = {}, {}
            for how, (chunks.COMPILED, reader.CHUNKED) in paths.items():
                profiles[how], reports[how] = read(path, reader), report(path, Path(tmp))
            profiles[args.against] = read(path, other)
            first, *others = profiles
            mine = profiles[first]
            differ = [f"{name} ({how})" for how in others for name in mine if profiles[how][name] != mine[name]]
            differ += [f"report JSON ({how})" for how in reports if reports[how] != reports[first]]
            events = len(mine["events.time_ps"])
            print(f"{'same' if not differ else 'DIFFERENT'}: {path.name} ({events:,} memory events){': ' if differ else ''}"
                  f"{', '.join(differ)}")  # fmt: skip
            failed += bool(differ)
    chunks.COMPILED = True
    reader.CHUNKED = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
