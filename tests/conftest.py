"""Shared fixtures (helpers live in plain modules under tests/support/; the profile builder is tb_leakfinder.testing)."""

from __future__ import annotations

import os
import sys
import types

import pytest

from tests.support.demo import DEMO_LOGS

# Read through TensorBoard's own gfile (fsspec behind it), as users without TensorFlow do: with TensorFlow
# installed (the capture tests need it) tensorboard.compat.tf would be TensorFlow, whose gfile knows no memory://.
sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))

# Tests read no analyses a previous run left in ~/.cache; those of the disk cache name their folder.
os.environ["TB_LEAKFINDER_NO_CACHE"] = "1"


@pytest.fixture(scope="session")
def demo_logdir() -> str:
    return str(DEMO_LOGS)
