"""The long fuzz run: the CI fuzz harness for 100,000+ inputs (not collected by pytest).

    python tests/fuzz/fuzz_long.py --inputs 100000 --seed 1 --out fuzz_long.json

Each XSpace input goes through both decoder paths (the pure-Python reference
decoder and the C scanner, when built) and their answers are compared; then
the HLO fuzz runs as many inputs. Prints a JSON summary and writes every
crashing or disagreeing input to --crash-dir. A hang ends the process: the
watchdog dumps every thread's stack and exits. The outcome of the last run is
recorded in docs/robustness.md.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.fuzzing import Tally, decoder_paths, fuzz_inputs, hlo_inputs, peak_rss_bytes, run_differential, run_hlo_input

HANG_SECONDS = 120
PROGRESS_EVERY = 5000


def _keep(crash_dir: Path, label: str, index: int, data: bytes) -> None:
    crash_dir.mkdir(parents=True, exist_ok=True)
    (crash_dir / f"{label}-{index}.bin").write_bytes(data)


def _summary(tally: Tally, start: float) -> dict:
    return {**tally.as_json(), "seconds": round(time.monotonic() - start, 1), "first_crashes": tally.crashes[:20]}


def xspace_run(seed: int, count: int, crash_dir: Path, work: Path) -> dict:
    tallies = {decoder: Tally() for decoder in decoder_paths()}
    disagreements: list[str] = []
    start = time.monotonic()
    for index, (name, data) in enumerate(fuzz_inputs(seed, count)):
        faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
        crashes = sum(len(t.crashes) for t in tallies.values())
        if not run_differential(tallies, name, data, work / "fuzz.xplane.pb"):
            disagreements.append(name)
            _keep(crash_dir, "disagree", index, data)
        if sum(len(t.crashes) for t in tallies.values()) > crashes:
            _keep(crash_dir, "xspace", index, data)
        if (index + 1) % PROGRESS_EVERY == 0:
            print(f"xspace {index + 1}/{count}: {len(disagreements)} disagreements, {time.monotonic() - start:.0f} s", flush=True)
    faulthandler.cancel_dump_traceback_later()
    result = {f"xspace_{decoder}": _summary(tally, start) for decoder, tally in tallies.items()}
    return {**result, "decoder_disagreements": len(disagreements), "first_disagreements": disagreements[:20]}


def hlo_run(seed: int, count: int, crash_dir: Path) -> dict:
    tally = Tally()
    start = time.monotonic()
    for index, (name, key, data) in enumerate(hlo_inputs(seed, count)):
        faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
        crashes = len(tally.crashes)
        run_hlo_input(tally, name, key, data)
        if len(tally.crashes) > crashes:
            _keep(crash_dir, "hlo", index, data)
        if (index + 1) % PROGRESS_EVERY == 0:
            print(f"hlo {index + 1}/{count}: {len(tally.crashes)} crashes, {time.monotonic() - start:.0f} s", flush=True)
    faulthandler.cancel_dump_traceback_later()
    return {"hlo": _summary(tally, start)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="XSpace inputs (each through every decoder), and HLO inputs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write the summary JSON here")
    parser.add_argument("--crash-dir", type=Path, default=Path("fuzz_crashes"))
    parser.add_argument("--only", choices=("xspace", "hlo"), help="run only one part")
    args = parser.parse_args()
    faulthandler.enable()
    rss_start = peak_rss_bytes()
    summary: dict = {"seed": args.seed, "inputs": args.inputs, "decoders": decoder_paths()}
    with tempfile.TemporaryDirectory() as work:
        if args.only in (None, "xspace"):
            summary.update(xspace_run(args.seed, args.inputs, args.crash_dir, Path(work)))
            print(json.dumps(summary), flush=True)
        if args.only in (None, "hlo"):
            summary.update(hlo_run(args.seed, args.inputs, args.crash_dir))
    summary["peak_rss_mb"] = peak_rss_bytes() >> 20
    summary["peak_rss_growth_mb"] = (peak_rss_bytes() - rss_start) >> 20
    text = json.dumps(summary, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    failed = sum(part["crashes"] for part in summary.values() if isinstance(part, dict)) + summary.get("decoder_disagreements", 0)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
