"""Where the disk cache lives and its default size: what the CLI's options name, without loading the cache."""

from __future__ import annotations

import hashlib
import os

DEFAULT_MAX_BYTES = 20 << 30
ENV_DIR = "TB_LEAKFINDER_CACHE_DIR"
ENV_OFF = "TB_LEAKFINDER_NO_CACHE"
# A host entry's file name ends so (an uncompressed zip of numpy members: disk_cache.py).
ENTRY_SUFFIX = ".npz"


def default_dir() -> str:
    """$TB_LEAKFINDER_CACHE_DIR, else tb_leakfinder under the user's cache folder ($XDG_CACHE_HOME or ~/.cache)."""
    if os.environ.get(ENV_DIR):
        return os.environ[ENV_DIR]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tb_leakfinder")


def disabled_by_env() -> bool:
    return os.environ.get(ENV_OFF, "") not in ("", "0")


def resolved_folder(folder: str) -> str:
    """The cache folder as given (`~` allowed, relative to the working folder), as an absolute path."""
    return os.path.abspath(os.path.expanduser(folder))


def entry_path(folder: str, version: str, real_path: str) -> str:
    """Where the entry of the profile at `real_path`, analysed by code of `version`, lies in the cache `folder`."""
    name = hashlib.sha256(f"{version}\0{real_path}".encode()).hexdigest()[:40]
    return os.path.join(folder, name + ENTRY_SUFFIX)
