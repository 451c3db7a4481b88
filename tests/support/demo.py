"""The real demo captures under demo_logs/ and how tests find them."""

from __future__ import annotations

import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO_LOGS = ROOT / "demo_logs"


def demo_run_dir(tb_run: str) -> pathlib.Path:
    return DEMO_LOGS / tb_run


def demo_xplane(tb_run: str) -> pathlib.Path:
    """The one .xplane.pb of a demo run, found rather than hard-coded (host and session vary)."""
    found = sorted((DEMO_LOGS / tb_run / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert len(found) == 1, found
    return found[0]


def demo_capture(tb_run: str) -> dict:
    """What the capture script leaked on purpose, from its own constants."""
    return json.loads((DEMO_LOGS / tb_run / "capture.json").read_text())
