"""views/csv.py's cells and tables against tests/cases/csv.json, which the tab's csv.ts answers too."""

from __future__ import annotations

from typing import Any

import pytest

from tb_leakfinder.views.csv import Table, neutralise, site_rows
from tests.support.cases import load_cases

CASES = load_cases("csv")


@pytest.mark.parametrize(("value", "text"), CASES["cells"])
def test_cell(value: Any, text: str) -> None:
    assert neutralise(value) == text


@pytest.mark.parametrize("case", CASES["tables"])
def test_table(case: dict[str, Any]) -> None:
    table = Table(tuple(case["where"]))
    table.add(tuple(case["where"].values()), case["rows"])
    assert table.text() == case["csv"]


@pytest.mark.parametrize("case", CASES["sites"])
def test_site_columns(case: dict[str, Any]) -> None:
    (row,) = site_rows([case["row"]])
    assert list(row.items()) == list(case["out"].items())
