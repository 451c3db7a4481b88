"""Shared fixtures (helpers live in plain modules: tests/demo.py, tests/synthetic.py, tests/fuzzing.py)."""

from __future__ import annotations

import os

import pytest

from tests.demo import DEMO_LOGS

# Tests read no analyses a previous run left in ~/.cache; those of the disk cache name their folder.
os.environ["TB_LEAKFINDER_NO_CACHE"] = "1"


@pytest.fixture(scope="session")
def demo_logdir() -> str:
    return str(DEMO_LOGS)
