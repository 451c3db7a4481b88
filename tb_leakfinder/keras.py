"""`from tb_leakfinder.keras import LeakCapture`, as documented: the callback lives in tb_leakfinder.capture.keras_callback."""

from tb_leakfinder.capture.keras_callback import LeakCapture

__all__ = ["LeakCapture"]
