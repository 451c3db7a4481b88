"""Score tb_leakfinder's leak verdicts against the accuracy benchmark's real captures.

    python benchmarks/accuracy/score.py               # a table, one row per case
    python benchmarks/accuracy/score.py --markdown    # the same table in Markdown (for docs/performance.md)
    python benchmarks/accuracy/score.py --json        # every figure, for scripts
    python benchmarks/accuracy/score.py late_onset    # some cases
    python benchmarks/accuracy/score.py --source DIR  # the tb_leakfinder of another tree (default: this checkout)

Each folder of `captures/` (made by record.py) is one run and holds a
`truth.json`. A case fails when
- its run's verdict is wrong: a leak must give `leak`, no leak must give `no_leak`;
- the steps come from another source than the case was recorded for (step
  markers, root events or time windows);
- on a leak, the culprit (the top group of kind `growing`) is not of the
  leaking op (for several families: not one of their ops);
- on a leak, the rate is off by more than the case's `rate_tolerance`. The rate
  is the allocator's `bytes_per_step` when the report has one, else the top
  growing family's (summed over the growing families when the truth has several
  families). Under time windows, rates are per window: they are scored only
  against a `bytes_per_window` in the truth marked exact, else shown only.
The onset (a growing family's `onset_step`, when the report has one) is shown
beside the truth's and never fails a case. The built PyTorch snapshot cases
(record_snapshots.py) may say more, each of which fails a case when wrong:
- `verdict`: the verdict, when it is neither (a snapshot of one moment or of
  one step is `inconclusive`);
- `num_steps`: how many steps the step source gives;
- `growing: false`: no family may grow;
- `reason_contains`: words the allocator's reason must hold;
- `out_of_memory`: a capture taken at an out-of-memory error: its held and
  capacity bytes, and the largest places it was held by (where, bytes) in order.

Exits 1 when any case fails, 2 when there is nothing to score.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
CAPTURES = HERE / "captures"
CHECKOUT = HERE.parents[1]

# truth.json's step_source -> the report's step_source kinds that match it
STEP_KINDS = {
    "markers": ("step_num",),
    "root_events": ("root_events",),
    "time_windows": ("time_windows",),
    "none": ("none",),
}
GROWING = "growing"


@dataclass
class Row:
    case: str
    truth: str  # leak / no_leak
    verdict: str
    step_source: str  # the report's step source kind
    num_steps: int | None
    culprit: str  # "Mul [128,256]" or "-"
    rate: float | None  # bytes per step (per window under time windows)
    truth_rate: float | None
    error: float | None  # relative error of rate
    rate_scored: bool
    onset: int | None
    truth_onset: int | None
    ok: bool
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reason: str = ""  # the report's sentence


def _case_dirs(root: pathlib.Path, names: list[str]) -> list[pathlib.Path]:
    if names:
        missing = [n for n in names if not (root / n / "truth.json").is_file()]
        if missing:
            raise SystemExit(f"no truth.json for {', '.join(missing)} under {root}")
        return [root / n for n in names]
    found = sorted(p.parent for p in root.glob("*/truth.json"))
    # In record.py's order (leaks first) when it lists the cases; it imports no framework at module level.
    try:
        sys.path.insert(0, str(HERE))
        import record

        order = {name: i for i, name in enumerate(record.CASES)}
    except ImportError:
        order = {}
    return sorted(found, key=lambda p: (order.get(p.name, len(order)), p.name))


def _pick_allocator(host: dict[str, Any]) -> dict[str, Any] | None:
    allocators = host.get("allocators") or []
    for allocator in allocators:
        if allocator.get("verdict") == host.get("verdict"):
            return allocator
    return allocators[0] if allocators else None


def score_case(case_dir: pathlib.Path, analyze: Any) -> Row:
    truth = json.loads((case_dir / "truth.json").read_text())
    leak = bool(truth["leak"])
    want_verdict = truth.get("verdict") or ("leak" if leak else "no_leak")
    row = Row(
        case=truth.get("case", case_dir.name),
        truth=want_verdict,
        verdict="error",
        step_source="-",
        num_steps=None,
        culprit="-",
        rate=None,
        truth_rate=None,
        error=None,
        rate_scored=False,
        onset=None,
        truth_onset=truth.get("onset_step"),
        ok=False,
    )
    try:
        report = analyze(str(case_dir))
    except Exception as exc:  # noqa: BLE001 - a case that cannot be analysed is a failed case, not a crash
        row.failures.append(f"analysis failed: {type(exc).__name__}: {exc}")
        return row
    runs = report.get("runs", [])
    if len(runs) != 1 or not runs[0].get("hosts"):
        row.failures.append(f"expected one run with a host, got {len(runs)} runs")
        return row
    run = runs[0]
    host = run["hosts"][0]
    row.verdict = run.get("verdict", "?")
    row.reason = host.get("reason", "")
    source = host.get("step_source") or {}
    row.step_source = source.get("kind", "-")
    row.num_steps = source.get("num_steps")
    wanted = truth.get("step_source", "markers")
    if row.step_source not in STEP_KINDS.get(wanted, (wanted,)):
        row.failures.append(f"steps from {row.step_source}, recorded for {wanted}")
    if row.verdict != want_verdict:
        row.failures.append(f"verdict {row.verdict}, truth {want_verdict}")
    if truth.get("num_steps") is not None and row.num_steps != truth["num_steps"]:
        row.failures.append(f"{row.num_steps} steps, truth {truth['num_steps']}")

    allocator = _pick_allocator(host)
    groups = (allocator or {}).get("families") or []
    growing = [g for g in groups if g.get("kind") == GROWING]
    if truth.get("growing") is False and growing:
        row.failures.append(f"{len(growing)} families grow, truth none")
    reason = (allocator or {}).get("reason", "")
    if truth.get("reason_contains") and truth["reason_contains"] not in reason:
        row.failures.append(f"the reason lacks {truth['reason_contains']!r}")
    row.failures += _out_of_memory_failures(truth.get("out_of_memory"), (allocator or {}).get("out_of_memory"))
    top = growing[0] if growing else None
    if top is not None:
        row.culprit = f"{top.get('op') or '(unknown op)'} {top.get('shape') or ''}".strip()
        row.onset = top.get("onset_step")
    families = truth.get("families") or []
    if allocator is not None and allocator.get("bytes_per_step") is not None:
        row.rate = float(allocator["bytes_per_step"])
    elif len(families) > 1:
        row.rate = float(sum(g.get("bytes_per_step") or 0.0 for g in growing)) if growing else None
    elif top is not None:
        row.rate = float(top.get("bytes_per_step") or 0.0)

    if leak:
        ops = {f["op"] for f in families} or {truth.get("op")}
        if top is None:
            row.failures.append("no growing family")
        elif top.get("op") not in ops:
            row.failures.append(f"culprit {top.get('op')}, truth {' or '.join(sorted(o for o in ops if o))}")
        per_window = row.step_source == "time_windows"
        if per_window:
            row.truth_rate = truth.get("bytes_per_window")
            row.rate_scored = row.truth_rate is not None and bool(truth.get("bytes_per_window_exact"))
        else:
            row.truth_rate = truth.get("bytes_per_step")
            row.rate_scored = row.truth_rate is not None
        if row.truth_rate and row.rate is not None:
            row.error = row.rate / float(row.truth_rate) - 1.0
        tolerance = float(truth.get("rate_tolerance", 0.05))
        if row.rate_scored:
            if row.rate is None:
                if top is not None:  # without a growing family, that failure says it already
                    row.failures.append("no rate")
            elif row.error is not None and abs(row.error) > tolerance:
                row.failures.append(f"rate {row.error:+.1%} off (tolerance {tolerance:.0%})")
        if row.truth_onset is not None and row.onset is not None and row.onset != row.truth_onset:
            row.notes.append(f"onset {row.onset}, truth {row.truth_onset}")
    row.ok = not row.failures
    return row


def _out_of_memory_failures(truth: dict[str, Any] | None, found: dict[str, Any] | None) -> list[str]:
    """How an allocator's `out_of_memory` differs from the truth's: the capture is at an error or not, what it
    held and could hold, and the largest places it was held by, in order."""
    if truth is None:
        return [] if found is None else ["an out-of-memory capture, truth none"]
    if found is None:
        return ["no out-of-memory capture, truth one"]
    failures = [
        f"{key} {found[key]:,}, truth {truth[key]:,}" for key in ("held_bytes", "capacity_bytes") if found[key] != truth[key]
    ]
    held = [[h["where"], h["bytes"]] for h in found["held_at_error"][: len(truth["held_at_error"])]]
    if held != truth["held_at_error"]:
        failures.append(f"held at the error {held}, truth {truth['held_at_error']}")
    return failures


# --- output ----------------------------------------------------------------------


def _kib(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:,.1f} KiB"


def _cells(row: Row) -> list[str]:
    unit = "/window" if row.step_source == "time_windows" else ""
    rate = "-" if row.rate is None else _kib(row.rate) + unit
    truth_rate = "-" if row.truth_rate is None else _kib(row.truth_rate) + unit
    error = "-" if row.error is None else f"{row.error:+.1%}" + ("" if row.rate_scored else " (not scored)")
    steps = f"{row.num_steps} {row.step_source}" if row.num_steps is not None else row.step_source
    onset = "-" if row.onset is None else str(row.onset)
    truth_onset = "-" if row.truth_onset is None else str(row.truth_onset)
    result = "OK" if row.ok else "FAIL: " + "; ".join(row.failures)
    if row.notes:
        result += " (" + "; ".join(row.notes) + ")"
    return [row.case, row.truth, row.verdict, steps, row.culprit, rate, truth_rate, error, onset, truth_onset, result]


HEADER = ["case", "truth", "verdict", "steps", "culprit", "rate", "true rate", "error", "onset", "true onset", "result"]


def text_table(rows: list[Row]) -> str:
    table = [HEADER, *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER) - 1)]
    out = []
    for line in table:
        out.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=False)) + "  " + line[-1])
    return "\n".join(out)


def markdown_table(rows: list[Row]) -> str:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|")

    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(esc(c) for c in _cells(r)) + " |" for r in rows]
    return "\n".join(out)


def summary(rows: list[Row]) -> str:
    failed = [r.case for r in rows if not r.ok]
    verdicts = sum(r.verdict == r.truth for r in rows)
    line = f"{len(rows) - len(failed)} of {len(rows)} cases OK; verdicts right on {verdicts} of {len(rows)}."
    return line + (f" Failed: {', '.join(failed)}." if failed else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case folders to score (default: all under --captures)")
    parser.add_argument("--captures", type=pathlib.Path, default=CAPTURES, help="the folder record.py writes")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="print the table in Markdown")
    output.add_argument("--json", action="store_true", help="print every row as JSON")
    parser.add_argument(
        "--source",
        type=pathlib.Path,
        default=CHECKOUT,
        help="the tree whose tb_leakfinder package is scored (default: this checkout, not an installed copy)",
    )
    args = parser.parse_args(argv)

    sys.path.insert(0, str(args.source.resolve()))
    import tb_leakfinder

    print(f"scoring {pathlib.Path(tb_leakfinder.__file__).parent}", file=sys.stderr)

    def analyze(path: str) -> dict[str, Any]:
        return tb_leakfinder.analyze(path, cache=False)  # always the code under test, never a cached analysis

    dirs = _case_dirs(args.captures, args.cases)
    if not dirs:
        print(f"no case with a truth.json under {args.captures}: run record.py first", file=sys.stderr)
        return 2
    rows = [score_case(d, analyze) for d in dirs]
    if args.json:
        print(json.dumps({"cases": [asdict(r) for r in rows], "ok": all(r.ok for r in rows)}, indent=2))
    elif args.markdown:
        print(markdown_table(rows))
        print()
        print(summary(rows))
    else:
        print(text_table(rows))
        print()
        print(summary(rows))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
