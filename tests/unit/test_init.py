"""The package's public names: `analyze`, `capture` and `Capture`, loaded on first use."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tb_leakfinder
from tests.support.demo import ROOT

_NAMES_AFTER = """
import json, sys
import tb_leakfinder
before = "tb_leakfinder.capture" in sys.modules
import tb_leakfinder.capture.watch  # the import system binds the submodule `capture` to the package
from tb_leakfinder import capture
from tb_leakfinder.capture.leak_capture import Capture, capture as the_function
from tb_leakfinder.api import analyze
print(json.dumps([before, capture is the_function, tb_leakfinder.capture is the_function,
                  tb_leakfinder.Capture is Capture, tb_leakfinder.analyze is analyze]))
"""


def test_the_package_loads_the_capture_helper_when_used_and_capture_stays_the_function():
    out = subprocess.run([sys.executable, "-c", _NAMES_AFTER], capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(out.stdout) == [False, True, True, True, True]


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        tb_leakfinder.no_such_name  # noqa: B018 - the lookup is the test
