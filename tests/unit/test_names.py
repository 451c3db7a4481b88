"""One name per thing (CONTRIBUTING's glossary): a class name is declared once in the package, so a wire type
(wire/schema.py) and the dataclass it is written from never share one, and no import renames a class."""

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


# Each format folder's modules are the format seam: one role per folder, the same names by design.
FORMAT_SEAM = frozenset({"format.py", "reader.py"})


def test_modules_of_one_name_say_which_layer_holds_what() -> None:
    by_name: dict[str, list[Path]] = defaultdict(list)
    for p in sorted(PACKAGE.rglob("*.py")):
        if p.name != "__init__.py" and not (p.name in FORMAT_SEAM and p.parent.parent.name == "formats"):
            by_name[p.name].append(p)
    silent = []
    for paths in by_name.values():
        for p in paths:
            doc = ast.get_docstring(ast.parse(p.read_text())) or ""
            others = [o.relative_to(PACKAGE).as_posix() for o in paths if o != p]
            silent += [f"{p.relative_to(PACKAGE)} does not name {o}" for o in others if o not in doc]
    assert silent == []
