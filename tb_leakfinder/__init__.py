"""tb_leakfinder: find memory leaks in ML programs from their XProf profiles.

    >>> import tb_leakfinder
    >>> report = tb_leakfinder.analyze("demo_logs")
    >>> report["runs"][0]["verdict"]

The report is the same JSON the CLI's `--json` prints and the plugin's
`/report` route serves (see docs/http_api.md).
"""

from __future__ import annotations

from typing import Any

__all__ = ["analyze"]


def analyze(path: str, run: str | None = None, host: str | None = None) -> dict[str, Any]:
    """The leak report of a logdir, a session folder or one `.xplane.pb` file.

    Raises `tb_leakfinder.errors.LeakfinderError` for bad input.
    """
    from tb_leakfinder.service import Engine

    return Engine.for_path(path).report(run, host)
