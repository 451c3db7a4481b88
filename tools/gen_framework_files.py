"""Write tb_leakfinder/analyses/framework_files.py: the file names of the frameworks' and Python's own modules.

The profiler's Python tracer names a function by its file's base name only
(`$core.py:630 bind`), so which frames are the user's cannot be told from a
path. The attribution skips frames whose file name is one of these. Run it in
an environment with the frameworks installed (the test extra has TensorFlow,
Keras, JAX and NumPy; PyTorch's traces carry whole paths and need no table):

    python tools/gen_framework_files.py
"""

from __future__ import annotations

import importlib
import pathlib
import sys
import sysconfig
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "tb_leakfinder" / "analyses" / "framework_files.py"
PACKAGES = ("tensorflow", "keras", "tf_keras", "jax", "jaxlib", "numpy", "flax", "optax", "orbax", "absl", "ml_dtypes", "torch")


def _package_files(name: str) -> tuple[set[str], str | None]:
    try:
        module = importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a framework that is absent or fails to import is left out, and said so
        return set(), None
    paths = getattr(module, "__path__", None) or [pathlib.Path(module.__file__ or "").parent]
    found = {path.name for root in paths for path in pathlib.Path(root).rglob("*.py")}
    return found, str(getattr(module, "__version__", "?"))


def main() -> int:
    names: set[str] = set()
    used = []
    for package in PACKAGES:
        found, version = _package_files(package)
        if version is not None:
            names |= found
            used.append(f"{package} {version}")
    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    names |= {p.name for p in stdlib.rglob("*.py") if "site-packages" not in p.parts and "test" not in p.parts}
    body = textwrap.fill(" ".join(sorted(names)), 120, break_on_hyphens=False, break_long_words=False)
    python = sys.version.split()[0]
    origin = f"Written by tools/gen_framework_files.py from {', '.join(used)} and Python {python}'s standard library."
    text = (
        "\"\"\"The file names of the frameworks' and Python's own modules, where a Python frame is not the user's.\n\n"
        f'{textwrap.fill(origin, 110)}\nRerun it when a framework adds modules.\n"""\n\n'
        f'FRAMEWORK_FILES = frozenset(\n    """\n{body}\n"""'
        ".split()  # noqa: SIM905 - one word per name keeps the table short\n)\n"
    )
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({len(names)} names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
