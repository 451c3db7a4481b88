"""A fake JAX whose profiler names a session by the second it is written, as the real ones do: what a capture asks of
jax.profiler (start and stop a trace, step annotations, device memory profiles), for the capture's unit tests."""

from __future__ import annotations

import contextlib
import gzip
import json
import pathlib
import sys
import types

import pytest

STAMP = "2026_12_01_10_00_00"


class FakeJaxProfiler(types.ModuleType):
    """jax.profiler as a capture uses it: start/stop a trace, step annotations, device memory profiles."""

    def __init__(self) -> None:
        super().__init__("fake_jax.profiler")
        self.logdir: str | None = None
        self.marks: list[int] = []
        self.ProfileOptions = lambda: types.SimpleNamespace(host_tracer_level=0, python_tracer_level=0)

    def start_trace(self, logdir: str, profiler_options: object = None) -> None:
        assert self.logdir is None, "one trace at a time"
        self.logdir, self.marks = logdir, []

    def stop_trace(self) -> None:
        # As JAX and TensorFlow do: the session folder is the second it is written, so two of one second are one
        # folder; here every session is written in that same second.
        assert self.logdir is not None
        session = pathlib.Path(self.logdir, "plugins", "profile", STAMP)
        session.mkdir(parents=True, exist_ok=True)
        (session / "host.xplane.pb").write_text(json.dumps(self.marks))
        self.logdir = None

    def StepTraceAnnotation(self, name: str, step_num: int) -> contextlib.AbstractContextManager[None]:  # noqa: N802
        self.marks.append(step_num)
        return contextlib.nullcontext()

    def save_device_memory_profile(self, filename: str, backend: str | None = None) -> None:
        pathlib.Path(filename).write_bytes(gzip.compress(b"a pprof Profile"))


def install_fake_jax(monkeypatch: pytest.MonkeyPatch) -> FakeJaxProfiler:
    """Installs a fake `jax` (what a capture asks of it) into sys.modules for one test."""
    jax = types.ModuleType("fake_jax")
    profiler = FakeJaxProfiler()
    monkeypatch.setitem(sys.modules, "jax", jax)
    monkeypatch.setitem(sys.modules, "fake_jax.profiler", profiler)
    return profiler
