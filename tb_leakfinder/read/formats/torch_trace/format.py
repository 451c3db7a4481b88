"""The PyTorch profiler trace format's entry in the registry: which files are traces, and their hosts.

A folder holding traces (outside `plugins/`) is one session, its hosts the traces: the workers of one
TensorBoard run. `tensorboard_trace_handler` names a trace `<worker>.<ns>.pt.trace.json[.gz]`, its worker
`<host>_<pid>` by default; a trace's host is its worker (two processes of one machine are two hosts), any
other `*.json[.gz]` whose first bytes show a Kineto trace its file stem.

A profiler schedule with `repeat=N` makes N traces per worker, one per cycle, each named by when it was
written: the k-th trace of every worker (in that order) is the folder's k-th session, a capture of the run,
named by the earliest time in its traces' names (`cycle_<k>` when they have none).
"""

from __future__ import annotations

import re
import zlib
from typing import TYPE_CHECKING

from tb_leakfinder.lazy import LazyModule
from tb_leakfinder.read import files
from tb_leakfinder.read.formats.base import FormatHintsInfo, HostReading

if TYPE_CHECKING:
    from tb_leakfinder.read.formats.torch_trace import stream
else:
    # Cold start: the registry loads every format's entry; the trace's tokenizer loads with its reader, or when the
    # formats' limits are asked.
    stream = LazyModule("tb_leakfinder.read.formats.torch_trace.stream")

TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
JSON_SUFFIXES = (".json", ".json.gz")
# A sniff reads this much of a file, and looks this far into its (decompressed) text for a trace's keys:
# a TraceLens trace puts ~26 KB of metadata before "traceEvents".
HEAD_BYTES = 64 << 10
TRACE_KEYS = (b'"traceEvents"', b'"schemaVersion"')
# tensorboard_trace_handler's file name: `<worker>.<time in ns or ms>.pt.trace.json[.gz]`.
MAX_TIME_DIGITS = 24
_HANDLER_NAME = re.compile(r"(.+)\.(\d+)\.pt\.trace\.json(?:\.gz)?")


def is_trace_name(file_name: str) -> bool:
    return any(file_name.endswith(s) and len(file_name) > len(s) for s in TRACE_SUFFIXES)


def stem(file_name: str) -> str:
    """A trace's file name without its `.pt.trace.json[.gz]` or `.json[.gz]`."""
    for suffix in (*TRACE_SUFFIXES, *JSON_SUFFIXES):
        if file_name.endswith(suffix) and len(file_name) > len(suffix):
            return file_name[: -len(suffix)]
    return file_name


def trace_host(file_name: str) -> str:
    """The worker a trace's file name gives (`<host>_<pid>` of `<host>_<pid>.<ns>.pt.trace.json.gz`), else its stem."""
    handler = _HANDLER_NAME.fullmatch(file_name)
    return handler.group(1) if handler else stem(file_name)


def written_at(file_name: str) -> int | None:
    """The time in a `tensorboard_trace_handler` file name (`<worker>.<time>.pt.trace.json[.gz]`), None in others."""
    handler = _HANDLER_NAME.fullmatch(file_name)
    # Hundreds of digits are no time; a remote name may hold more than int() converts.
    return int(handler.group(2)) if handler and len(handler.group(2)) <= MAX_TIME_DIGITS else None


def looks_like_trace(head: bytes) -> bool:
    """Whether a file's first bytes (gzipped or not) open a JSON object with a Kineto trace's keys."""
    if head[:2] == files.GZIP_MAGIC:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, HEAD_BYTES)
        except zlib.error:
            return False
    text = head[:HEAD_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    return text[:1] == b"{" and any(key in text for key in TRACE_KEYS)


HINTS = FormatHintsInfo(
    framework="PyTorch",
    name="PyTorch profiler trace",
    suffix=".pt.trace.json[.gz]",
    layout="<folder>/<worker>.pt.trace.json[.gz]",
    capture=(
        "Profile with `torch.profiler.profile(profile_memory=True, "
        "on_trace_ready=torch.profiler.tensorboard_trace_handler('<logdir>/<run>'))`."
    ),
    record_events=(
        "PyTorch records memory events ([memory]) only when profiling with `torch.profiler.profile(profile_memory=True)`."
    ),
    python_frames=(
        "No Python frames in this trace. For the line of Python that made each buffer, profile with "
        "torch.profiler.profile(profile_memory=True, with_stack=True)"
    ),
    # The trace names no allocation's own shape: the op's `Input Dims` stand for it.
    shape_label="input shapes",
)


class TorchTraceFormat:
    name = "torch_trace"
    hints = HINTS

    @property
    def max_file_bytes(self) -> int:
        return stream.MAX_TRACE_BYTES

    def sniff(self, path: str) -> bool:
        name = files.basename(path)
        if is_trace_name(name):
            return True
        if not any(name.endswith(s) and len(name) > len(s) for s in JSON_SUFFIXES):
            return False
        return looks_like_trace(files.read_head(path, HEAD_BYTES))

    def host_name(self, file_name: str) -> str | None:
        # By name only: XProf's session folders hold `<host>.trace.json.gz` and other JSON that are no hosts.
        return trace_host(file_name) if is_trace_name(file_name) else None

    def stem(self, file_name: str) -> str | None:
        found = stem(file_name)
        return None if found == file_name else found

    def folder_sessions(self, folder: str, names: list[str]) -> list[tuple[str, dict[str, str]]]:
        """The traces among a folder's file names (by name, or by content for other JSON) as its sessions, in the
        order the profiler's cycles wrote them: (name, host -> path) each."""
        by_host: dict[str, list[tuple[int, str]]] = {}
        for name in sorted(names):
            path = files.join(folder, name)
            if self.sniff(path):
                written = written_at(name)
                by_host.setdefault(trace_host(name), []).append((-1 if written is None else written, path))
        hosts = sorted(by_host)
        traces = [sorted(by_host[host]) for host in hosts]
        sessions = []
        for k in range(max(map(len, traces), default=0)):
            cycle = {host: mine[k][1] for host, mine in zip(hosts, traces, strict=True) if k < len(mine)}
            times = [mine[k][0] for mine in traces if k < len(mine) and mine[k][0] >= 0]
            sessions.append((str(min(times)) if times else f"cycle_{k + 1}", cycle))
        if len({name for name, _ in sessions}) < len(sessions):
            return [(f"cycle_{k + 1}", cycle) for k, (_, cycle) in enumerate(sessions)]
        return sessions

    def read(self, path: str, host: str, session_dir: str) -> HostReading:
        from tb_leakfinder.read.formats.torch_trace import reader

        return HostReading(reader.read_host(path, host), [], {})


TORCH_TRACE = TorchTraceFormat()
