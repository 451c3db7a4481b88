"""tb_leakfinder.capture's helper without a framework: which CPU allocator TensorFlow shows, and argument checks.

The captures with real TensorFlow and JAX are tests/integration/test_capture.py.
"""

from __future__ import annotations

import sys
import types

import pytest

import tb_leakfinder
from tb_leakfinder.capture.helper import Capture, CaptureError, detect_framework, tensorflow_cpu_allocator


class FakeTensorFlow(types.ModuleType):
    """What tensorflow_cpu_allocator asks of TensorFlow: a CPU device, its stats, and whether oneDNN is on."""

    def __init__(self, stats: bool) -> None:
        super().__init__("fake_tf")
        self.stats = stats
        self.config = types.SimpleNamespace(
            list_logical_devices=lambda kind: ["CPU:0"],
            experimental=types.SimpleNamespace(get_memory_info=self.get_memory_info),
        )

    def get_memory_info(self, device: str) -> dict:
        if not self.stats:
            raise ValueError(f"Allocator stats not available for device '{device}'")
        return {"current": 0, "peak": 0}


@pytest.mark.parametrize(
    ("stats", "onednn", "bfc_set", "expected"),
    [
        (False, False, False, "default"),
        (False, True, True, "default"),  # no stats: TF's plain allocator, whatever oneDNN and the variable say
        (True, False, True, "bfc"),
        (True, True, False, "mklcpu"),
        (True, None, False, "mklcpu"),  # a TF that hides oneDNN: stats without the variable are mklcpu's
        (True, True, True, "unknown"),  # BFC, or mklcpu if the variable came late: the profile will tell
    ],
)
def test_tensorflow_cpu_allocator_from_what_tensorflow_shows(monkeypatch, stats, onednn, bfc_set, expected):
    tf = FakeTensorFlow(stats)
    if onednn is not None:
        port = types.SimpleNamespace(IsMklEnabled=lambda: onednn)
        monkeypatch.setitem(sys.modules, "fake_tf.python.util._pywrap_util_port", port)
    if bfc_set:
        monkeypatch.setenv("TF_CPU_ALLOCATOR_USE_BFC", "true")
    else:
        monkeypatch.delenv("TF_CPU_ALLOCATOR_USE_BFC", raising=False)
    assert tensorflow_cpu_allocator(tf) == expected


def test_capture_arguments_are_checked():
    with pytest.raises(CaptureError, match="count must be at least 1"):
        Capture("logs", 0, 0)
    with pytest.raises(CaptureError, match="framework must be one of"):
        detect_framework("torch")
    if "jax" not in sys.modules:
        with pytest.raises(CaptureError, match="jax is not imported"):
            detect_framework("jax")
    assert tb_leakfinder.capture is not sys.modules["tb_leakfinder.capture"]
    assert callable(tb_leakfinder.capture)
