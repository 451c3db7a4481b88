"""A real PyTorch CPU capture whose leaks are made by lines that PyTorch's with_stack frames do not name.

    python tests/support/torch_lines.py LOGDIR

records the TensorBoard run LOGDIR/lines with tb_leakfinder.capture(framework="torch") and prints one JSON object:
its report and, for each leak, the line that makes it, found in this file's own text by the comment ending it.
tests/integration/test_torch_captures.py runs it in a process of its own.

Two leaks, each where with_stack would name the wrong line: `keep_scaled` keeps the third of its three products
(with_stack names a function entered during the capture by its first line, the `def`), and the loop body keeps a
clone (with_stack names a frame running when the profiler started by the line it was at then, `with cap.step`).
"""

from __future__ import annotations

import json
import pathlib
import re
import sys
from typing import Any

STEPS = 4  # captured steps, after one warm-up step


def keep_scaled(kept: list[Any], hidden: Any) -> None:
    shifted = hidden + 1
    doubled = shifted * 2
    kept.append(doubled * 0.5)  # leak: scaled


def record(logdir: pathlib.Path) -> dict[str, Any]:
    import torch

    import tb_leakfinder

    kept: list[Any] = []
    x = torch.ones(32, 32)
    with tb_leakfinder.capture(logdir / "lines", start=1, count=STEPS, framework="torch") as cap:
        for step in range(STEPS + 1):
            with cap.step(step):
                hidden = x @ x
                keep_scaled(kept, hidden)
                kept.append(hidden.clone())  # leak: clone
                del hidden
    return cap.report()


def leak_lines() -> dict[str, str]:
    """Each leak's `where` as the report should give it, from this file's text: "torch_lines.py:27 in keep_scaled"."""
    text = pathlib.Path(__file__).read_text(encoding="utf-8").splitlines()
    lines = {}
    for number, line in enumerate(text, 1):
        if leak := re.search(r"  # leak: (\w+)$", line):
            function = next(t.split("def ")[1].split("(")[0] for t in reversed(text[:number]) if t.startswith("def "))
            lines[leak.group(1)] = f"{pathlib.Path(__file__).name}:{number} in {function}"
    return lines


if __name__ == "__main__":
    print(json.dumps({"report": record(pathlib.Path(sys.argv[1])), "where": leak_lines()}))
