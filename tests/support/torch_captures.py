"""Real PyTorch CPU captures of four leak shapes, recorded with tb_leakfinder.capture(framework="torch").

    python tests/support/torch_captures.py LOGDIR [CASE ...]

records each case (all by default) as the TensorBoard run LOGDIR/<case> and prints one JSON object: per case,
its report and the truth its constants give (CASES). tests/integration/test_torch_captures.py runs it in a
process of its own, so torch's native libraries stay out of the test process.

Every case is a small training-like step: a batch gathered from a fixed dataset (aten::index_select), a linear
layer and a ReLU, a loss, all of it freed every step, after one warm-up step outside the capture. On top of it:
- kept_every_step: `keep` appends `hidden * 0.5` ([128,256] float, 128 KiB) to a list every step;
- late_onset: the same product is a freed temporary in the first half and kept from LATE_ONSET on;
- regrown: `regrow` concatenates ROWS_PER_STEP rows onto a buffer every step: one buffer, each step's copy
  ROWS_PER_STEP * 256 floats larger, the old one freed;
- copies: three lists, appended to every step with `hidden.clone()` ([128,256] float, 128 KiB),
  `hidden.to(torch.float64)` (256 KiB) and `torch.zeros_like(batch)` ([128,64] float, 32 KiB): ops that allocate
  through a primitive (aten::empty_strided, aten::empty_like), which must not name them;
- clean: nothing is kept.
With no case named, PERIODIC is recorded too: kept_every_step's leak captured with `every`, a trace per window.
Each leaking statement is the only one of its function, its last line: the line the report names.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import pathlib
import sys
import time
from typing import Any

BATCH, FEATURES, HIDDEN, DATASET = 128, 64, 256, 1024
STEPS = 30  # captured steps, after one warm-up step
LATE_ONSET = 15  # late_onset keeps the product from this captured step on
ROWS_PER_STEP = 16
FLOAT_BYTES = 4
# The run PERIODIC keeps a product every step and is captured in windows: steps 1-3, 6-8 and 11-13.
PERIODIC = "periodic"
PERIODIC_WINDOWS = {"start": 1, "count": 3, "every": 5}
PERIODIC_STEPS = 14
# Between PERIODIC's steps, as a job's data and compute take time: the windows start 1 s apart, far more than
# the few ms a profiler takes to start, so that the traces' own clocks tell the job's pace.
PERIODIC_PAUSE_S = 0.2
KEPT_BYTES = BATCH * HIDDEN * FLOAT_BYTES


@dataclasses.dataclass(frozen=True)
class Family:
    """A leaking family besides a case's largest one."""

    op: str
    shape: str
    bytes_per_step: int
    function: str


@dataclasses.dataclass(frozen=True)
class Case:
    description: str
    leak: bool
    op: str | None  # the op whose output leaks (of several families, the largest's)
    shape: str | None  # its input shapes as the report gives them (record_shapes)
    bytes_per_step: int
    onset_step: int | None
    function: str | None  # the function whose line names the leak
    others: tuple[Family, ...] = ()  # the other leaking families, largest first


_KEPT = f"hidden * 0.5 (aten::mul, [{BATCH},{HIDDEN}] float)"
CASES = {
    "kept_every_step": Case(
        f"{_KEPT} appended to a list every step.", True, "aten::mul", "float[128,256]", KEPT_BYTES, 1, "keep"
    ),
    "late_onset": Case(
        f"{_KEPT} a freed temporary in steps 1-{LATE_ONSET}, appended to a list from step {1 + LATE_ONSET} of {STEPS} on.",
        True,
        "aten::mul",
        "float[128,256]",
        KEPT_BYTES,
        1 + LATE_ONSET,
        "keep",
    ),
    "regrown": Case(
        f"torch.cat of a buffer and {ROWS_PER_STEP} rows of the hidden layer every step: one buffer regrown by"
        f" {ROWS_PER_STEP}x{HIDDEN} floats a step, the old one freed.",
        True,
        "aten::cat",
        None,
        ROWS_PER_STEP * HIDDEN * FLOAT_BYTES,
        1,
        "regrow",
    ),
    "copies": Case(
        f"hidden.clone() (aten::clone [{BATCH},{HIDDEN}] float, 128 KiB), hidden.to(torch.float64) (aten::_to_copy,"
        f" 256 KiB) and torch.zeros_like(batch) (aten::zeros_like [{BATCH},{FEATURES}] float, 32 KiB), each appended"
        " to a list every step: ops that allocate through aten::empty_strided.",
        True,
        "aten::_to_copy",
        "float[128,256]",
        2 * KEPT_BYTES,
        1,
        "keep_converted",
        (
            Family("aten::clone", "float[128,256]", KEPT_BYTES, "keep_clone"),
            Family("aten::zeros_like", "float[128,64]", BATCH * FEATURES * FLOAT_BYTES, "keep_zeros_like"),
        ),
    ),
    "clean": Case("The same loop keeping nothing.", False, None, None, 0, None, None),
}


def keep(kept: list[Any], hidden: Any) -> None:
    kept.append(hidden * 0.5)


def regrow(torch: Any, buffer: Any, hidden: Any) -> Any:
    return torch.cat([buffer, hidden[:ROWS_PER_STEP]])


def keep_clone(kept: list[Any], hidden: Any) -> None:
    kept.append(hidden.clone())


def keep_converted(torch: Any, kept: list[Any], hidden: Any) -> None:
    kept.append(hidden.to(torch.float64))


def keep_zeros_like(torch: Any, kept: list[Any], batch: Any) -> None:
    kept.append(torch.zeros_like(batch))


def where(function: str) -> str:
    """The report's `where` of a leak made in `function` of this file: the line of its one statement (its last)."""
    source, first = inspect.getsourcelines(globals()[function])
    return f"{pathlib.Path(__file__).name}:{first + len(source) - 1} in {function}"


def record(logdir: pathlib.Path, name: str) -> dict[str, Any]:
    import torch

    import tb_leakfinder

    torch.manual_seed(0)
    dataset = torch.randn(DATASET, FEATURES)
    weight = torch.randn(FEATURES, HIDDEN) * 0.05
    head = torch.randn(HIDDEN, 10) * 0.05
    kept: list[Any] = []
    buffer = torch.zeros(0, HIDDEN)
    with tb_leakfinder.capture(logdir / name, start=1, count=STEPS, framework="torch") as cap:
        for step in range(STEPS + 1):
            with cap.step(step):
                batch = dataset.index_select(0, torch.arange(step, step + BATCH) % DATASET)
                hidden = torch.relu(batch @ weight)
                loss = (hidden @ head).mean()
                if name == "kept_every_step" or (name == "late_onset" and step >= 1 + LATE_ONSET):
                    keep(kept, hidden)
                elif name == "late_onset":
                    (hidden * 0.5).sum()
                if name == "regrown":
                    buffer = regrow(torch, buffer, hidden)
                if name == "copies":
                    keep_clone(kept, hidden)
                    keep_converted(torch, kept, hidden)
                    keep_zeros_like(torch, kept, batch)
                del batch, hidden, loss
    return {"report": cap.report(), "steps": cap.steps, "trace": str(cap.sessions[-1].path)}


def record_periodic(logdir: pathlib.Path) -> dict[str, Any]:
    """kept_every_step's leak over PERIODIC_STEPS steps, captured with `every`: one trace per window (PERIODIC)."""
    import torch

    import tb_leakfinder

    kept: list[Any] = []
    hidden = torch.ones(BATCH, HIDDEN)
    with tb_leakfinder.capture(logdir / PERIODIC, framework="torch", **PERIODIC_WINDOWS) as cap:
        for step in range(PERIODIC_STEPS):
            with cap.step(step):
                keep(kept, hidden)
            time.sleep(PERIODIC_PAUSE_S)
    return {"sessions": [{"trace": str(s.path), "steps": list(s.steps)} for s in cap.sessions]}


def main() -> None:
    logdir = pathlib.Path(sys.argv[1])
    names = sys.argv[2:] or [*CASES, PERIODIC]
    out: dict[str, Any] = {}
    for name in names:
        if name == PERIODIC:
            out[name] = record_periodic(logdir)
            continue
        truth = dataclasses.asdict(CASES[name])
        out[name] = {**record(logdir, name), "truth": truth, "where": where(truth["function"]) if truth["function"] else None}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
