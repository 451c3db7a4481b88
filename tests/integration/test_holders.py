"""The holder finder on real PyTorch, TensorFlow (CPU, BFC) and JAX (CPU) captures: each kind of holder a program
makes is named with its path, kind, type, count and bytes, as the program's own constants say (holder_programs.py).

Each program runs in a process of its own; without a framework installed its tests skip, unless
TB_LEAKFINDER_REQUIRE_FRAMEWORKS=1 (CI).
"""

from __future__ import annotations

import pathlib

import pytest

from tb_leakfinder.model.recordings import HOLDER_KINDS, RECORDINGS_FORMAT
from tests.support import capture_programs, holder_programs
from tests.support.demo import ROOT

FRAMEWORK = {"torch_holders": "torch", "torch_hostile": "torch", "tensorflow_holders": "tensorflow", "jax_holders": "jax"}
CASES = [(program, holder) for program, holders in holder_programs.HOLDERS.items() for holder in holders]


def _run(program: str, logdir: pathlib.Path) -> dict:
    capture_programs.need(FRAMEWORK[program])
    script = ROOT / "tests" / "support" / "holder_programs.py"
    # oneDNN off: TensorFlow's BFC allocator then records every buffer, whatever the CPU.
    return capture_programs.run_script(script, [program, str(logdir)], bfc=True, onednn=False)


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> dict:
    """Each program's output, run once when a test first asks for it."""
    runs: dict[str, dict] = {}

    def get(program: str) -> dict:
        if program not in runs:
            runs[program] = _run(program, tmp_path_factory.mktemp(program))
        return runs[program]

    return get  # type: ignore[return-value]


@pytest.mark.parametrize(("program", "expected"), CASES, ids=[f"{p}-{h.kind}-{h.path}" for p, h in CASES])
def test_each_holder_is_named_with_its_kind_count_and_bytes(captures, program, expected):
    out = captures(program)
    assert out["warnings"] == []
    doc = out["doc"]
    assert (doc["format"], doc["framework"]) == (RECORDINGS_FORMAT, FRAMEWORK[program])
    search = doc["holders"]
    assert search["status"] == "complete", search["warning"]
    found = {h["path"]: h for h in search["holders"]}
    assert expected.path in found, sorted(found)
    holder = found[expected.path]
    assert (holder["kind"], holder["type"]) == (expected.kind, expected.type)
    assert holder["count"] == expected.count == len(holder["addresses"])
    assert holder["bytes"] == expected.bytes


def test_every_holder_kind_but_a_variables_is_made_by_some_program():
    made = {holder.kind for _, holder in CASES}
    assert set(HOLDER_KINDS) - made == {"variable"}


def test_the_holder_lines_and_allocating_lines_are_in_sources(captures):
    doc = captures("torch_holders")["doc"]
    holders = {h["path"]: h for h in doc["holders"]["holders"]}
    script = str(ROOT / "tests" / "support" / "holder_programs.py")
    created = holders["rotary_table._memo"]["created"]
    assert created.startswith(f"{script}:") and created.endswith(" in rotary_table")
    line = created.split(" in ")[0]
    assert (
        doc["sources"][line]
        == "def rotary_table(step: int, _memo: dict[int, Any] = {}) -> Any:  # noqa: B006 - the mutable default under test"
    )
    # The allocating lines the trace names (with_stack: each function's first line), with their text: `remember`'s
    # `t + 1`, kept by its closure, is made in the function that starts at its `def` line.
    lines = pathlib.Path(script).read_text().splitlines()
    number = next(i for i, text in enumerate(lines, 1) if text.strip().startswith("def remember("))
    assert doc["sources"][f"{script}:{number}"] == "def remember(t: Any) -> None:"
    assert all(key.startswith(f"{script}:") and text for key, text in doc["sources"].items())


def test_hostile_objects_run_nothing_and_a_bounded_walk_is_partial(captures):
    out = captures("torch_hostile")
    assert out["called"] == []
    bounded = out["bounded"]["doc"]["holders"]
    assert bounded["status"] == "partial"
    assert bounded["warning"].startswith("the walk stopped after 0 s (time_limit_s)")
    assert bounded["holders"] == [] and bounded["unmatched_count"] == holder_programs.STEPS
    assert out["bounded"]["warnings"] == []
