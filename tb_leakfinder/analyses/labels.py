"""Human-readable names for codes found in profiles, and byte formatting."""

from __future__ import annotations

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
    if code < 0:
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


def group_label(op: str, shape: str, region: str) -> str:
    """'Mul [128,1024] output', leaving out what the profile did not record."""
    return " ".join(part for part in (op or "(unknown op)", shape, region) if part)
