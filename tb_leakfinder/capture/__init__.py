"""Recording profiles that hold what a verdict needs: the capture helper, the Keras callback and the watch of a running
job's profiler server (`tb-leakfinder watch`, whose XProf client runs in a process of its own). May import read (to
check what was written, and to read a window's profile back), analyses (its never-freed buffers), model (the
companion file's contract, model/recordings.py) and the API's `analyze` (a capture's report, loaded when asked for);
the frameworks only when the user's program has them."""

from tb_leakfinder.capture.leak_capture import Capture, CaptureWarning, Session, capture
from tb_leakfinder.errors import CaptureError

__all__ = ["Capture", "CaptureError", "CaptureWarning", "Session", "capture"]
