"""views/numpy_start.py: the CLI's numpy without OpenBLAS's idle worker threads, the environment left as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Run in a fresh process (numpy not loaded yet): its thread count once numpy is loaded, and the variable then.
CHILD = """
import json, os, sys
from tb_leakfinder.views.numpy_start import import_numpy_single_threaded
if sys.argv[1] == "helper":
    import_numpy_single_threaded()
import numpy  # as the command's analysis then does
print(json.dumps({"threads": len(os.listdir("/proc/self/task")), "variable": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")


def _child(how: str, variable: str | None = None) -> dict[str, object]:
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
    if variable is not None:
        env["OPENBLAS_NUM_THREADS"] = variable
    out = subprocess.run([sys.executable, "-c", CHILD, how], env=env, capture_output=True, text=True, check=True).stdout
    result: dict[str, object] = json.loads(out)
    return result


def test_numpy_loads_without_blas_threads_and_the_environment_is_left_unset() -> None:
    assert _child("helper") == {"threads": 1, "variable": None}


def test_the_users_own_thread_count_is_kept() -> None:
    kept = _child("helper", "2")
    assert kept == _child("plain", "2")  # OpenBLAS caps the count at the cores there are
    assert kept["variable"] == "2"
