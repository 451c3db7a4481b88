"""numpy loaded for a command-line process without OpenBLAS's idle worker threads.

OpenBLAS starts a thread per core when numpy loads, and each spins for a while
waiting for work that never comes: tb_leakfinder does no large linear algebra.
On the benchmark's 2-core machine that spinning cost about 0.09 s of CPU in
every cold `report` (benchmarks/RESULTS.md). The thread count is read once,
from the environment, when the library loads, and the environment is
process-wide: so only the CLI sets it, around its own import of numpy, never
the package (a training script that imports tb_leakfinder keeps its BLAS threads).
"""

from __future__ import annotations

import os
import sys

THREADS_VARIABLE = "OPENBLAS_NUM_THREADS"


def import_numpy_single_threaded() -> None:
    """Imports numpy with one BLAS thread, unless numpy is loaded already or the user chose a thread count.
    The environment is left as it was, so that processes the command starts see the user's own setting."""
    if "numpy" in sys.modules or THREADS_VARIABLE in os.environ:
        return
    os.environ[THREADS_VARIABLE] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ[THREADS_VARIABLE]
