"""How figures read in sentences and tables (analyses/words.py)."""

from __future__ import annotations

import pytest

from tb_leakfinder.analyses.words import format_duration_ps, format_fraction


@pytest.mark.parametrize(
    ("ps", "text"),
    [(100_000_000_000, "100 ms"), (1_500_000_000_000, "1.5 s"), (3113 * 10**12, "52 min"), (5 * 3600 * 10**12, "5 h")],
)
def test_durations_read_naturally(ps, text):
    assert format_duration_ps(ps) == text


@pytest.mark.parametrize(("f", "text"), [(0.64, "64%"), (0.025, "2.5%"), (0.00025, "< 0.1%"), (0.0, "0.0%"), (1.0, "100%")])
def test_fractions_read_as_the_tab_shows_them(f, text):
    assert format_fraction(f) == text
