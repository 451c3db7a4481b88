"""`from tb_leakfinder.keras import LeakCapture`, as documented: the callback lives in tb_leakfinder.capture.keras."""

from tb_leakfinder.capture.keras import LeakCapture

__all__ = ["LeakCapture"]
