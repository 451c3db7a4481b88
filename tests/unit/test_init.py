"""The package's public names, loaded on first use (`capture` and `Capture`: tests/unit/capture/test_leak_capture.py)."""

from __future__ import annotations

import pytest

import tb_leakfinder
from tb_leakfinder import api


def test_analyze_is_the_apis():
    assert tb_leakfinder.analyze is api.analyze


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        tb_leakfinder.no_such_name  # noqa: B018 - the lookup is the test
