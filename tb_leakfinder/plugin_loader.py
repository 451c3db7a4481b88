"""TensorBoard's entry point: defines the flags and imports the plugin only when loaded (the plugin never imports
this module: its name and the flags' parsers are in plugin_flags.py).

Importing this module is cheap and cannot fail on a broken install; an import
error in the plugin is logged and the Leaks tab is left out, never crashing
TensorBoard.
"""

from __future__ import annotations

import argparse
import contextlib
import logging

from tensorboard.plugins import base_plugin

from tb_leakfinder.plugin_flags import size_gib, size_mib

logger = logging.getLogger(__name__)


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
        # TensorBoard outlives the files it serves: it copies them rather than map them, so that no SIGBUS handler
        # of ours (read/_map_guard.c) is needed in its process; a file cut short while copied is refused all the same.
        files.ALLOW_MAP = False
        return LeakfinderPlugin(context)
