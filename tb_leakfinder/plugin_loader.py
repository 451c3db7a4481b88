"""TensorBoard's entry point: defines the flags and imports the plugin only when loaded.

Importing this module is cheap and cannot fail on a broken install; an import
error in the plugin is logged and the Leaks tab is left out, never crashing
TensorBoard.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math

from tensorboard.plugins import base_plugin

logger = logging.getLogger(__name__)

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


class LeakfinderLoader(base_plugin.TBLoader):
    def define_flags(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("leakfinder plugin")
        with contextlib.suppress(argparse.ArgumentError):  # another copy of the loader defined it
            group.add_argument(
                "--leakfinder_cache_mb",
                type=size_mib,
                default=2048,
                help="Memory the Leaks tab may keep for analysed profiles (LRU), in MiB.",
            )
            group.add_argument(
                "--leakfinder_cache_dir",
                default="",
                help="Folder keeping the Leaks tab's analyses across restarts (never inside the logdir);"
                " default: $TB_LEAKFINDER_CACHE_DIR, else ~/.cache/tb_leakfinder. Shared with `tb-leakfinder precompute`.",
            )
            group.add_argument(
                "--leakfinder_cache_dir_gb",
                type=size_gib,
                default=20.0,
                help="Disk the cache folder may use, in GiB (least recently used analyses removed first); 0 turns it off.",
            )

    def load(self, context: base_plugin.TBContext) -> base_plugin.TBPlugin | None:
        try:
            from tb_leakfinder.read import files
            from tb_leakfinder.views.plugin import LeakfinderPlugin
        except Exception:
            logger.exception("tb_leakfinder could not be imported; the Leaks tab is disabled")
            return None
        # TensorBoard outlives the files it serves: one truncated in place while mapped (a `cp` over it) would take
        # it down with SIGBUS, where a copy just reads what is left.
        files.ALLOW_MAP = False
        return LeakfinderPlugin(context)
