"""`LeakCapture`: tb_leakfinder.capture as a Keras callback, one step per training batch.

    model.fit(x, y, epochs=3, callbacks=[LeakCapture("logs/run1", start_batch=5, num_batches=20)])

Batches are numbered across epochs (the 3rd batch of the 2nd epoch of 10 batches is 12), so the window
may span epochs. The profiler follows the Keras backend (TensorFlow, JAX or PyTorch). Keras is imported only
when `LeakCapture` is first used, since the program that uses it has Keras. `python_tracer=True`
records Python function events too, as tb_leakfinder.capture does; `every_batches=N` captures the
`num_batches` batches again every N batches, each time as a session of its own (capture's `every`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

from tb_leakfinder.capture.framework_profiler import FRAMEWORKS
from tb_leakfinder.capture.leak_capture import Capture
from tb_leakfinder.errors import CaptureError

_classes: dict[str, type] = {}


def _backend_framework(keras: Any) -> str | None:
    backend = keras.backend.backend()
    return backend if backend in FRAMEWORKS else None


def _make_class() -> type:
    try:
        keras = importlib.import_module("keras")
    except ImportError as exc:
        raise CaptureError(
            f"tb_leakfinder.capture.keras_callback.LeakCapture needs Keras, which cannot be imported ({exc})"
        ) from None

    callback: Any = keras.callbacks.Callback

    class LeakCapture(callback):
        """Profiles training batches `start_batch .. start_batch+num_batches-1` of `fit` into `logdir` (with Python
        function events when `python_tracer` is true), and again every `every_batches` batches when that is set;
        `recorders` chooses the companion recorders as `tb_leakfinder.capture` does (`()`: none)."""

        def __init__(
            self,
            logdir: str,
            start_batch: int = 1,
            num_batches: int = 20,
            python_tracer: bool = False,
            every_batches: int | None = None,
            recorders: Sequence[str] | None = None,
        ) -> None:
            super().__init__()
            framework = _backend_framework(keras)
            if framework is None or framework not in sys.modules:
                raise CaptureError(
                    f"the Keras backend is {keras.backend.backend()!r}; LeakCapture profiles TensorFlow, JAX or PyTorch only"
                )
            self.capture = Capture(
                logdir, start_batch, num_batches, framework, python_tracer, every=every_batches, recorders=recorders
            )
            self._batch = 0
            self._step: Any = None

        def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
            self.capture.__enter__()

        def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
            self._step = self.capture.step(self._batch)
            self._step.__enter__()

        def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
            if self._step is not None:
                self._step.__exit__(None, None, None)
                self._step = None
            self._batch += 1

        def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
            self.capture.__exit__(None, None, None)

        def report(self) -> dict[str, Any]:
            """The leak report of the captured batches, the last session's with every_batches (as `Capture.report`)."""
            return self.capture.report()

        def reports(self) -> list[dict[str, Any]]:
            """The leak report of each session, in the order they were captured (as `Capture.reports`)."""
            return self.capture.reports()

    LeakCapture.__module__ = __name__
    return LeakCapture


def __getattr__(name: str) -> type:
    if name != "LeakCapture":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _classes:
        _classes[name] = _make_class()
    return _classes[name]
