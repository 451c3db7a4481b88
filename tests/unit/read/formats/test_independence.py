"""No format imports another: each folder of read/formats imports only itself, the shared helpers (common/), the
interface (base.py) and what lies outside read/formats; common/ imports no format. Read from the source with `ast`,
imports inside functions included."""

from __future__ import annotations

import ast
import pathlib

import pytest

import tb_leakfinder.read.formats as formats_package

FORMATS_DIR = pathlib.Path(formats_package.__file__).parent
PACKAGE = "tb_leakfinder.read.formats"
SHARED = {"common", "base"}  # what every format may import


def imported_modules(source: str) -> set[str]:
    """Every module a source imports: `import a.b`, `from a.b import c` (as a.b and, c being a submodule, a.b.c)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def foreign_imports(source: str, own: str) -> list[str]:
    """The modules of read/formats outside `own` (a folder's name) and the shared parts that a source imports."""
    bad = set()
    for module in imported_modules(source):
        if not module.startswith(f"{PACKAGE}."):
            continue
        part = module[len(PACKAGE) + 1 :].split(".")[0]
        if part not in SHARED | {own} and (FORMATS_DIR / part).is_dir():
            bad.add(module)
    return sorted(bad)


def _folders() -> list[pathlib.Path]:
    return sorted(p for p in FORMATS_DIR.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def test_the_formats_and_their_helpers_are_found():
    assert {p.name for p in _folders()} >= {"common", "xplane", "pprof", "torch_trace", "torch_snapshot"}


@pytest.mark.parametrize("folder", _folders(), ids=lambda p: p.name)
def test_no_format_imports_another(folder):
    own = "" if folder.name == "common" else folder.name  # common imports no format at all
    found = {
        str(path.relative_to(FORMATS_DIR)): foreign_imports(path.read_text(encoding="utf-8"), own)
        for path in sorted(folder.rglob("*.py"))
    }
    assert {path: bad for path, bad in found.items() if bad} == {}


def test_the_check_sees_every_form_of_import():
    source = """
import tb_leakfinder.read.formats.xplane.names
from tb_leakfinder.read.formats.pprof.reader import stack_spans
from tb_leakfinder.read.formats import torch_trace
from tb_leakfinder.read.formats.common import rows
from tb_leakfinder.read.formats.base import FormatHints
from tb_leakfinder.model.memory import Spans
def late():
    from tb_leakfinder.read.formats.torch_snapshot import reader
"""
    assert foreign_imports(source, "xplane") == [
        "tb_leakfinder.read.formats.pprof.reader",
        "tb_leakfinder.read.formats.pprof.reader.stack_spans",
        "tb_leakfinder.read.formats.torch_snapshot",
        "tb_leakfinder.read.formats.torch_snapshot.reader",
        "tb_leakfinder.read.formats.torch_trace",
    ]
    assert foreign_imports(source, "")[0] == "tb_leakfinder.read.formats.pprof.reader"
    assert "tb_leakfinder.read.formats.xplane.names" in foreign_imports(source, "")
