"""Human-readable names for codes found in profiles, and byte and duration formatting."""

from __future__ import annotations

import re

# TensorFlow's DataType enum (types.proto), as memory events carry it.
_TF_DTYPES = {
    1: "float",
    2: "double",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    11: "qint8",
    12: "quint8",
    13: "qint32",
    14: "bfloat16",
    15: "qint16",
    16: "quint16",
    17: "uint16",
    18: "complex128",
    19: "half",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
    24: "float8_e5m2",
    25: "float8_e4m3fn",
    29: "int4",
    30: "uint4",
}


def dtype_name(code: int) -> str:
    """The TF DataType's name; "" when the event has none (-1) or says DT_INVALID (0), as PJRT runtimes do."""
    if code <= 0:
        return ""
    return _TF_DTYPES.get(code, f"dtype({code})")


def format_bytes(n: float) -> str:
    """Binary units: 512 KiB, 1.5 MiB."""
    sign = "-" if n < 0 else ""
    value = float(abs(n))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            text = f"{value:.0f}" if unit == "B" or value >= 100 or value == int(value) else f"{value:.1f}"
            return f"{sign}{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_fraction(f: float) -> str:
    """'64%', '2.5%', '< 0.1%' (the tab's formatFraction)."""
    if 0 < f < 0.0005:
        return "< 0.1%"
    return f"{100 * f:.1f}%" if f < 0.1 else f"{100 * f:.0f}%"


def format_duration_ps(ps: float) -> str:
    """'100 ms', '1.5 s', '52 min', '3.2 h', '4.1 days'."""
    seconds = ps / 1e12
    for limit, scale, unit in ((1e-6, 1e-9, "ns"), (1e-3, 1e-6, "µs"), (1.0, 1e-3, "ms"), (120.0, 1.0, "s")):
        if seconds < limit:
            return _figure(seconds / scale, unit)
    for limit, scale, unit in ((120 * 60.0, 60.0, "min"), (48 * 3600.0, 3600.0, "h")):
        if seconds < limit:
            return _figure(seconds / scale, unit)
    return _figure(seconds / 86400.0, "days")


def _figure(value: float, unit: str) -> str:
    return f"{value:.0f} {unit}" if value >= 10 or value == int(value) else f"{value:.1f} {unit}"


def group_label(op: str, shape: str, region: str) -> str:
    """'Mul [128,1024] output', leaving out what the profile did not record."""
    return " ".join(part for part in (op or "(unknown op)", shape, region) if part)


NO_MEMORY_ID = "(no memory id)"
# Pinned host memory of TF's and PJRT's GPU clients: host RAM, listed after the devices.
HOST_PINNED_IDS = ("gpu_host_bfc", "xla_gpu_host_bfc")
# oneDNN's CPU allocator, TensorFlow's on x86 without TF_CPU_ALLOCATOR_USE_BFC=true. It hands small buffers out
# of a pool that records no memory events, so its profile holds only the large blocks.
MKLCPU_ID = "mklcpu"
_GPU_BFC = re.compile(r"GPU_(\d+)_bfc")
_DEVICE_PLANE = re.compile(r"/device:(TPU|GPU):(\d+)")


def allocator_label(memory_id: str, device_planes: list[str]) -> str:
    """'TPU:2' or 'GPU:0' when the memory id names a device plane of the profile ('2', 'GPU_0_bfc'), else the id."""
    if not memory_id:
        return NO_MEMORY_ID
    gpu = _GPU_BFC.fullmatch(memory_id)
    ordinal = memory_id if memory_id.isdecimal() else gpu.group(1) if gpu else None
    for plane in device_planes:
        device = _DEVICE_PLANE.fullmatch(plane)
        if device and ordinal is not None and int(device.group(2)) == int(ordinal) and (not gpu or device.group(1) == "GPU"):
            return f"{device.group(1)}:{device.group(2)}"
    return memory_id


def is_host_memory(memory_id: str) -> bool:
    """Whether an allocator hands out host RAM (pinned for a GPU, or a CPU allocator), not device memory."""
    return memory_id in HOST_PINNED_IDS or "cpu" in memory_id.lower()
