"""A module imported on its first use, for what a cold command need not load: what only some inputs reach (a
companion file, compiled programs, several captures) and what only some commands do. Imports nothing of
tb_leakfinder: the readers, the analyses, the engine and the views share it.

Each lazy module is bound in place of its import, which stays, under `TYPE_CHECKING`, for mypy and the layer test
(tests/unit/test_layers.py) to see; tests/unit/test_lazy.py holds each bound name to that import. Its names are
read as the module's attributes, in code and in annotations alike: `typing.get_type_hints` (the disk cache's
decoder) then loads it when it meets one.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule(ModuleType):
    """A module imported when one of its attributes is first read."""

    def __getattr__(self, attribute: str) -> object:
        return getattr(importlib.import_module(self.__name__), attribute)
