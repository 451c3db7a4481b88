"""The Leaks plugin's name and the parsers of its size flags, apart from TensorBoard: the loader, the routes,
the CLI and the standalone page share them, and only the first two load TensorBoard."""

from __future__ import annotations

import argparse
import math

PLUGIN_NAME = "leakfinder"
# The largest size a flag takes, in GiB and in MiB (a PiB): past it a number is a typo, and a float past an int's
# range cannot become a byte count.
MAX_GIB = 1 << 20
MAX_MIB = MAX_GIB << 10


def _number(text: str, kind: type[float] | type[int], unit: str, highest: float) -> float:
    """`text` as a number of `unit` from 0 to `highest` (NaN and the infinities are none), for argparse's `type`."""
    try:
        value = kind(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= highest:
        raise argparse.ArgumentTypeError(f"a number of {unit} from 0 to {highest}, not {text!r}")
    return value


def size_gib(text: str) -> float:
    """A size flag in GiB: refused when TensorBoard or the CLI starts, never a failure later."""
    return _number(text, float, "GiB", MAX_GIB)


def size_mib(text: str) -> int:
    """A size flag in whole MiB."""
    return int(_number(text, int, "MiB", MAX_MIB))
