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


# XProf's names for the rows its peak table adds to the buffers it can attribute.
XPROF_BEFORE_WINDOW_ROW = "unused preallocated device memory"
XPROF_STACK_ROW = "stack"


def memory_profile_allocators(path: str) -> dict[str, dict]:
    """Per memory id, what XProf's memory profile says of its peak.

    `peakBytesInUse`, `stackReservedBytes`, `heapAllocatedBytes`,
    `fragmentation`, `time_ps` (its peakStatsTimePs), `memoryCapacity`, and
    `special`: the bytes of the
    rows its peak table adds ({"stack": …, "unused preallocated device
    memory": …}, a row left out when 0).
    """
    data = xprof_tool(path, "memory_profile")
    result = {}
    for memory_id, profile in data["memoryProfilePerAllocator"].items():
        summary = profile["profileSummary"]
        stats = summary["peakStats"]
        result[memory_id] = {
            **{key: int(stats[key]) for key in ("peakBytesInUse", "stackReservedBytes", "heapAllocatedBytes")},
            "fragmentation": float(stats["fragmentation"]),
            "time_ps": int(summary["peakStatsTimePs"]),
            "memoryCapacity": int(summary["memoryCapacity"]),
            "special": {row["tfOpName"]: int(row["allocationBytes"]) for row in profile.get("specialAllocations", [])},
        }
    assert sorted(data.get("memoryIds", [])) == sorted(result), "XProf lists a memory id it has no profile for"
    return result
