"""A leaking family's likely cause in the CLI's text, the Markdown and the CSV, from a built profile whose optimizer
is made again every step (its state made under torch's Adam._init_group)."""

from __future__ import annotations

import csv
import io
import itertools

import pytest

import tb_leakfinder
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, write_session
from tb_leakfinder.views import cli, text

STEP_PS = 1_000_000
STEPS = 8
ADAM = ("$train.py:10 train", "$torch/optim/adam.py:214 step", "$torch/optim/adam.py:139 _init_group")
EVIDENCE = f"{2 * STEPS} aten::zeros_like buffers, 2 per step, made in adam.py:139 in _init_group: optimizer state"
FIX = "create the optimizer once, before the training loop"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    b = ProfileBuilder()
    b.allocator("GPU_0_bfc")
    addr = itertools.count(0x10_0000, 0x1_0000)
    for step in range(STEPS):
        t0 = step * STEP_PS
        b.step(step, t0, t0 + STEP_PS - 10)
        for k in range(2):
            t = t0 + 1000 * (k + 1)
            for depth, call in enumerate(ADAM):
                b.span(call, t - 500 + depth, t + 500 - depth)
            b.alloc(t, next(addr), 4096, op="aten::zeros_like", shape="[1024]", line="python")
    root = tmp_path_factory.mktemp("causes")
    write_session(root, "run", "session", {"host0": b})
    return root / "run"


def test_the_json_gives_the_family_its_cause(logdir):
    (run,) = tb_leakfinder.analyze(str(logdir), cache=False)["runs"]
    (family,) = run["hosts"][0]["allocators"][0]["families"]
    assert family["cause"] == {"id": "optimizer_per_step", "evidence": EVIDENCE, "fix": FIX}


def test_text_says_the_likely_cause_under_the_families_with_its_page(logdir, capsys):
    assert cli.main(["report", str(logdir), "--no-cache"]) == cli.EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    (said,) = [line.strip() for line in lines if "likely cause" in line]
    assert said == (
        f"likely cause: an optimizer made every step ({EVIDENCE}) — fix: {FIX}, see docs/causes.md#optimizer_per_step"
    )
    assert lines.index(next(line for line in lines if "likely cause" in line)) > lines.index(
        next(line for line in lines if line.strip().startswith("families ("))
    )


def test_markdown_says_it_once_with_a_link(logdir, tmp_path):
    out = tmp_path / "report.md"
    cli.main(["report", str(logdir), "--no-cache", "--markdown", str(out)])
    page = out.read_text(encoding="utf-8")
    (said,) = [line for line in page.splitlines() if "likely cause" in line]
    assert said == (
        f"- **likely cause: an optimizer made every step** ({EVIDENCE}) — fix: {FIX}, see "
        "[docs/causes.md#optimizer_per_step](docs/causes.md#optimizer_per_step)"
    )


def test_csv_has_the_cause_its_evidence_and_fix_as_columns(logdir, tmp_path):
    cli.main(["report", str(logdir), "--no-cache", "--csv", str(tmp_path)])
    (row,) = csv.DictReader(io.StringIO((tmp_path / "families.csv").read_text(encoding="utf-8")))
    assert (row["cause"], row["cause_evidence"], row["cause_fix"]) == ("optimizer_per_step", EVIDENCE, FIX)


def test_families_of_one_cause_and_evidence_say_it_once_and_none_says_nothing():
    cause = {"id": "graph_kept", "evidence": "aten::tanh in Tanh.forward, aten::addmm in Linear.forward", "fix": "detach"}
    families = [{"cause": cause}, {"cause": None}, {"cause": dict(cause)}]
    assert text.cause_texts(families) == [
        f"likely cause: the autograd graph is kept ({cause['evidence']}) — fix: detach, see docs/causes.md#graph_kept"
    ]
    assert text.cause_texts([{"cause": None}]) == []


def test_families_of_one_cause_say_it_once_with_each_evidence():
    fix = "create modules once"
    families = [
        {"cause": {"id": "modules_per_step", "evidence": "12 aten::empty buffers", "fix": fix}},
        {"cause": {"id": "modules_per_step", "evidence": "6 aten::mm buffers: their gradients", "fix": fix}},
        {"cause": {"id": "regrown", "evidence": "one aten::cat buffer", "fix": "bound it"}},
    ]
    assert text.distinct_causes(families) == [
        ("modules_per_step", "12 aten::empty buffers; 6 aten::mm buffers: their gradients", fix),
        ("regrown", "one aten::cat buffer", "bound it"),
    ]
