"""The compiled parts (XSpace's and PyTorch traces' scanners, the file mappings' guard, the pairing pass): loaded
when built, and set aside on request. A part that is not built (no compiler at install time), or any part with
TB_LEAKFINDER_PURE_PYTHON=1 (tests, comparisons of the paths), gives way to its pure-Python or numpy path, to the
same results. Imports nothing of the package: the readers and the analyses share it."""

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


def hash_seed() -> int:
    """A fresh 64-bit key for a compiled part's hash table of values read from a file (the pairing's addresses):
    drawn per call, so that no file can be crafted to make its values collide and every probe walk the table."""
    return int.from_bytes(os.urandom(8), "little")
