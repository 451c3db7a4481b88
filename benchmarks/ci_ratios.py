"""The small runs of the benchmarks that CI makes (tests/run.sh), and the figures they are held to.

Each benchmark's `--ci` run measures a small version of itself (a 20 MB PyTorch trace, 100k XProf events) and
compares ratios to its peer, never absolute times: CPU time to the peer's CPU time, which load from other
processes inflates little. `--ci --record` writes them into `ci_ratios.json` beside this file (RESULTS.md quotes
them); a `--ci` run fails only when a ratio is more than SLACK times its recorded figure.
"""

from __future__ import annotations

import json
from pathlib import Path

RATIOS = Path(__file__).with_name("ci_ratios.json")
SLACK = 2.0


def record_or_check(bench: str, ratios: dict[str, float], record: bool) -> bool:
    """Records `ratios` as `bench`'s figures, or prints them against the recorded ones; False on a regression."""
    recorded: dict[str, dict[str, float]] = json.loads(RATIOS.read_text()) if RATIOS.exists() else {}
    if record:
        recorded[bench] = {name: round(value, 3) for name, value in sorted(ratios.items())}
        RATIOS.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        print(f"recorded in {RATIOS.name}: {recorded[bench]}")
        return True
    ok = True
    for name, value in sorted(ratios.items()):
        figure = recorded.get(bench, {}).get(name)
        if figure is None:
            print(f"  {name}: {value:.3f}x; no recorded figure in {RATIOS.name} (run with --ci --record)")
            ok = False
            continue
        within = value <= SLACK * figure
        verdict = "ok" if within else "REGRESSION"
        print(f"  {name}: {value:.3f}x, recorded {figure:.3f}x, fails above {SLACK * figure:.3f}x: {verdict}")
        ok &= within
    return ok
