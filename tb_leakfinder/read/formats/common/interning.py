"""Distinct strings numbered in the order a reader first meets them: the string tables readers build."""

from __future__ import annotations


class Interned:
    """Each distinct string stored once in `values`; calling it gives a string's index there."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.values)
            self.values.append(text)
        return found
