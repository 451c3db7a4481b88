"""Modules loaded on first use (`tb_leakfinder.lazy`) are named by strings, which neither mypy, the layer test nor a
rename sees: each one is held here to the import for the type checker beside it."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

from tb_leakfinder.lazy import LazyModule

PACKAGE = Path(__file__).resolve().parents[2] / "tb_leakfinder"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _typed_modules(tree: ast.Module) -> dict[str, str]:
    """The modules (not the names of one) a module imports under `if TYPE_CHECKING:`, by the name each is bound to."""
    guards = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    typed = {}
    for node in (n for guard in guards for n in guard.body):
        if isinstance(node, ast.ImportFrom) and node.module and _is_package(node.module):
            for alias in node.names:
                if importlib.util.find_spec(f"{node.module}.{alias.name}") is not None:
                    typed[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            typed.update({alias.asname or alias.name: alias.name for alias in node.names})
    return typed


def _is_package(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.submodule_search_locations is not None


USERS = sorted(
    _module_name(path)
    for path in PACKAGE.rglob("*.py")
    if "LazyModule(" in path.read_text(encoding="utf-8") and path.name != "lazy.py"
)


def test_the_lazy_modules_have_users():
    assert "tb_leakfinder.views.cli" in USERS


@pytest.mark.parametrize("name", USERS)
def test_each_lazy_module_is_the_one_its_name_is_typed_as(name):
    module = importlib.import_module(name)
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    lazy = {key: value.__name__ for key, value in vars(module).items() if isinstance(value, LazyModule)}
    typed = _typed_modules(tree)
    assert lazy and {key: typed.get(key) for key in lazy} == lazy
    for target in lazy.values():
        assert importlib.import_module(target).__name__ == target
