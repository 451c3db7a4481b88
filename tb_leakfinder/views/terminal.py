"""Text bound for a terminal or a Markdown comment: control characters from the profiles are shown, not obeyed.

Every text a view writes may hold what no encoding can write: a lone surrogate from a profile (JSON's `\\ud800`, or
raw `ED A0 80` read as the trace reader reads UTF-8) or from a file name that is not UTF-8 (Python's
`surrogateescape`). `visible` shows those escaped too, and files and streams are written with `ENCODING_ERRORS`,
so that nothing a profile holds can make a write fail.
"""

from __future__ import annotations

import re
from typing import Any

# C0 (newline and tab too: a name must not break a line or a table), DEL, C1 and the surrogates.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# How the views encode what they write: a character the encoding lacks becomes its `\\uXXXX`.
ENCODING_ERRORS = "backslashreplace"


def _escaped(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with each control character as `\\xNN` and each lone surrogate as `\\uXXXX`: an ESC in an op name
    cannot retitle or clear the terminal, and a surrogate cannot fail the write."""
    return _CONTROL.sub(lambda m: _escaped(m.group()), text)


def encoded_size(text: str) -> int:
    """The bytes `text` takes written as the views write it."""
    return len(text.encode("utf-8", ENCODING_ERRORS))


def visible_json(value: Any) -> Any:
    """A copy of a report's JSON with every string `visible`."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {key: visible_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [visible_json(item) for item in value]
    return value
