"""Host analyses kept on disk, so a restarted TensorBoard or CLI answers without decoding profiles again.

One `.npz` per analysed host file (an uncompressed zip, no pickle) with four
members: `report.json` (the host's report JSON, or its error), `summary.json`
(its rows of the pod overview), `tree.json` (the analysis dataclasses as
`npz_codec` JSON, and where each array lies in `data`) and `data.npy` (every
array). Few members keep the zip's directory short: a pod's overview reads
only `summary.json` of each host, its report only `report.json`; the zip's
CRCs catch a corrupt member. The file name hashes the
profile's path and the analysis version; the profile's size and mtime are
checked against the stored ones, so a touched profile rewrites its entry.
Entries are written to a temporary file and renamed into place, so several
processes may share the folder; whatever does not read back exactly (a
truncated or corrupt zip, another version, another file) is a miss.
The folder is kept under a size bound, least recently used first out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import tempfile
import time
import typing
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.npz_codec import CodecError, Decoder, Encoder
from tb_leakfinder.read import files

FORMAT = 3
REPORT = "report.json"
SUMMARY = "summary.json"
ALIGN = 64  # each array starts at a multiple of this in the data member
SUFFIX = ".npz"
DEFAULT_MAX_BYTES = 20 << 30
STALE_TEMP_S = 3600.0  # a temporary file this old was left by a writer that died
ENV_DIR = "TB_LEAKFINDER_CACHE_DIR"
ENV_OFF = "TB_LEAKFINDER_NO_CACHE"
# Modules whose code decides what an entry holds; the views only present it.
_VERSIONED_SKIP = ("views", "webapp", "static")


def default_dir() -> str:
    """$TB_LEAKFINDER_CACHE_DIR, else tb_leakfinder under the user's cache folder ($XDG_CACHE_HOME or ~/.cache)."""
    if os.environ.get(ENV_DIR):
        return os.environ[ENV_DIR]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tb_leakfinder")


def disabled_by_env() -> bool:
    return os.environ.get(ENV_OFF, "") not in ("", "0")


_version: str | None = None


def analysis_version() -> str:
    """A hash of the code that produces entries: any change to the readers or analyses invalidates them."""
    global _version
    if _version is None:
        root = Path(__file__).resolve().parent
        digest = hashlib.sha256(f"format {FORMAT}".encode())
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.suffix in (".py", ".binpb") and rel.parts[0] not in _VERSIONED_SKIP:
                digest.update(str(rel).encode() + b"\0" + path.read_bytes())
        _version = digest.hexdigest()[:16]
    return _version


@dataclasses.dataclass
class Entry:
    """What one host's entry gives: its report JSON, or the error its file gave."""

    report: Any  # the member's JSON: a report object, or the summary's list of overview rows
    error: LeakfinderError | None


class DiskCache:
    """A folder of host entries, bounded by `max_bytes` (least recently used evicted)."""

    def __init__(self, folder: str, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.folder = os.path.abspath(os.path.expanduser(folder))
        self.max_bytes = max_bytes
        self.version = analysis_version()
        self.hits = 0
        self.writes = 0

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
        name = hashlib.sha256(f"{self.version}\0{identity.path}".encode()).hexdigest()[:40]
        return os.path.join(self.folder, name + SUFFIX)

    # Reading -------------------------------------------------------------------------------

    def load_report(self, identity: files.FileIdentity, member: str = REPORT) -> Entry | None:
        """The report member alone (a few KB), or the summary's (`member=SUMMARY`): no arrays are read."""
        with self._open(identity) as zf:
            if zf is None:
                return None
            meta = _json_member(zf, member)
            if meta is None or not self._matches(meta, identity):
                return None
            entry = _entry(meta)
            if entry is None:
                return None
        self._used(identity)
        return entry

    def load(self, identity: files.FileIdentity, result_type: type) -> Any | None:
        """The whole stored value (a `service.HostResult`), or None if the entry is missing or not trusted."""
        with self._open(identity) as zf:
            if zf is None:
                return None
            meta = _json_member(zf, REPORT)
            tree = _json_member(zf, "tree.json")
            if meta is None or tree is None or not self._matches(meta, identity):
                return None
            entry = _entry(meta)
            if entry is None or isinstance(entry.error, WorkerDiedError):  # a dead worker's host is analysed again
                return None
            try:
                fields = _stored_fields(result_type, tree, zf)
            except (CodecError, KeyError, TypeError, ValueError, OSError, zipfile.BadZipFile, EOFError):
                return None
        self._used(identity)
        self.hits += 1
        return result_type(**fields, error=entry.error, _json=entry.report)

    @contextlib.contextmanager
    def _open(self, identity: files.FileIdentity) -> typing.Iterator[Any]:
        try:
            zf = zipfile.ZipFile(self.path_for(identity))
        except (OSError, ValueError, zipfile.BadZipFile, EOFError):
            yield None
            return
        try:
            yield zf
        finally:
            zf.close()

    def _matches(self, meta: dict[str, Any], identity: files.FileIdentity) -> bool:
        return meta.get("format") == FORMAT and meta.get("version") == self.version and meta.get("file") == _file_json(identity)

    def _used(self, identity: files.FileIdentity) -> None:
        with contextlib.suppress(OSError):  # least recently used = oldest mtime; a read-only cache still serves
            os.utime(self.path_for(identity))

    # Writing -------------------------------------------------------------------------------

    def store(self, identity: files.FileIdentity, value: Any, report: Any, summary: Any = None) -> None:
        self.store_bytes(identity, encode_entry(identity, value, report, summary))

    def store_bytes(self, identity: files.FileIdentity, data: bytes) -> None:
        """Write atomically (temporary file, then rename), then evict past the size bound.

        A cache folder that cannot be written is not an error: the analysis is served anyway.
        """
        try:
            os.makedirs(self.folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=self.folder)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, self.path_for(identity))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return
        self.writes += 1
        self.evict(keep=self.path_for(identity))

    def evict(self, keep: str | None = None) -> None:
        """Remove least recently used entries past `max_bytes`, and temporary files of dead writers."""
        now = time.time()
        entries: list[tuple[float, int, str]] = []
        try:
            scan = list(os.scandir(self.folder))
        except OSError:
            return
        for item in scan:
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if item.name.startswith(".tmp-"):
                if now - st.st_mtime > STALE_TEMP_S:
                    with contextlib.suppress(OSError):
                        os.unlink(item.path)
            elif item.name.endswith(SUFFIX) and item.is_file(follow_symlinks=False):
                entries.append((st.st_mtime, st.st_size, item.path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(OSError):  # another process may have evicted it already
                os.unlink(path)
            total -= size


def encode_entry(identity: files.FileIdentity, value: Any, report: Any, summary: Any = None) -> bytes:
    """An entry's bytes: `value` is a `service.HostResult`, `report` its report JSON and `summary` its
    overview rows (both None for an error)."""
    error = value.error
    meta = {"format": FORMAT, "version": analysis_version(), "file": _file_json(identity), "report": report, "error": None}
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
        zf.writestr(REPORT, _json_bytes(meta))
        zf.writestr(SUMMARY, _json_bytes({**meta, "report": summary}))
        zf.writestr("tree.json", _json_bytes(tree))
        with zf.open("data.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, data, allow_pickle=False)
    return buffer.getvalue()


def _pack(arrays: Mapping[str, np.ndarray]) -> tuple[dict[str, Any], np.ndarray]:
    """Every array's bytes in one buffer, each aligned; the layout says where: key -> [offset, dtype, shape]."""
    layout: dict[str, Any] = {}
    offset = 0
    for key, array in arrays.items():
        layout[key] = [offset, array.dtype.str, list(array.shape)]
        offset += -(-array.nbytes // ALIGN) * ALIGN
    data = np.zeros(offset, np.uint8)
    for key, array in arrays.items():
        start = layout[key][0]
        data[start : start + array.nbytes] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    return layout, data


def _unpack(data: np.ndarray, layout: Any) -> dict[str, np.ndarray]:
    """Views into `data` (no copy), every one checked to lie inside it and hold plain numbers."""
    if not isinstance(layout, dict) or data.dtype != np.uint8 or data.ndim != 1:
        raise CodecError("the data member or its layout is malformed")
    arrays = {}
    for key, item in layout.items():
        offset, dtype_str, shape = item
        dtype = np.dtype(str(dtype_str))
        if dtype.kind not in "biufc" or not all(isinstance(n, int) and n >= 0 for n in [offset, *shape]):
            raise CodecError(f"array {key!r}: bad layout {item!r}")
        count = int(np.prod(shape, dtype=np.int64))
        end = offset + count * dtype.itemsize
        if end > data.shape[0] or offset % ALIGN:
            raise CodecError(f"array {key!r} lies outside the data member")
        arrays[key] = data[offset:end].view(dtype).reshape(shape)
    return arrays


class WorkerDiedError(LeakfinderError):
    """The process analysing a host died (killed, out of memory): a re-run tries that host again."""


def _file_json(identity: files.FileIdentity) -> list[Any]:
    return [identity.path, identity.size, identity.mtime_ns, list(identity.companions)]


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _json_member(zf: zipfile.ZipFile, name: str) -> Any:
    try:
        return json.loads(zf.read(name))  # the zip checks the member's CRC
    except (KeyError, ValueError, OSError, zipfile.BadZipFile, EOFError, UnicodeDecodeError):
        return None


def _entry(meta: dict[str, Any]) -> Entry | None:
    error, report = meta.get("error"), meta.get("report")
    if error is not None:
        if not (isinstance(error, dict) and isinstance(error.get("message"), str) and isinstance(error.get("status"), int)):
            return None
        cls = WorkerDiedError if error.get("transient") else LeakfinderError
        return Entry(None, cls(error["message"], status=error["status"]))
    if not isinstance(report, (dict, list)):
        return None
    return Entry(report, None)


def _stored_names(result_type: type) -> list[str]:
    """Every field of the result but its error and its report JSON, which the report member holds."""
    return [f.name for f in dataclasses.fields(result_type) if f.name not in ("error", "_json")]


def _stored_fields(result_type: type, tree: Any, zf: zipfile.ZipFile) -> dict[str, Any]:
    names = _stored_names(result_type)
    if not isinstance(tree, dict):
        raise CodecError("the tree member is not an object")
    if not tree:  # an error entry: nothing but the error
        required = [f for f in dataclasses.fields(result_type) if f.default is f.default_factory is dataclasses.MISSING]
        return {f.name: None for f in required if f.name in names}
    with zf.open("data.npy") as f:
        data = np.lib.format.read_array(f, allow_pickle=False)
    arrays = _unpack(data, tree.get("layout"))
    tree = tree.get("fields")
    if not isinstance(tree, dict) or set(tree) != set(names):
        raise CodecError(f"stored fields differ from {names}")
    decoder = Decoder(arrays)
    hints = typing.get_type_hints(result_type)
    return {name: decoder.decode(tree[name], hints[name]) for name in names}
