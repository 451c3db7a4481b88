"""The compiled scanners (XSpace's, PyTorch traces'): loaded when built, and set aside on request. A format whose
scanner is not built (no compiler at install time), or with TB_LEAKFINDER_PURE_PYTHON=1 (tests, comparisons of the
paths), reads with its pure-Python path, to the same results."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_PYTHON_ENV = "TB_LEAKFINDER_PURE_PYTHON"


def built(module: str) -> ModuleType | None:
    """The compiled module of that name, or None when it was not built."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def pure_python() -> bool:
    """Whether TB_LEAKFINDER_PURE_PYTHON asks every format for its pure-Python path."""
    return os.environ.get(PURE_PYTHON_ENV, "").strip().lower() in ("1", "true", "yes")
