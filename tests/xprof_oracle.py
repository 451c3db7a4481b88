"""XProf's own converters, run in a subprocess, as oracles for our figures.

A subprocess keeps XProf's native libraries away from the test process's protobuf.
"""

from __future__ import annotations

import json
import subprocess
import sys

_SCRIPT = """
import json, sys
from xprof.convert import raw_to_tool_data
data, _ = raw_to_tool_data.xspace_to_tool_data([sys.argv[1]], sys.argv[2], json.loads(sys.argv[3]))
sys.stdout.write(data if isinstance(data, str) else data.decode())
"""


def xprof_tool(path: str, tool: str, params: dict | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT, path, tool, json.dumps(params or {})],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return json.loads(out.stdout)


def memory_profile_peaks(path: str) -> dict[str, dict]:
    """Per allocator: XProf's peakStats as numbers, plus its peak time as `time_ps`."""
    data = xprof_tool(path, "memory_profile")
    peaks = {}
    for name, profile in data["memoryProfilePerAllocator"].items():
        summary = profile["profileSummary"]
        stats = {k: float(v) if k == "fragmentation" else int(v) for k, v in summary["peakStats"].items()}
        peaks[name] = {**stats, "time_ps": int(summary["peakStatsTimePs"])}
    return peaks
