"""The PyTorch memory snapshot format's entry in the registry: which files are snapshots, and their order.

`_dump_snapshot` writes wherever it is told; users and tools name the file `*.pickle` (torchtitan:
`rank<r>_memory_snapshot.pickle` per iteration) or `*.pkl`. A file of those names is a snapshot when its first
bytes are a pickle (protocol 2 to 5) of a dict whose first keys include `segments` or `device_traces`: other
pickles in a logdir are not read. Each snapshot is a capture of its own, a session with one host, HOST; a
folder's snapshots are a TensorBoard run's captures, in the order `common.file_sessions.session_order` gives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tb_leakfinder.lazy import LazyModule
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.base import FormatHintsInfo, HostReading
from tb_leakfinder.read.formats.common.file_sessions import session_order

if TYPE_CHECKING:
    from tb_leakfinder.read.formats.torch_snapshot import unpickle
else:
    # Cold start: the registry loads every format's entry; the unpickler (and pickle) loads when a file named as a
    # snapshot is sniffed, or the formats' limits are asked.
    unpickle = LazyModule("tb_leakfinder.read.formats.torch_snapshot.unpickle")

SUFFIXES = (".pickle", ".pkl")
HOST = "memory_snapshot"  # the one host of a snapshot's session
# A sniff reads this much: a snapshot's pickle opens with its dict's first key.
HEAD_BYTES = 256
SNAPSHOT_KEYS = (b"segments", b"device_traces")
HINTS = FormatHintsInfo(
    framework="PyTorch",
    name="PyTorch memory snapshot",
    suffix=SUFFIXES[0],
    layout=f"<folder>/<snapshot>{SUFFIXES[0]}",
    capture=(
        "Call `torch.cuda.memory._record_memory_history()` before the steps, then "
        f"`torch.cuda.memory._dump_snapshot('<logdir>/<run>/memory{SUFFIXES[0]}')`."
    ),
    record_events=(
        "A memory snapshot holds the allocations recorded after `torch.cuda.memory._record_memory_history()` and,"
        " without that, only the blocks live when it was dumped."
    ),
    python_frames=(
        "No Python frames in this snapshot. For the line of Python that made each buffer, record with "
        "torch.cuda.memory._record_memory_history(stacks='python') (or 'all') before the steps you snapshot"
    ),
)


def is_snapshot_name(file_name: str) -> bool:
    return any(file_name.endswith(s) and len(file_name) > len(s) for s in SUFFIXES)


def snapshot_stem(file_name: str) -> str:
    """A snapshot's name in its run: its file name without `.pickle` or `.pkl`."""
    for suffix in SUFFIXES:
        if file_name.endswith(suffix) and len(file_name) > len(suffix):
            return file_name[: -len(suffix)]
    return file_name


def looks_like_snapshot(head: bytes) -> bool:
    """Whether a file's first bytes open a pickle that names a snapshot's keys."""
    return unpickle.looks_like_pickle(head) and any(key in head[:HEAD_BYTES] for key in SNAPSHOT_KEYS)


class TorchSnapshotFormat:
    name = "torch_snapshot"
    hints = HINTS

    @property
    def max_file_bytes(self) -> int:
        return unpickle.MAX_FILE_BYTES

    def sniff(self, path: str) -> bool:
        return is_snapshot_name(files.basename(path)) and looks_like_snapshot(files.read_head(path, HEAD_BYTES))

    def host_name(self, file_name: str) -> str | None:
        return HOST if is_snapshot_name(file_name) else None

    def stem(self, file_name: str) -> str | None:
        return snapshot_stem(file_name) if is_snapshot_name(file_name) else None

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        # Here, not at the top: the registry imports every format to sniff files, and a command that reads no
        # snapshot should not pay for the reader (~15 ms of a cold start).
        from tb_leakfinder.read.formats.torch_snapshot import reader

        return HostReading(reader.read_host(path, host), [], {})

    def session_order(self, paths: list[str]) -> list[str]:
        return session_order(paths, snapshot_stem)


TORCH_SNAPSHOT = TorchSnapshotFormat()
