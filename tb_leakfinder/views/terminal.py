"""Text bound for a terminal or a Markdown comment: control characters from the profiles are shown, not obeyed."""

from __future__ import annotations

import re
from typing import Any

# C0 (newline and tab too: a name must not break a line or a table), DEL and C1.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with each control character as `\\xNN`: an ESC in an op name cannot retitle or clear the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def visible_json(value: Any) -> Any:
    """A copy of a report's JSON with every string `visible`."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {key: visible_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [visible_json(item) for item in value]
    return value
