"""Build JAX-style device memory profiles (gzipped pprof Profiles), for tests and fuzz seeds.

The layout follows what `jax.profiler.save_device_memory_profile` (JAX 0.10, CPU) writes: sample types
`allocations/count` and `space/bytes`; one sample per set of buffers that share a stack, a device and a
kind, with labels `kind` ("buffer", "executable") and `device` ("cpu:0"); one location per frame with one
line, its function's whole file path and first line; no time_nanos (a writer may add it).

    builder = PprofBuilder()
    builder.sample(1 << 20, [("/src/train.py", "make", 3, 4), ("/src/train.py", "<module>", 1, 9)])
    builder.write(path)
"""

from __future__ import annotations

import gzip
import pathlib
from collections.abc import Sequence

from tb_leakfinder import proto

# One frame, innermost first in a stack: (file path, function, its first line, the line run).
Frame = tuple[str, str, int, int]


class PprofBuilder:
    def __init__(
        self,
        sample_types: Sequence[tuple[str, str]] = (("allocations", "count"), ("space", "bytes")),
        time_nanos: int = 0,
    ) -> None:
        self.message = proto.PprofProfile()()
        self._strings: dict[str, int] = {}
        self._functions: dict[tuple[str, str, int], int] = {}
        self._locations: dict[tuple[int, int], int] = {}
        self.string("")
        for kind, unit in sample_types:
            value_type = self.message.sample_type.add()
            value_type.type, value_type.unit = self.string(kind), self.string(unit)
        self.message.time_nanos = time_nanos

    def string(self, text: str) -> int:
        if text not in self._strings:
            self._strings[text] = len(self.message.string_table)
            self.message.string_table.append(text.encode())
        return self._strings[text]

    def location(self, frame: Frame) -> int:
        """The id of a frame's location (and its function), added when new."""
        filename, name, start_line, line = frame
        key = (filename, name, start_line)
        if key not in self._functions:
            function = self.message.function.add()
            function.id = len(self.message.function)
            function.name = function.system_name = self.string(name)
            function.filename, function.start_line = self.string(filename), start_line
            self._functions[key] = function.id
        where = (self._functions[key], line)
        if where not in self._locations:
            location = self.message.location.add()
            location.id = len(self.message.location)
            added = location.line.add()
            added.function_id, added.line = where
            self._locations[where] = location.id
        return self._locations[where]

    def sample(
        self,
        nbytes: int,
        stack: Sequence[Frame] = (),
        *,
        count: int = 1,
        device: str = "cpu:0",
        kind: str = "buffer",
        values: Sequence[int] | None = None,
    ) -> None:
        """`count` live buffers of `nbytes` together, made at `stack` (innermost first); `values` replaces
        (count, nbytes)."""
        sample = self.message.sample.add()
        sample.location_id.extend(self.location(frame) for frame in stack)
        sample.value.extend([count, nbytes] if values is None else values)
        for key, text in (("kind", kind), ("device", device)):
            label = sample.label.add()
            label.key, label.str = self.string(key), self.string(text)

    def to_bytes(self) -> bytes:
        """The Profile, not compressed."""
        data: bytes = self.message.SerializeToString()
        return data

    def to_gzip(self) -> bytes:
        return gzip.compress(self.to_bytes(), mtime=0)

    def write(self, path: str | pathlib.Path) -> pathlib.Path:
        out = pathlib.Path(path)
        out.write_bytes(self.to_gzip())
        return out
