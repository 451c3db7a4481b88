"""tb_leakfinder: find memory leaks in ML programs from their XProf profiles.

    >>> import tb_leakfinder
    >>> report = tb_leakfinder.analyze("demo_logs")
    >>> report["runs"][0]["verdict"]

The report is the same JSON the CLI's `--json` prints and the plugin's
`/report` route serves (see docs/http_api.md). `tb_leakfinder.capture(logdir)`
records such a profile from TensorFlow or JAX (see tb_leakfinder/capture/leak_capture.py).
"""

from __future__ import annotations

from tb_leakfinder.api import analyze

# Imported here so that `tb_leakfinder.capture` stays the function, not the submodule of that name.
from tb_leakfinder.capture import Capture, capture

__all__ = ["Capture", "analyze", "capture"]
