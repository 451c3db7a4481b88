"""The buffer assignment of one compiled XLA program, as columns.

Rows are positions, not XLA ids: a logical buffer's `instruction` is a row of
`Instructions`, its `allocation` a row of `Allocations`, and a heap-trace
event's `buffer` a row of `LogicalBuffers` (-1 where the proto named an id that
does not exist).

Compiled programs on two layers: here their buffers as columns; read/formats/xplane/hlo.py decodes XLA's protos into
them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# HeapSimulatorTrace.Event.Kind
ALLOC = 0
FREE = 1
SHARE_WITH = 2
# XProf's Memory Viewer groups buffers below this size as "small": the static view folds them (the report's
# `limits` carry it to the frontend, with or without compiled programs, without their analyses).
SMALL_BUFFER_BYTES = 16 * 1024


@dataclass
class Instructions:
    """The HLO instructions that define logical buffers (the others are only counted)."""

    name: list[str]
    opcode: list[str]
    op_name: list[str]  # framework op, e.g. "jit(step)/jvp()/dot_general"
    source: list[str]  # innermost user frame "file:line", or ""
    computation: list[str]
    last_user: list[str]  # the user that runs last in the schedule (through bitcasts, tuples), or ""

    def __len__(self) -> int:
        return len(self.name)


@dataclass(eq=False)
class LogicalBuffers:
    id: np.ndarray  # int64, XLA's logical buffer id
    size: np.ndarray  # int64 bytes
    color: np.ndarray  # int64 memory space
    instruction: np.ndarray  # int32 row in Instructions, -1 if unknown
    shape: list[str]  # XLA text without layout of the defining instruction's (sub)shape, e.g. "f32[256,3072]"
    allocation: np.ndarray  # int32 row in Allocations, -1 if not assigned
    offset: np.ndarray  # int64 offset inside its allocation

    def __len__(self) -> int:
        return int(self.id.shape[0])


@dataclass(eq=False)
class Allocations:
    index: np.ndarray  # int64, XLA's allocation index
    size: np.ndarray  # int64 bytes
    color: np.ndarray  # int64 memory space
    is_thread_local: np.ndarray  # bool
    is_tuple: np.ndarray  # bool
    is_parameter: np.ndarray  # bool: an entry computation parameter
    parameter_number: np.ndarray  # int64, meaningful where is_parameter
    is_constant: np.ndarray  # bool
    maybe_live_out: np.ndarray  # bool: returned by the program

    def __len__(self) -> int:
        return int(self.index.shape[0])

    @property
    def is_indefinite(self) -> np.ndarray:
        """Allocations that live for the whole program, outside the heap simulation."""
        indefinite: np.ndarray = self.is_thread_local | self.is_parameter | self.is_constant | self.maybe_live_out
        return indefinite


@dataclass(eq=False)
class HeapTrace:
    """One heap-simulator trace: the events of a heap in program order."""

    kind: np.ndarray  # int8: ALLOC, FREE or SHARE_WITH
    buffer: np.ndarray  # int32 row in LogicalBuffers, -1 if unknown
    share_with: np.ndarray  # int32 row of the canonical buffer (SHARE_WITH only), else -1
    instruction: list[str]  # instruction name recorded with each event
    whole_module: bool

    def __len__(self) -> int:
        return int(self.kind.shape[0])


@dataclass
class HloModule:
    """What tb_leakfinder keeps of one `HloProto`."""

    key: str  # "<module>(<program_id>)", the name XProf lists
    name: str  # HloModuleProto.name
    program_id: int | None
    entry_computation: str
    num_instructions: int
    instructions: Instructions
    buffers: LogicalBuffers
    allocations: Allocations
    traces: list[HeapTrace]
    source: str  # the file it was read from, for messages

    @property
    def memory_spaces(self) -> list[int]:
        """The memory spaces (colors) that hold at least one allocation."""
        return sorted({int(c) for c in self.allocations.color})
