"""tb_leakfinder: find memory leaks in ML programs from their XProf profiles.

    >>> import tb_leakfinder
    >>> report = tb_leakfinder.analyze("demo_logs")
    >>> report["runs"][0]["verdict"]

The report is the same JSON the CLI's `--json` prints and the plugin's
`/report` route serves (see docs/http_api.md). `tb_leakfinder.capture(logdir)`
records such a profile from TensorFlow or JAX (see tb_leakfinder/capture/leak_capture.py).
"""

from __future__ import annotations

from typing import Any

# Imported here so that `tb_leakfinder.capture` stays the function, not the submodule of that name.
from tb_leakfinder.capture import Capture, capture

__all__ = ["Capture", "analyze", "capture"]


def analyze(
    path: str, run: str | None = None, host: str | None = None, cache: bool = True, allocator: str | None = None
) -> dict[str, Any]:
    """The leak report of a logdir, a session folder or one `.xplane.pb` file.

    `allocator` keeps one allocator per host, named by its XProf memory id
    ("2", "GPU_0_bfc") or its label ("TPU:2"), as the CLI's `--allocator`.
    Analyses are kept in the same folder as the CLI's and TensorBoard's
    (`$TB_LEAKFINDER_CACHE_DIR`, else ~/.cache/tb_leakfinder) unless `cache` is False.
    Raises `tb_leakfinder.errors.LeakfinderError` for bad input; a file that
    cannot be read is listed in the report's `errors` (and is its host's entry,
    with `error`) while the others are reported, unless no file of the run asked
    for (or of any run) can be read.
    """
    # Here, not at the top: TensorBoard imports this package for its entry point, which must stay light.
    from tb_leakfinder.engine.engine import Engine
    from tb_leakfinder.report import select_allocator
    from tb_leakfinder.store.disk_cache import DiskCache
    from tb_leakfinder.store.location import DEFAULT_MAX_BYTES, disabled_by_env

    disk = DiskCache.for_logdir(None, DEFAULT_MAX_BYTES, path) if cache and not disabled_by_env() else None
    report = Engine.for_path(path, disk=disk).report(run, host)
    return report if allocator is None else select_allocator(report, allocator)
