"""tb_leakfinder: a TensorBoard plugin that finds memory leaks in XProf profiles."""

import pathlib
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Builds the compiled scanners when it can; the pure-Python decoders serve otherwise."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - no compiler is not an install failure
            print(f"tb_leakfinder: not building the compiled scanner ({exc}); using the pure-Python decoder")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            print(f"tb_leakfinder: not building {ext.name} ({exc}); using the pure-Python decoder")


# The process's memory beside a capture (model/recordings.py's process_memory): USS and PSS need psutil 5.x.
_PSUTIL = "psutil>=5.8"

# The scanner reads fixed64 fields with memcpy: little-endian hosts only.
ext_modules = (
    [
        Extension(
            "tb_leakfinder.read.formats.xplane._xspace_scan",
            ["tb_leakfinder/read/formats/xplane/_xspace_scan.c"],
            # Generated from stat_spec.py (tools/gen_scanner_tables.py): a new stat rebuilds the scanner.
            depends=["tb_leakfinder/read/formats/xplane/_xspace_scan_tables.h"],
            extra_compile_args=["-O2", "-pthread"],
            extra_link_args=["-pthread"],
        )
    ]
    if sys.byteorder == "little"
    else []
) + [
    # PyTorch traces' runs of events scanned from their text (read/formats/torch_trace/chunks.py): any byte order.
    Extension(
        "tb_leakfinder.read.formats.torch_trace._kineto_scan",
        ["tb_leakfinder/read/formats/torch_trace/_kineto_scan.c"],
        # -O3: a fifth less time than -O2 on a trace (benchmarks/RESULTS.md, issue #32's fifth pass).
        extra_compile_args=["-O3"],
    ),
    # A file cut short while mapped reads as zeros past its end, not SIGBUS (read/files.py's read_private): POSIX only;
    # without it, local profiles are copied rather than mapped.
    Extension("tb_leakfinder.read._map_guard", ["tb_leakfinder/read/_map_guard.c"], extra_compile_args=["-O2"]),
    # Buffer lifetimes paired in two passes (analyses/lifetimes.py); without it, numpy's passes, to the same columns.
    Extension("tb_leakfinder.analyses._pairing", ["tb_leakfinder/analyses/_pairing.c"], extra_compile_args=["-O2"]),
]

setup(
    name="tb_leakfinder",
    version="0.1.0",
    description="Find memory leaks in ML programs from their XProf profiles, in TensorBoard.",
    long_description=pathlib.Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tb_leakfinder", "tb_leakfinder.*"]),
    package_data={
        "tb_leakfinder.proto": ["*.proto", "schema.binpb"],
        "tb_leakfinder.webapp": ["*.js", "*.css", "*.html"],
    },
    install_requires=[
        "tensorboard>=2.12",
        "tensorboard-plugin-profile>=2.13",
        "protobuf>=4.21",
        "werkzeug>=2.0",
        "numpy>=1.22",
        # PyTorch traces: runs of events decoded in C (read/formats/torch_trace/chunks.py); wheels for Linux,
        # macOS and Windows on every Python supported. Without it the reader decodes one event at a time.
        "msgspec>=0.19",
    ],
    extras_require={
        # What tb_leakfinder.capture needs whatever the framework (psutil: the process's memory beside a profile);
        # never a framework: the job brings its own. Each framework's extra adds it, and what its capture needs
        # besides (XProf's profiler client: TensorFlow's Python tracer and `tb-leakfinder watch`).
        "capture": [_PSUTIL],
        "torch": [_PSUTIL, "torch"],
        "tensorflow": [_PSUTIL, "tensorflow", "xprof"],
        "jax": [_PSUTIL, "jax"],
        # A progress bar for precompute and long reports on a terminal; without it they run silently.
        "progress": ["tqdm>=4.62"],
        # `tb-leakfinder precompute --engine ray`: analyse a pod's hosts over a Ray cluster.
        "ray": ["ray>=2.9", "tqdm>=4.62"],
        # The oracle tests compare with XProf 2.24.2's converters (later ones count thread-local buffers);
        # the capture tests record real profiles with TensorFlow, JAX and PyTorch on CPU (they install beside
        # it). torch is pinned to the release whose CPU build the CI machines hold: a newer one is a CUDA build
        # of several GB from PyPI.
        "test": [
            "pytest",
            "hypothesis",
            "ruff",
            "mypy",
            "fsspec",
            "grpcio-tools",
            "xprof==2.24.2",
            "tensorflow-cpu",
            "jax",
            "torch==2.13.0",
            "ray>=2.9",
            "tqdm>=4.62",
            _PSUTIL,
        ],
    },
    ext_modules=ext_modules,
    cmdclass={"build_ext": OptionalBuildExt},
    entry_points={
        "tensorboard_plugins": ["leakfinder = tb_leakfinder.plugin_loader:LeakfinderLoader"],
        "console_scripts": ["tb-leakfinder = tb_leakfinder.views.cli:main"],
    },
)
