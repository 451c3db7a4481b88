"""One name per thing (CONTRIBUTING's glossary): a class name is declared once in the package, so a wire type
(report/schema.py) and the dataclass it is written from never share one, and no import renames a class."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tb_leakfinder"


def _trees() -> dict[str, ast.Module]:
    return {str(p.relative_to(PACKAGE.parent)): ast.parse(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_class_name_is_declared_twice() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path, tree in _trees().items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(path)
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_no_import_gives_a_class_another_name() -> None:
    # Module aliases (`verdict as verdicts`) and functions are not classes: a capitalized name is.
    renamed = [
        f"{path}: {alias.name} as {alias.asname}"
        for path, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tb_leakfinder")
        for alias in node.names
        if alias.asname and alias.name[:1].isupper() and alias.asname != alias.name
    ]
    assert renamed == []
