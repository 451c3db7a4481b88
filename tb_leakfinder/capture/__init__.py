"""Recording profiles that hold what a verdict needs: the capture helper and the Keras callback. May import
read (to check what was written) and analyses' names; the frameworks only when the user's program has them."""

from tb_leakfinder.capture.leak_capture import Capture, CaptureError, CaptureWarning, capture

__all__ = ["Capture", "CaptureError", "CaptureWarning", "capture"]
