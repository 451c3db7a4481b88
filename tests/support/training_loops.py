"""Training loops the tests build: each step allocates and frees a temporary, marked as one step source marks it."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from tb_leakfinder.analyses.pipeline import HostAnalysis, analyze_host
from tb_leakfinder.read.formats.xplane.decoder import decode
from tb_leakfinder.testing.xspace_builder import ProfileBuilder

KIB = 1024
STEP_PS = 100_000_000_000  # 100 ms
BUSY_PS = 90_000_000_000  # the part of a step its root event, group or program spans
DEVICE = "/device:TPU:0"

Mark = Callable[[ProfileBuilder, int, int, int], None]


def _markers(b: ProfileBuilder, step: int, start: int, end: int) -> None:
    b.step(step, start, end)


def _root(name: str, root: bool = False) -> Mark:
    return lambda b, step, start, end: b.span(name, start, end, root=root)


def _program(b: ProfileBuilder, step: int, start: int, end: int) -> None:
    b.xla_module(DEVICE, "jit_train_step(3)", start, end, run_id=step)


def _device_step(b: ProfileBuilder, step: int, start: int, end: int) -> None:
    b.device_step(DEVICE, 1000 + step, start, end)


# How each source marks its steps, and what find_steps reports: (kind, name, description after "<n> steps ").
SOURCES: dict[str, tuple[Mark | None, str, str | None, str]] = {
    "step_num": (_markers, "step_num", None, "from step_num markers"),
    "group_id": (None, "group_id", None, "from the group_id stat"),
    "_r": (_root("train_step", root=True), "root_events", "train_step", "from root events (train_step)"),
    "TraceContext": (_root("TraceContext"), "root_events", "TraceContext", "from root events (TraceContext)"),
    "FunctionRun": (_root("FunctionRun"), "root_events", "FunctionRun", "from root events (FunctionRun)"),
    "tf.function": (
        _root("__inference_train_step_77"),
        "root_events",
        "__inference_train_step_77",
        "from calls of __inference_train_step_77",
    ),
    "PjitFunction": (
        _root("PjitFunction(train_step)"),
        "root_events",
        "PjitFunction(train_step)",
        "from calls of PjitFunction(train_step)",
    ),
    "XLA Modules": (_program, "device_programs", "jit_train_step(3)", f"from executions of jit_train_step(3) on {DEVICE}"),
    "Steps line": (_device_step, "device_programs", "Steps", f"from the Steps line of {DEVICE}"),
}


class Loop:
    """A training loop whose steps are marked one way; each step allocates and frees a temporary."""

    def __init__(self, source: str, steps: int = 20, limit_bytes: int = 1 << 36) -> None:
        self.b = ProfileBuilder()
        self.b.allocator("GPU_0_bfc", limit_bytes=limit_bytes)
        self.source = source
        self.steps = steps
        self.addr = itertools.count(0x10_0000, 0x1_0000)
        self.step = 0

    def _group(self) -> int | None:
        return 500 + self.step if self.source == "group_id" else None

    def alloc(self, t: int, nbytes: int, op: str, shape: str, region: str = "output", requested: int | None = None) -> int:
        a = next(self.addr)
        self.b.alloc(t, a, nbytes, op=op, shape=shape, region=region, requested=requested, group_id=self._group())
        return a

    def free(self, t: int, addr: int, nbytes: int) -> None:
        self.b.free(t, addr, nbytes, group_id=self._group())

    def run(self, keep: Callable[[int, int], object] = lambda step, t: None, in_flight: int = 0) -> ProfileBuilder:
        """`in_flight` activations of a step the capture cut short follow the last complete step, never freed."""
        mark = SOURCES[self.source][0] if self.source in SOURCES else None
        for step in range(self.steps):
            self.step = step
            t0 = step * STEP_PS
            if mark is not None:
                mark(self.b, step, t0, t0 + BUSY_PS)
            tmp = self.alloc(t0 + 10, 256 * KIB, "MatMul", "[64,1024]", "temp")
            keep(step, t0 + 20)
            self.free(t0 + BUSY_PS - 10, tmp, 256 * KIB)
        self.step = self.steps
        t0 = self.steps * STEP_PS
        for k in range(in_flight):
            self.alloc(t0 + 10 + k, 64 * KIB, "Relu", "[16,1024]")
        return self.b


def analyze(builder: ProfileBuilder) -> HostAnalysis:
    """The host analysis of the builder's profile, read by the reference decoder."""
    return analyze_host(decode(builder.to_bytes(), "host0", "memory.xplane.pb"))
