"""analyses/words.py's number formatting and the capacity a peak is shown of against tests/cases/format.json, which
the tab's format.ts answers too."""

from __future__ import annotations

import pytest

from tb_leakfinder.analyses.capacity import known_capacity
from tb_leakfinder.analyses.words import count_of, format_bytes, format_fraction, short_program_ids
from tests.support.cases import load_cases

CASES = load_cases("format")


@pytest.mark.parametrize(("n", "text"), CASES["bytes"])
def test_bytes(n: float, text: str) -> None:
    assert format_bytes(n) == text


@pytest.mark.parametrize(("f", "text"), CASES["fraction"])
def test_fraction(f: float, text: str) -> None:
    assert format_fraction(f) == text


@pytest.mark.parametrize(("label", "text"), CASES["short_program"])
def test_short_program_ids(label: str, text: str) -> None:
    assert short_program_ids(label) == text


@pytest.mark.parametrize(("args", "text"), CASES["count"])
def test_count_of(args: list[int | str], text: str) -> None:
    n, *words = args
    assert isinstance(n, int)
    assert count_of(n, *(str(w) for w in words)) == text


@pytest.mark.parametrize(("args", "capacity"), CASES["known_capacity"])
def test_known_capacity(args: list[int], capacity: int) -> None:
    assert known_capacity(*args) == capacity
