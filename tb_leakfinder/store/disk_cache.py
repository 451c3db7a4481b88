"""Host analyses kept on disk, so a restarted TensorBoard or CLI answers without decoding profiles again.

One `.npz` per analysed host file (an uncompressed zip, no pickle) with six
members: `identity.json` (the analysis version and a hash of the profile's
identity), `report.json` (the host's report JSON, or its error), `summary.json`
(its rows of the pod overview), `points.json` (what the run's history takes of
it: `model.history.HostPoints`, in the codec's JSON), `tree.json` (the analysis
dataclasses in the codec's JSON, and where each array lies in `data`) and
`data.npy` (every array). Few members keep the zip's directory short: a pod's
overview reads only `summary.json` of each host, its report only
`report.json`, a run's history only `points.json`; the zip's CRCs catch a
corrupt member. The file name hashes the profile's real path and
the analysis version; the identity member is checked before anything else is
read, so a touched profile rewrites its entry.

The folder may be shared between TensorBoards and workers, so an entry is
read as hostile input: only a regular file of bounded size, with the zip
directory this module writes and uncompressed members, is read, and what it
holds must have the shape the views expect. Anything else is a miss, logged
once, and the entry is rewritten. Entries are written to a temporary file and
renamed into place. The folder is kept under a size bound, least recently used
first out, in amortised O(1) per write: each process keeps the folder's entry sizes
and times, built by one scan and kept current through the folder's index file, which
every writer appends to (`folder_index.py`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import logging
import os
import stat
import struct
import tempfile
import threading
import time
import typing
import zipfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, Generic, TypeVar

import numpy as np

from tb_leakfinder import wire
from tb_leakfinder.errors import LeakfinderError, WorkerDiedError
from tb_leakfinder.model.history import HostPoints
from tb_leakfinder.read import files
from tb_leakfinder.read.formats import registry
from tb_leakfinder.store.codec import CodecError, Decoder, Encoder
from tb_leakfinder.store.folder_index import TEMP_PREFIX, FolderIndex
from tb_leakfinder.store.location import DEFAULT_MAX_BYTES, ENTRY_SUFFIX, default_dir, entry_path, resolved_folder
from tb_leakfinder.store.version import ENTRY_FORMAT, analysis_version
from tb_leakfinder.wire.shape import Shape, conforms

logger = logging.getLogger(__name__)

IDENTITY = "identity.json"
REPORT = "report.json"
SUMMARY = "summary.json"
POINTS = "points.json"
TREE = "tree.json"
DATA = "data.npy"
MEMBERS = (IDENTITY, REPORT, SUMMARY, POINTS, TREE, DATA)
ALIGN = 64  # each array starts at a multiple of this in the data member
MAX_DIRECTORY_BYTES = 64 << 10  # five members' directory records take a few hundred bytes
MAX_IDENTITY_BYTES = 1024
READ_BLOCK_BYTES = 16 << 20
# Not a FIFO's writer to wait for, nor a link to follow (to /dev/zero, or out of the folder).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
# The zip format's end of central directory record, and zip64's locator and record before it (APPNOTE 4.3.14-16).
_END = struct.Struct("<4sHHHHIIH")
_END64_LOCATOR = struct.Struct("<4sIQI")
_END64 = struct.Struct("<4sQHHIIQQQQ")


T = TypeVar("T")
Member = TypeVar("Member", covariant=True)


@dataclasses.dataclass(frozen=True)
class Entry(Generic[Member]):
    """What one member of a host's entry gives: its value (a host's report, its overview rows or its history's
    points, as the load that read it says), or the error its file gave and no value."""

    value: Member | None
    error: LeakfinderError | None


def max_entry_bytes() -> int:
    """The columns of the largest profile any format reads (about 1.1 times its size) and its session's HLO files,
    with room. Asked when an entry is read: the formats' limits live in their readers, which a process that reads
    only one format should not import."""
    return 3 * registry.max_file_bytes()


class UntrustedEntryError(Exception):
    """An entry that is there but is not one this module wrote for this profile."""


class DiskCache:
    """A folder of host entries, bounded by `max_bytes` (least recently used evicted)."""

    def __init__(self, folder: str, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.folder = resolved_folder(folder)
        self.max_bytes = max_bytes
        self.version = analysis_version()
        self.hits = 0
        self.writes = 0
        self.rejected: set[str] = set()  # entries found untrusted: a miss, unread, until this process rewrites them
        self.index = _folder_index(self.folder)

    @classmethod
    def for_logdir(cls, folder: str | None, max_bytes: int, logdir: str | None) -> DiskCache:
        """The cache folder, refused inside the logdir: that may be read-only, shared or on gs://."""
        cache = cls(folder or default_dir(), max_bytes)
        if logdir and files.is_local(logdir):
            real_logdir = os.path.realpath(logdir)
            real_cache = os.path.realpath(cache.folder)
            if os.path.commonpath([real_logdir, real_cache]) == real_logdir:
                raise LeakfinderError(
                    f"the cache folder {cache.folder} is inside the logdir {logdir}; choose another (the logdir is never written)"
                )
        return cache

    def path_for(self, identity: files.FileIdentity) -> str:
        return entry_path(self.folder, self.version, identity.real_path)

    # Reading -------------------------------------------------------------------------------

    def load_report(self, identity: files.FileIdentity) -> Entry[wire.HostReport] | None:
        """The host's report or its error, from the report member alone (a few KB): no arrays are read."""
        return self._load_member(identity, lambda zf: _entry(_json_member(zf, REPORT), wire.HOST_SHAPE))

    def load_overview_rows(self, identity: files.FileIdentity) -> Entry[list[wire.OverviewRow]] | None:
        """The host's overview rows or its error, from the summary member alone (a few hundred bytes)."""
        return self._load_member(identity, lambda zf: _entry(_json_member(zf, SUMMARY), wire.OVERVIEW_ROWS_SHAPE))

    def load_points(self, identity: files.FileIdentity) -> Entry[HostPoints] | None:
        """The history's points of the host or its error, from their member alone."""
        return self._load_member(identity, lambda zf: _points_entry(_json_member(zf, POINTS)))

    def _load_member(self, identity: files.FileIdentity, read: Callable[[zipfile.ZipFile], Entry[T]]) -> Entry[T] | None:
        entry = self._read(identity, read)
        if entry is not None:
            self._used(identity)
        return entry

    def load(self, identity: files.FileIdentity, result_type: type) -> Any | None:
        """The whole stored value (a `service.HostResult`, whose `check()` says whether it contradicts itself),
        or None if the entry is missing or not trusted."""

        def rebuild(zf: zipfile.ZipFile) -> Any | None:
            entry = _entry(_json_member(zf, REPORT), wire.HOST_SHAPE)
            if isinstance(entry.error, WorkerDiedError):  # a dead worker's host is analysed again
                return None
            fields = _stored_fields(result_type, _json_member(zf, TREE), zf)
            value = result_type(**fields, error=entry.error, _json=entry.value)
            value.check()
            return value

        value = self._read(identity, rebuild)
        if value is not None:
            self._used(identity)
            self.hits += 1
        return value

    def _read(self, identity: files.FileIdentity, use: Callable[[zipfile.ZipFile], T | None]) -> T | None:
        """`use` of the entry, once it is known to be this profile's; None on a miss."""
        path = self.path_for(identity)
        if path in self.rejected:
            return None
        try:
            with _open_entry(path) as zf:
                if _read_member(zf, IDENTITY) != _identity_bytes(identity, self.version):
                    return None  # another state of the profile (touched, a new HLO file): a plain miss
                return use(zf)
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - anyone who can write the folder wrote it: whatever it makes the readers raise is a miss
            self.rejected.add(path)
            why = exc.args[0] if isinstance(exc, UntrustedEntryError) else f"{type(exc).__name__}: {str(exc)[:200]}"
            logger.warning(
                "tb_leakfinder: the cache entry %s for %s cannot be used (%s); it is analysed again", path, identity.path, why
            )
            return None

    def _used(self, identity: files.FileIdentity) -> None:
        path = self.path_for(identity)
        now = time.time_ns()
        with contextlib.suppress(OSError):  # least recently used = oldest mtime; a read-only cache still serves
            os.utime(path, ns=(now, now))
            self.index.used(_name(path), now)

    # Writing -------------------------------------------------------------------------------

    def store(
        self, identity: files.FileIdentity, value: Any, report: Any, summary: Any = None, points: HostPoints | None = None
    ) -> None:
        self.store_bytes(identity, encode_entry(identity, value, report, summary, points))

    def store_bytes(self, identity: files.FileIdentity, data: bytes) -> None:
        """Write atomically (temporary file, then rename), then evict past the size bound.

        A cache folder that cannot be written is not an error: the analysis is served anyway.
        """
        path = self.path_for(identity)
        try:
            os.makedirs(self.folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=ENTRY_SUFFIX, dir=self.folder)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    st = os.fstat(f.fileno())  # its size and mtime, which the rename keeps
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return
        self.rejected.discard(path)
        self.writes += 1
        self.index.written(_name(path), st.st_size, st.st_mtime_ns, self.max_bytes)

    def evict(self) -> None:
        """Scan the folder afresh and remove least recently used entries past `max_bytes`."""
        self.index.evict(self.max_bytes)

    @property
    def estimate(self) -> int:
        """The folder's entry bytes as this process knows them."""
        return self.index.total


_INDEXES: dict[str, FolderIndex] = {}
_INDEXES_LOCK = threading.Lock()


def _folder_index(folder: str) -> FolderIndex:
    """The process's one index of `folder`, shared by every DiskCache of it (a precompute worker makes one per host)."""
    with _INDEXES_LOCK:
        index = _INDEXES.get(folder)
        if index is None:
            index = _INDEXES[folder] = FolderIndex(folder, ENTRY_SUFFIX)
        return index


def _name(path: str) -> str:
    """An entry's name in the index: its file name without the suffix."""
    return os.path.basename(path)[: -len(ENTRY_SUFFIX)]


def encode_entry(
    identity: files.FileIdentity, value: Any, report: Any, summary: Any = None, points: HostPoints | None = None
) -> bytes:
    """An entry's bytes: `value` is an `engine.HostResult`, `report` its report JSON, `summary` its overview
    rows and `points` what the history takes of it (all None for an error)."""
    error = value.error
    meta: dict[str, Any] = {"report": report, "error": None}
    tree: dict[str, Any] = {}
    data = np.zeros(0, np.uint8)
    if error is not None:
        meta["error"] = {"message": error.message, "status": error.status, "transient": isinstance(error, WorkerDiedError)}
    else:
        encoder = Encoder()
        fields = {f: encoder.encode(getattr(value, f)) for f in _stored_names(type(value))}
        layout, data = _pack(encoder.arrays)
        tree = {"fields": fields, "layout": layout}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(IDENTITY, _identity_bytes(identity, analysis_version()))
        zf.writestr(REPORT, _json_bytes(meta))
        zf.writestr(SUMMARY, _json_bytes({**meta, "report": summary}))
        zf.writestr(POINTS, _json_bytes({**meta, "report": None if points is None else Encoder().encode(points)}))
        zf.writestr(TREE, _json_bytes(tree))
        with zf.open(DATA, "w", force_zip64=True) as f:
            np.lib.format.write_array(f, data, version=(1, 0), allow_pickle=False)
    return buffer.getvalue()


def _pack(arrays: Mapping[str, np.ndarray]) -> tuple[dict[str, Any], np.ndarray]:
    """Every array's bytes in one buffer, each aligned; the layout says where: key -> [offset, dtype, shape], or for
    an integer array stored narrower, [offset, stored dtype, shape, dtype, base] (see `_narrow`)."""
    layout: dict[str, Any] = {}
    stored: dict[str, np.ndarray] = {}
    offset = 0
    for key, array in arrays.items():
        narrow = _narrow(array)
        if narrow is None:
            stored[key] = array
            layout[key] = [offset, array.dtype.str, list(array.shape)]
        else:
            stored[key], base = narrow
            layout[key] = [offset, stored[key].dtype.str if stored[key].size else CONSTANT, list(array.shape)]
            layout[key] += [array.dtype.str, base]
        offset += -(-stored[key].nbytes // ALIGN) * ALIGN
    data = np.zeros(offset, np.uint8)
    for key, array in stored.items():
        start = layout[key][0]
        data[start : start + array.nbytes] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    return layout, data


# The model's and the analyses' integer columns are 64-bit, most of them for their largest values only: one
# allocator's index, small table indexes, byte counts under 4 GiB, addresses within one address space. Each is stored
# as its distance from its smallest value, in the narrowest unsigned type that holds them (none at all when they are
# equal), which takes an entry of small events from ~1.4 to ~0.6 times its profile's columns.
CONSTANT = "const"
_NARROWER = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32))
_NARROW_MIN_ITEMS = 64


def _narrow(array: np.ndarray) -> tuple[np.ndarray, int] | None:
    """An integer array as (distances from its smallest value, in the narrowest type that holds them; no items at
    all for equal values, and that value); None when that is not narrower."""
    if array.dtype.kind not in "iu" or array.size < _NARROW_MIN_ITEMS:
        return None
    low, high = int(array.min()), int(array.max())
    if low == high:
        return np.zeros(0, np.uint8), low
    for kind in _NARROWER:
        if kind.itemsize < array.dtype.itemsize and high - low <= np.iinfo(kind).max:
            # In the array's own type: high - low fits in it, and in `kind`.
            return (array - array.dtype.type(low)).astype(kind), low
    return None


def _unpack(data: np.ndarray, layout: Any) -> dict[str, np.ndarray]:
    """Views into `data` (a copy for an array stored narrower), every one checked to lie inside it and hold plain
    numbers."""
    if not isinstance(layout, dict):
        raise CodecError("the layout is not an object")
    arrays = {}
    for key, item in layout.items():
        if not (isinstance(item, list) and len(item) in (3, 5) and isinstance(item[0], int) and isinstance(item[2], list)):
            raise CodecError(f"array {key!r}: bad layout {str(item)[:80]}")
        offset, dtype_str, shape = item[:3]
        if not all(isinstance(n, int) and n >= 0 for n in [offset, *shape]):
            raise CodecError(f"array {key!r}: bad layout {str(item)[:80]}")
        count = int(np.prod(shape, dtype=object))  # exact: a product past int64 must not wrap into range
        if len(item) == 5:
            arrays[key] = _widen(key, data, item, count)
            continue
        dtype = np.dtype(str(dtype_str))
        if dtype.kind not in "biufc":
            raise CodecError(f"array {key!r}: bad layout {str(item)[:80]}")
        arrays[key] = _inside(key, data, offset, count * dtype.itemsize).view(dtype).reshape(shape)
    return arrays


def _widen(key: str, data: np.ndarray, item: list[Any], count: int) -> np.ndarray:
    """An array `_narrow` stored (`item` its layout), in its own type again."""
    offset, stored, shape, kind, base = item
    dtype = np.dtype(str(kind))
    if dtype.kind not in "iu" or not isinstance(base, int) or not np.iinfo(dtype).min <= base <= np.iinfo(dtype).max:
        raise CodecError(f"array {key!r}: bad narrowed layout {kind!r}, {str(base)[:40]}")
    if stored == CONSTANT:
        return np.full(shape, base, dtype)
    narrow = np.dtype(str(stored))
    if narrow not in _NARROWER:
        raise CodecError(f"array {key!r}: stored as {narrow}")
    values = _inside(key, data, offset, count * narrow.itemsize).view(narrow).reshape(shape)
    widened: np.ndarray = values.astype(dtype) + dtype.type(base)  # wraps as its type's numbers do: checked later
    return widened


def _inside(key: str, data: np.ndarray, offset: int, nbytes: int) -> np.ndarray:
    if offset + nbytes > data.shape[0] or offset % ALIGN:
        raise CodecError(f"array {key!r} lies outside the data member")
    return data[offset : offset + nbytes]


def _identity_bytes(identity: files.FileIdentity, version: str) -> bytes:
    """What an entry is valid for: this analysis version, of the profile in this state (a hash: fixed size)."""
    state: list[Any] = [identity.real_path, identity.size, identity.mtime_ns, list(identity.companions)]
    if identity.recordings is not None:  # the file recorded beside it, read with it: rewritten, the entry is stale
        state.append(list(identity.recordings))
    digest = hashlib.sha256(json.dumps(state).encode()).hexdigest()
    return _json_bytes({"format": ENTRY_FORMAT, "version": version, "file": digest})


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


@contextlib.contextmanager
def _open_entry(path: str) -> Iterator[zipfile.ZipFile]:
    """The entry at `path` as a zip, once it is a regular file of bounded size with the directory `encode_entry` writes.

    FileNotFoundError when there is none; UntrustedEntryError (or the zip reader's error) when it is not one.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symlink; ENXIO: a socket
        raise UntrustedEntryError(f"cannot be opened as a file: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedEntryError("not a regular file")
        if st.st_size > (bound := max_entry_bytes()):
            raise UntrustedEntryError(f"{st.st_size} bytes, over the {bound}-byte bound of an entry")
        _check_directory(f, st.st_size)
        with zipfile.ZipFile(f) as zf:
            if sorted(zf.namelist()) != sorted(MEMBERS):
                raise UntrustedEntryError(f"members {zf.namelist()[:8]}")
            for info in zf.infolist():
                # Stored members are read as they lie in the file: none can inflate past it.
                if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                    raise UntrustedEntryError(f"{info.filename} is compressed")
                if info.header_offset + info.file_size > st.st_size:
                    raise UntrustedEntryError(f"{info.filename} declares {info.file_size} bytes, past the file's end")
            yield zf


def _check_directory(f: BinaryIO, size: int) -> None:
    """The zip's end record names a directory of the five members, a few hundred bytes: the zip reader
    reads and parses whatever directory an end record declares."""
    if size < _END.size:
        raise UntrustedEntryError("too short for a zip")
    f.seek(size - _END.size)
    signature, _, _, _, count, directory, _, comment = _END.unpack(f.read(_END.size))
    if signature != b"PK\x05\x06" or comment or count != len(MEMBERS) or directory > MAX_DIRECTORY_BYTES:
        raise UntrustedEntryError("not the zip directory of an entry")
    locator_at = size - _END.size - _END64_LOCATOR.size
    if locator_at < _END64.size:
        return
    f.seek(locator_at)
    signature, _, record_at, _ = _END64_LOCATOR.unpack(f.read(_END64_LOCATOR.size))
    if signature != b"PK\x06\x07":
        return
    # Python's zip reader takes the zip64 record just before the locator, others where the locator says: both must agree.
    if record_at != locator_at - _END64.size:
        raise UntrustedEntryError("a zip64 directory record out of place")
    f.seek(record_at)
    signature, _, _, _, _, _, _, count64, directory64, _ = _END64.unpack(f.read(_END64.size))
    if signature != b"PK\x06\x06" or count64 != len(MEMBERS) or directory64 > MAX_DIRECTORY_BYTES:
        raise UntrustedEntryError("not the zip64 directory of an entry")


def _read_member(zf: zipfile.ZipFile, name: str) -> bytes:
    """A small member whole (the zip checks its CRC); the identity's is refused past its bound unread."""
    if name == IDENTITY and zf.getinfo(name).file_size > MAX_IDENTITY_BYTES:
        raise UntrustedEntryError(f"a {zf.getinfo(name).file_size}-byte identity")
    return zf.read(name)


def _json_member(zf: zipfile.ZipFile, name: str) -> Any:
    return json.loads(_read_member(zf, name))  # nested past the recursion limit: RecursionError, a miss


def _entry(meta: Any, shape: Shape) -> Entry[Any]:
    """The JSON (of `shape`, which vouches for its type) or the error a member holds."""
    error, body = _error_or_body(meta)
    if error is not None:
        return Entry(None, error)
    if not conforms(body, shape):
        raise UntrustedEntryError("the report lacks a field the views read, or holds one of another kind")
    return Entry(body, None)


def _points_entry(meta: Any) -> Entry[HostPoints]:
    """The HostPoints or the error the points member holds; the codec checks every value against its type."""
    error, body = _error_or_body(meta)
    return Entry(None, error) if error is not None else Entry(Decoder({}).decode(body, HostPoints), None)


def _error_or_body(meta: Any) -> tuple[LeakfinderError | None, Any]:
    """A member's error (None when it has none) and its value."""
    if not isinstance(meta, dict):
        raise UntrustedEntryError("the report member is not an object")
    error, body = meta.get("error"), meta.get("report")
    if error is None:
        return None, body
    if not (isinstance(error, dict) and isinstance(error.get("message"), str) and error.get("status") in range(400, 600)):
        raise UntrustedEntryError("a malformed error")
    cls = WorkerDiedError if error.get("transient") else LeakfinderError
    return cls(error["message"], status=error["status"]), body


def _stored_names(result_type: type) -> list[str]:
    """Every field of the result but its error and its private ones (its report JSON, its points), which are made
    from the others and held in members of their own."""
    return [f.name for f in dataclasses.fields(result_type) if f.name != "error" and not f.name.startswith("_")]


def _stored_fields(result_type: type, tree: Any, zf: zipfile.ZipFile) -> dict[str, Any]:
    names = _stored_names(result_type)
    if not isinstance(tree, dict):
        raise CodecError("the tree member is not an object")
    if not tree:  # an error entry: nothing but the error
        required = [f for f in dataclasses.fields(result_type) if f.default is f.default_factory is dataclasses.MISSING]
        return {f.name: None for f in required if f.name in names}
    arrays = _unpack(_read_data(zf), tree.get("layout"))
    tree = tree.get("fields")
    if not isinstance(tree, dict) or set(tree) != set(names):
        raise CodecError(f"stored fields differ from {names}")
    decoder = Decoder(arrays)
    hints = typing.get_type_hints(result_type)
    return {name: decoder.decode(tree[name], hints[name]) for name in names}


def _read_data(zf: zipfile.ZipFile) -> np.ndarray:
    """The data member's bytes, once its .npy header says what `encode_entry` writes: bytes, exactly as many as follow."""
    size = zf.getinfo(DATA).file_size
    with zf.open(DATA) as f:
        if np.lib.format.read_magic(f) != (1, 0):
            raise UntrustedEntryError("the data member is not a version 1.0 .npy")
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        count = size - f.tell()
        if dtype != np.uint8 or fortran or shape != (count,):
            raise UntrustedEntryError(f"the data member declares {shape} of {dtype} where {count} bytes follow")
        data = np.empty(count, np.uint8)
        filled = 0
        while filled < count:
            block = f.read(min(READ_BLOCK_BYTES, count - filled))
            if not block:
                raise UntrustedEntryError("the data member ends early")
            data[filled : filled + len(block)] = np.frombuffer(block, np.uint8)
            filled += len(block)
        if f.read(1):  # at its end, which checks its CRC
            raise UntrustedEntryError("the data member goes on past its header's size")
    return data
