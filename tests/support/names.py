"""Profiles whose discovered names are not what anyone would type: 5,000 characters, NUL and other control bytes.

Each name (the run folder, the host file, the allocator, the module) comes from the profile or its path,
so every route and export must take it as discovery gave it. A local folder name holds at most 255 bytes
and no NUL, so the full set lives on an in-memory gfile filesystem (memory://); a local logdir gets the
longest names a local path can hold.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

import pytest

from tb_leakfinder.read.formats.xplane.reader import read_host
from tb_leakfinder.testing.xspace_builder import synthesize_training
from tests.support.demo import demo_xplane

SESSION = "2026_01_01_00_00_00"
NUL = "\x00"
# Control bytes a terminal acts on: set its title, clear its screen.
TERMINAL = "\x1b]0;pwned\x07\x1b[2J"


@dataclass(frozen=True)
class Names:
    logdir: str
    run: str  # as discovery names it: <run folder>/<session>
    host: str
    allocator: str
    module: str  # the module's report name, "<module>(<program id>)"


def long_name(length: int, tag: str) -> str:
    """`length` characters holding NUL and terminal control bytes, starting with `tag`."""
    core = f"{tag}{NUL}{TERMINAL}"
    return core + "n" * (length - len(core))


def _profile(host: str, allocator: str, module: str) -> tuple[bytes, str]:
    """A leaking profile whose strings hold those names, and the module's report name."""
    builder, _ = synthesize_training(2000, 10, (allocator,), hostname=host, leak_op=long_name(300, "op"))
    name, proto = sorted(read_host(str(demo_xplane("jax_clean")), "host").hlo_protos.items())[0]
    key = f"{module}({name.rpartition('(')[2]}"
    builder.add_hlo_module(key, proto)
    out = io.BytesIO()
    builder._write(out)  # to bytes: a memory:// file has no local path for write()
    return out.getvalue(), key


def memory_logdir(bucket: str, length: int = 5000) -> Names:
    """memory://<bucket>: every name `length` characters long, holding NUL. Skips without fsspec (the test extra)."""
    fsspec = pytest.importorskip("fsspec")
    run_dir, host = long_name(length, "run"), long_name(length, "host")
    allocator, module = long_name(length, "allocator"), long_name(length, "module")
    data, key = _profile(host, allocator, module)
    with fsspec.filesystem("memory").open(f"/{bucket}/{run_dir}/plugins/profile/{SESSION}/{host}.xplane.pb", "wb") as f:
        f.write(data)
    return Names(f"memory://{bucket}", f"{run_dir}/{SESSION}", host, allocator, key)


def local_logdir(root: str) -> Names:
    """A local logdir whose run is six folders deep (1,500 characters, over the 1,024 a user may type) and
    whose host file name takes the 255 bytes a folder entry holds, both with terminal control bytes (a
    local name cannot hold NUL); allocator and module hold 5,000 characters and NUL."""
    run_dir = "/".join(f"{i}{TERMINAL}".ljust(250, "r") for i in range(6))
    host = f"h{TERMINAL}".ljust(255 - len(".xplane.pb"), "h")
    allocator, module = long_name(5000, "allocator"), long_name(5000, "module")
    folder = os.path.join(root, run_dir, "plugins", "profile", SESSION)
    os.makedirs(folder)
    data, key = _profile(host, allocator, module)
    with open(os.path.join(folder, f"{host}.xplane.pb"), "wb") as f:
        f.write(data)
    return Names(root, f"{run_dir}/{SESSION}", host, allocator, key)


def remove_memory_logdir(bucket: str) -> None:
    import fsspec  # memory_logdir, which made the bucket, has imported it

    fsspec.filesystem("memory").rm(f"/{bucket}", recursive=True)
