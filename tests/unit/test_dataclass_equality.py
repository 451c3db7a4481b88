"""A dataclass that holds columns (numpy arrays) compares by identity (`eq=False`): the `__eq__` a dataclass
generates compares its fields as a tuple, which raises on an array of more than one value, so no such class has a
field-wise equality to offer."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tb_leakfinder"
# Modules that load a framework or TensorBoard (what the unit tests run without): their dataclasses hold no columns.
SKIP = ("tb_leakfinder.capture", "tb_leakfinder.keras", "tb_leakfinder.views.plugin", "tb_leakfinder.testing.plugin_client")


def _dataclasses() -> list[type]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name.startswith(SKIP):
            continue
        module = importlib.import_module(name)
        found += [
            c for _, c in inspect.getmembers(module, inspect.isclass) if dataclasses.is_dataclass(c) and c.__module__ == name
        ]
    return found


def _columns(c: type) -> list[str]:
    """Its fields annotated as arrays (or lists, dicts or optional ones), as written: some classes name their
    types for the type checker only."""
    return [f.name for f in dataclasses.fields(c) if re.search(r"\bnp\.ndarray\b", str(f.type))]


def test_a_dataclass_holding_columns_compares_by_identity():
    classes = _dataclasses()
    assert len(classes) > 50
    compared = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if _columns(c) and c.__dataclass_params__.eq)
    assert compared == []
