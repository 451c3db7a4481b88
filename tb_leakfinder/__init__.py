"""tb_leakfinder: find memory leaks in ML programs from their XProf profiles.

    >>> import tb_leakfinder
    >>> report = tb_leakfinder.analyze("demo_logs")
    >>> report["runs"][0]["verdict"]

The report is the same JSON the CLI's `--json` prints and the plugin's
`/report` route serves (see docs/http_api.md). `tb_leakfinder.capture(logdir)`
records such a profile from TensorFlow or JAX (see tb_leakfinder/capture/leak_capture.py).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tb_leakfinder.api import analyze
    from tb_leakfinder.capture import Capture, capture

__all__ = ["Capture", "analyze", "capture"]

# Where each public name is defined, loaded on its first use: every module of the package (the CLI's `--help`,
# TensorBoard's plugin loader) imports this one first, and should not pay for the capture helper.
_DEFINED_IN = {"analyze": "tb_leakfinder.api", "Capture": "tb_leakfinder.capture", "capture": "tb_leakfinder.capture"}


class _Package(types.ModuleType):
    """This package, whose names load on first use, and whose `capture` stays the function when the import
    system binds the submodule of that name to it."""

    def __getattr__(self, name: str) -> object:
        if name not in _DEFINED_IN:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        __import__(_DEFINED_IN[name])
        value = getattr(sys.modules[_DEFINED_IN[name]], name)
        super().__setattr__(name, value)
        return value

    def __setattr__(self, name: str, value: object) -> None:
        if name == "capture" and isinstance(value, types.ModuleType):
            return  # the submodule, which `tb_leakfinder.capture` does not name (`from tb_leakfinder import capture`)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
