"""The long fuzz run: the CI fuzz harness for 100,000+ inputs per decoder (not collected by pytest).

    python tests/fuzz_long.py --inputs 100000 --seed 1 --out fuzz_long.json

Runs the XSpace fuzz on each decoder path (the pure-Python reference
decoder, and the C scanner) and the HLO fuzz, prints a JSON summary and
writes every crashing input to --crash-dir. A hang ends the process: the
watchdog dumps every thread's stack and exits with status 3. The outcome of
the last run is recorded in docs/robustness.md.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tb_leakfinder.read import xspace
from tests.test_fuzz_hlo import hlo_inputs, run_hlo_input
from tests.test_fuzz_xspace import PURE_ENV, Tally, fuzz_inputs, peak_rss_bytes, run_input

HANG_SECONDS = 120


def _crash_file(crash_dir: Path, label: str, index: int, data: bytes) -> None:
    crash_dir.mkdir(parents=True, exist_ok=True)
    (crash_dir / f"{label}-{index}.bin").write_bytes(data)


def xspace_run(label: str, seed: int, count: int, crash_dir: Path, work: Path) -> dict:
    tally = Tally()
    start = time.monotonic()
    for index, (name, data) in enumerate(fuzz_inputs(seed, count)):
        faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
        crashes = len(tally.crashes)
        run_input(tally, name, data, work / "fuzz.xplane.pb")
        if len(tally.crashes) > crashes:
            _crash_file(crash_dir, label, index, data)
    faulthandler.cancel_dump_traceback_later()
    return {**tally.as_json(), "seconds": round(time.monotonic() - start, 1), "first_crashes": tally.crashes[:20]}


def hlo_run(seed: int, count: int, crash_dir: Path) -> dict:
    tally = Tally()
    start = time.monotonic()
    for index, (name, key, data) in enumerate(hlo_inputs(seed, count)):
        faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
        crashes = len(tally.crashes)
        run_hlo_input(tally, name, key, data)
        if len(tally.crashes) > crashes:
            _crash_file(crash_dir, "hlo", index, data)
    faulthandler.cancel_dump_traceback_later()
    return {**tally.as_json(), "seconds": round(time.monotonic() - start, 1), "first_crashes": tally.crashes[:20]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="inputs per decoder path and for HLO")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write the summary JSON here")
    parser.add_argument("--crash-dir", type=Path, default=Path("fuzz_crashes"))
    parser.add_argument("--only", choices=("pure", "compiled", "hlo"), action="append", help="run only these parts")
    args = parser.parse_args()
    parts = args.only or ["pure", "compiled", "hlo"]
    faulthandler.enable()
    rss_start = peak_rss_bytes()
    summary: dict = {"seed": args.seed, "inputs_per_part": args.inputs}
    with tempfile.TemporaryDirectory() as work:
        for part in parts:
            if part == "hlo":
                summary["hlo"] = hlo_run(args.seed, args.inputs, args.crash_dir)
                continue
            if part == "pure":
                os.environ[PURE_ENV] = "1"
            else:
                os.environ.pop(PURE_ENV, None)
                if xspace.compiled_scanner() is None:
                    summary["xspace_compiled"] = "not run: the C scanner is not built"
                    continue
            summary[f"xspace_{part}"] = xspace_run(part, args.seed, args.inputs, args.crash_dir, Path(work))
            print(json.dumps({part: summary[f"xspace_{part}"]}), flush=True)
    summary["peak_rss_mb"] = peak_rss_bytes() >> 20
    summary["peak_rss_growth_mb"] = (peak_rss_bytes() - rss_start) >> 20
    text = json.dumps(summary, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    crashed = sum(part.get("crashes", 0) for part in summary.values() if isinstance(part, dict))
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
