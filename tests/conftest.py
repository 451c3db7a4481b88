"""Shared fixtures (helpers live in plain modules under tests/support/; the profile builder is tb_leakfinder.testing)."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
from tests.support.demo import DEMO_LOGS
from tests.support.fuzzing import decoder_path, decoder_paths

# Read through TensorBoard's own gfile (fsspec behind it), as users without TensorFlow do: with TensorFlow
# installed (the capture tests need it) tensorboard.compat.tf would be TensorFlow, whose gfile knows no memory://.
sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))

# Tests read no analyses a previous run left in ~/.cache; those of the disk cache name their folder.
os.environ["TB_LEAKFINDER_NO_CACHE"] = "1"


@pytest.fixture(scope="session")
def demo_logdir() -> str:
    return str(DEMO_LOGS)


@pytest.fixture(params=decoder_paths())
def decoder(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each decoder path in turn: the reference decoder ("pure") and the compiled scanner ("compiled")."""
    with decoder_path(request.param):
        yield request.param


def _write_pod(logdir: Path, hosts: int, events: int = 4_000) -> list[str]:
    builders = {}
    for h in range(hosts):
        builders[f"host{h}"], _ = synthesize_training(
            num_events=events,
            steps=10,
            allocators=("GPU_0_bfc",),
            leak_bytes_per_step=(1 << 20) * (h % 2),
            hostname=f"host{h}",
            seed=h,
        )
    return write_session(logdir, "train", "session", builders)


@pytest.fixture(scope="session")
def write_pod() -> Callable[..., list[str]]:
    """`write_pod(logdir, hosts, events=4_000)` writes the run `train/session` of `hosts` hosts (host0, host1, ...),
    one GPU_0_bfc allocator each, whose odd hosts leak 1 MiB a step (so that the overview's worst-first order is not
    the hosts' own), and gives the hosts' paths."""
    return _write_pod


@pytest.fixture(autouse=True)
def _files_mapped_as_in_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test reads files as the CLI does: TensorBoard's plugin loader turns mapping off for its whole process
    (read/files.py's ALLOW_MAP), and the tests load the plugin in this one."""
    from tb_leakfinder.read import files

    monkeypatch.setattr(files, "ALLOW_MAP", True)
