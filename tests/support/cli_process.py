"""The real CLI in a process of its own, optionally under a file size limit (a disk that fills up)."""

from __future__ import annotations

import resource
import subprocess
import sys


def run_cli(*args: str, file_size_limit: int | None = None) -> subprocess.CompletedProcess[str]:
    """`tb-leakfinder ARGS`; past `file_size_limit` bytes a write fails with EFBIG (Python ignores SIGXFSZ)."""

    def limit() -> None:
        if file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    command = [sys.executable, "-m", "tb_leakfinder.views.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, preexec_fn=limit)
