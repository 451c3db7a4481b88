"""Where buffers were made, in every view: the text report, the Markdown, the CSV files and the HTML page.

On the real JAX 0.8 ROCm GPU profile of ../shared/profiles/jax_gpu (captured with the Python tracer), the
peak's largest row, output 0 of jit_dot(49), was made at generate_gemm_trace.py:37, called from run_gemms;
on the demo's TensorFlow capture (no Python frames) every where is empty and the views say how to get them.
"""

from __future__ import annotations

import csv
import io
import json
import pathlib
import re

import pytest

import tb_leakfinder
from tb_leakfinder.read.formats.xplane.format import HINTS
from tb_leakfinder.views import cli, html, markdown, text
from tb_leakfinder.views.csv import Table, buffer_rows, site_rows
from tb_leakfinder.views.standalone_page import answer_key
from tests.support.demo import DEMO_LOGS, ROOT

STACK_HINT = HINTS.python_frames

GEMM = ROOT.parent / "shared" / "profiles" / "jax_gpu" / "amd_jax08_gemm"
LINE = "generate_gemm_trace.py:37"
FRAME = "generate_gemm_trace.py:31 in run_gemms"
PEAK_ROW = "output 0 of jit_dot(49)"
TF_DEMO = DEMO_LOGS / "tf_leak"


@pytest.fixture(scope="module")
def gemm() -> dict:
    if not GEMM.is_dir():
        pytest.skip(f"{GEMM} is not here (the shared profiles lie beside the repository)")
    return tb_leakfinder.analyze(str(GEMM))


@pytest.fixture(scope="module")
def tf_demo() -> dict:
    return tb_leakfinder.analyze(str(TF_DEMO))


def _device(report: dict) -> dict:
    (run,) = report["runs"]
    (host,) = run["hosts"]
    return host["allocators"][0]


def _read_csv(path: pathlib.Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_the_report_names_the_peaks_largest_row_by_its_line_and_frame(gemm):
    top = _device(gemm)["peak_breakdown"][0]
    assert top["op"] == PEAK_ROW and top["where"] == LINE
    assert top["site"]["stack"] == [FRAME] and _device(gemm)["stack_hint"] is None


def test_text_shows_the_line_and_the_frame_in_a_where_column(gemm):
    lines = text.render_report(gemm).splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:4] == ["op", "shape", "region", "dtype"])
    assert lines[header].split()[-1] == "where"
    row = lines[header + 1]
    assert PEAK_ROW in row and row.endswith(f"{LINE} ← {FRAME}")
    assert STACK_HINT not in "\n".join(lines)


def test_text_shows_at_most_two_frames_after_the_line():
    stack = ["a.py:1 in f", "b.py:2 in g", "c.py:3 in h", "d.py:4 in main"]
    row = {"where": "a.py:1", "site": {"stack": stack, "model_frame": ""}}
    assert text.where_parts(row, 2) == ["a.py:1", "a.py:1 in f", "b.py:2 in g", "…"]
    assert text.where_parts(row) == ["a.py:1", "a.py:1 in f", "b.py:2 in g", "c.py:3 in h", "d.py:4 in main"]
    # A line that is the innermost frame itself is not repeated.
    framed = {"where": "a.py:1 in f", "site": {"stack": stack[:3], "model_frame": ""}}
    assert text.where_parts(framed, 2) == ["a.py:1 in f", "b.py:2 in g", "c.py:3 in h"]
    assert text.where_parts({"where": "", "site": {"stack": [], "model_frame": ""}}, 2) == []
    # A line below a helper that many allocations share names the helper; only its callers follow.
    helped = {"where": "b.py:2 in g", "site": {"stack": stack, "model_frame": ""}}
    assert text.where_parts(helped, 1) == ["b.py:2 in g (through a.py:1 in f)", "c.py:3 in h", "…"]
    # The model library's frame below the line comes first, the user's line that called it after; alone when the
    # profile has no user frame.
    model = "Owlv2Attention.forward (modeling_owlv2.py:410)"
    layered = {"where": "a.py:1 in f", "site": {"stack": stack[:2], "model_frame": model}}
    assert text.where_parts(layered) == [f"{model} ← a.py:1 in f", "b.py:2 in g"]
    assert text.where_parts({"where": "", "site": {"stack": [], "model_frame": model}}) == [model]


def test_markdown_shows_the_line_and_every_frame(gemm, tmp_path):
    out = tmp_path / "report.md"
    assert cli.main(["report", str(GEMM), "--markdown", str(out)]) == cli.EXIT_OK
    page = out.read_text(encoding="utf-8")
    assert page == markdown.render_report(gemm)
    assert "| op shape region | dtype | count | bytes | where |" in page
    row = next(line for line in page.splitlines() if f"`{PEAK_ROW} [8192,8192]`" in line)
    assert row.endswith(f"| `{LINE}` ← `{FRAME}` |"), row
    assert STACK_HINT not in page


def test_csv_has_the_where_stack_program_buffer_and_match_of_each_row(gemm, tmp_path):
    out = tmp_path / "csv"
    assert cli.main(["report", str(GEMM), "--csv", str(out)]) == cli.EXIT_OK
    top = _read_csv(out / "peak_breakdown.csv")[0]
    assert (top["op"], top["where"], top["stack"]) == (PEAK_ROW, LINE, FRAME)
    assert (top["program"], top["buffer"], top["match"], top["context"]) == ("jit_dot(49)", "output 0", "exact", "program")
    assert "site" not in top  # its keys are columns of their own
    device = _device(gemm)
    # Every buffer's site is its own page's, resolved: the largest (output 0 of jit_dot(79)) is at line 37 too.
    buffers = [b for b in _read_csv(out / "buffers.csv") if b["allocator"] == device["allocator"]]
    assert len(buffers) == device["num_allocations"]
    assert all(b["where"] and b["stack"] == FRAME for b in buffers)
    assert {b["where"] for b in buffers if b["op"].startswith("output 0 of jit_dot(")} == {LINE}
    assert {b["program"] for b in buffers if b["op"] == PEAK_ROW} == {"jit_dot(49)"}


def test_html_page_inlines_the_line_and_the_frame(gemm, tmp_path):
    out = tmp_path / "gemm.html"
    assert cli.main(["report", str(GEMM), "--html", str(out)]) == cli.EXIT_OK
    page = out.read_text(encoding="utf-8")
    data = json.loads(re.search(rf'<script type="application/json" id="{html.DATA_ID}">(.*?)</script>', page, re.S).group(1))
    (run,) = data["answers"]["runs"]["runs"]
    top = _device(data["answers"][answer_key("report", {"run": run["run"]})])["peak_breakdown"][0]
    assert (top["op"], top["where"], top["site"]["stack"]) == (PEAK_ROW, LINE, [FRAME])
    # The inlined buffers, gathered page by page, index one list of sites for all of them.
    (host,) = data["answers"][answer_key("report", {"run": run["run"]})]["runs"][0]["hosts"]
    where = {
        "run": run["run"],
        "host": host["host"],
        "allocator": _device(data["answers"][answer_key("report", {"run": run["run"]})])["allocator"],
    }
    buffers = data["answers"][answer_key("buffers", where)]
    sites = buffers["sites"]
    assert buffers["buffers"] and len({json.dumps(x, sort_keys=True) for x in sites}) == len(sites)
    for row in buffers["buffers"]:
        assert row["where"] == (sites[row["site"]]["source"].rsplit("/", 1)[-1] or (sites[row["site"]]["stack"] or [""])[0])


def test_without_frames_where_is_empty_and_the_hint_is_said_once(tf_demo, tmp_path):
    allocator = _device(tf_demo)
    assert allocator["stack_hint"] == STACK_HINT
    assert all(row["where"] == "" for row in allocator["families"] + allocator["peak_breakdown"])

    report = text.render_report(tf_demo)
    assert report.count(STACK_HINT) == 1
    header = next(line for line in report.splitlines() if line.split()[:1] == ["kind"])
    assert header.split()[-1] == "where"
    growing = next(line for line in report.splitlines() if line.strip().startswith("growing"))
    assert growing.rstrip().endswith("1.00")  # an empty where: nothing after the score

    page = markdown.render_report(tf_demo)
    assert page.count(STACK_HINT) == 1
    row = next(line for line in page.splitlines() if line.startswith("| growing |"))
    assert row.endswith("|  |")

    out = tmp_path / "csv"
    assert cli.main(["report", str(TF_DEMO), "--csv", str(out)]) == cli.EXIT_OK
    for name in ("families", "peak_breakdown", "buffers"):
        rows = _read_csv(out / f"{name}.csv")
        assert rows and all(r["where"] == r["stack"] == r["program"] == "" for r in rows), name

    out_html = tmp_path / "tf.html"
    assert cli.main(["report", str(TF_DEMO), "--html", str(out_html)]) == cli.EXIT_OK
    assert out_html.read_text(encoding="utf-8").count(html.script_json(STACK_HINT)) == 1


def test_the_hint_is_not_said_for_rows_that_have_no_line_to_name():
    """The stack reservation and the memory allocated before the window are not made by a line of code."""
    empty = {"where": "", "site": {"stack": []}}
    allocator = {"stack_hint": STACK_HINT}
    assert text.hint_for(allocator, [], [{**empty, "category": "before_window"}, {**empty, "category": "stack"}]) is None
    assert text.hint_for(allocator, [], [{**empty, "category": "buffers"}]) == STACK_HINT
    assert text.hint_for(allocator, [{**empty}], []) == STACK_HINT
    assert text.hint_for({"stack_hint": None}, [{**empty}], []) is None


def test_the_hint_is_not_said_beside_rows_that_show_a_line():
    """A program's source line names a row even without Python frames: "no Python frames" there reads as wrong."""
    empty = {"where": "", "site": {"stack": [], "model_frame": ""}}
    lined = {"where": "jax_conv_profiling.py:77", "site": {"stack": [], "model_frame": ""}}
    assert text.hint_for({"stack_hint": STACK_HINT}, [{**empty}], [{**lined, "category": "buffers"}]) is None
    modelled = {"where": "", "site": {"stack": [], "model_frame": "Linear.forward (linear.py:124)"}}
    assert text.hint_for({"stack_hint": STACK_HINT}, [modelled, {**empty}], []) is None


HOSTILE = 'a,b "quoted"\r\nnext line;=SUM(A1)'
SITE = {
    "context": "program",
    "program": "jit_f(1)",
    "buffer": "output 0",
    "allocation": 0,
    "hlo_op": "dot_general",
    "op_name": "jit(f)/dot_general",
    "hlo_shape": "f32[2,2]",
    "source": f"/src/{HOSTILE}.py:3",
    "match": "ambiguous",
    "candidates": ["output 0 of jit_f(1)", "output 1 of jit_f(1)"],
    "stack": [f"{HOSTILE}.py:3 in f", "=main.py:9 in main"],
}


def test_a_where_with_commas_quotes_and_newlines_round_trips_through_csv():
    where = f"{HOSTILE}.py:3"
    table = Table(("run",))
    table.add(("r",), site_rows([{"op": "Mul", "bytes": 4, "where": where, "site": SITE}]))
    (header, row) = list(csv.reader(io.StringIO(table.text(), newline="")))
    assert header == ["run", "op", "bytes", "where", *SITE]  # the site's keys in its place
    cells = dict(zip(header, row, strict=True))
    assert cells["where"] == where
    assert cells["source"] == SITE["source"]
    assert cells["stack"] == f"{HOSTILE}.py:3 in f ← =main.py:9 in main"
    assert json.loads(cells["candidates"]) == SITE["candidates"]
    hostile = {"where": "=" + where, "site": {**SITE, "stack": ["=x.py:1 in f"]}}
    (_, row) = list(csv.reader(io.StringIO(_one(hostile), newline="")))
    assert row[0] == "'=" + where and row[-1] == "'=x.py:1 in f"  # a formula-looking cell is quoted


def _one(row: dict) -> str:
    table = Table(())
    table.add((), site_rows([row]))
    return table.text()


def test_each_buffer_takes_its_site_from_its_own_page():
    other = {**SITE, "program": "jit_g(2)", "stack": ["g.py:1 in g"]}
    pages = [
        {"buffers": [{"id": 0, "where": "a", "site": 0}, {"id": 1, "where": "b", "site": 1}], "sites": [SITE, other]},
        {"buffers": [{"id": 2, "where": "b", "site": 0}], "sites": [other]},
    ]
    rows = list(buffer_rows(pages))
    assert [(r["id"], r["program"], r["stack"]) for r in rows] == [
        (0, "jit_f(1)", f"{HOSTILE}.py:3 in f ← =main.py:9 in main"),
        (1, "jit_g(2)", "g.py:1 in g"),
        (2, "jit_g(2)", "g.py:1 in g"),
    ]
    assert list(rows[0]) == ["id", "where", *SITE]
    # Wherever a row has its site, its columns take that place.
    (row,) = site_rows([{"op": "Mul", "site": SITE, "bytes": 4}])
    assert list(row) == ["op", *SITE, "bytes"]
