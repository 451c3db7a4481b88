"""Memory events and step markers of one host, as columns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ALLOC = 0
FREE = 1

# Column name -> dtype of MemoryEvents; readers fill exactly these.
EVENT_COLUMNS: dict[str, type] = {
    "time_ps": np.int64,
    "kind": np.int8,
    "allocator": np.int32,
    "addr": np.uint64,
    "requested_bytes": np.int64,
    "allocation_bytes": np.int64,
    "bytes_in_use": np.int64,
    "bytes_reserved": np.int64,
    "peak_bytes_in_use": np.int64,
    "fragmentation": np.float64,
    "op": np.int32,
    "shape": np.int32,
    "region": np.int32,
    "dtype": np.int32,
}


@dataclass
class MemoryEvents:
    """All MemoryAllocation/MemoryDeallocation events of a host, sorted by time.

    Times are picoseconds from the start of the profile window. String columns
    (`op`, `shape`, `region`) index into `strings`, where index 0 is "";
    `allocator` indexes `allocator_names`. `dtype` is TF's DataType enum, -1
    when the event has none.
    """

    time_ps: np.ndarray
    kind: np.ndarray
    allocator: np.ndarray
    addr: np.ndarray
    requested_bytes: np.ndarray
    allocation_bytes: np.ndarray
    bytes_in_use: np.ndarray
    bytes_reserved: np.ndarray
    peak_bytes_in_use: np.ndarray
    fragmentation: np.ndarray
    op: np.ndarray
    shape: np.ndarray
    region: np.ndarray
    dtype: np.ndarray
    strings: list[str] = field(default_factory=lambda: [""])
    allocator_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.time_ps.shape[0])

    @classmethod
    def empty(cls) -> MemoryEvents:
        return cls(**{name: np.zeros(0, dtype) for name, dtype in EVENT_COLUMNS.items()})

    def take(self, index: np.ndarray) -> MemoryEvents:
        """The events at `index` (a boolean mask or positions), same tables."""
        columns = {name: getattr(self, name)[index] for name in EVENT_COLUMNS}
        return MemoryEvents(**columns, strings=self.strings, allocator_names=self.allocator_names)


@dataclass
class Steps:
    """Step markers (`step_num` events), sorted by start time."""

    step_num: np.ndarray  # int64
    start_ps: np.ndarray  # int64
    end_ps: np.ndarray  # int64

    def __len__(self) -> int:
        return int(self.step_num.shape[0])

    @classmethod
    def empty(cls) -> Steps:
        z = np.zeros(0, np.int64)
        return cls(z, z.copy(), z.copy())


@dataclass
class HostProfile:
    """What one `<host>.xplane.pb` holds that tb_leakfinder uses."""

    host: str
    path: str
    events: MemoryEvents
    steps: Steps
    duration_ps: int
    hlo_protos: dict[str, bytes] = field(default_factory=dict)  # "<module>(<id>)" -> serialized HloProto
    warnings: list[str] = field(default_factory=list)
