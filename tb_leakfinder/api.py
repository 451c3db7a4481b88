"""The Python API's `analyze`: the same report the CLI's `--json` prints and the plugin's `/report` serves. Its
own module so that the capture helper can report on what it recorded without importing the package it is part of.
"""

from __future__ import annotations

from typing import Any


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
    from tb_leakfinder.engine import queries
    from tb_leakfinder.engine.engine import Engine
    from tb_leakfinder.store.disk_cache import DiskCache
    from tb_leakfinder.store.location import DEFAULT_MAX_BYTES, disabled_by_env
    from tb_leakfinder.wire import select_allocator

    disk = DiskCache.for_logdir(None, DEFAULT_MAX_BYTES, path) if cache and not disabled_by_env() else None
    engine = Engine.for_path(path, disk=disk)
    report = queries.report(engine, None if run is None else engine.run(run), host)
    return dict(report) if allocator is None else select_allocator(report, allocator)
