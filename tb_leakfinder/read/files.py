"""File access through TensorBoard's gfile, so gs://, s3:// and fsspec logdirs work.

Local paths go straight to `os`: loading gfile costs about a second on a cold
start, which would dominate the analysis of a local profile.

Every local read, a reader's and a sniff's alike, goes through `open_regular`: opened without blocking
(a FIFO with no writer would hold `open()` forever), then only a regular file is read (a device such as
`/dev/zero` never ends, and stat says it is empty), and never more than the format's limit plus one byte
whatever stat said, so a file growing while read cannot outrun it.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import posixpath
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tb_leakfinder import compiled
from tb_leakfinder.errors import LeakfinderError

# A remote file is read in blocks of this size: one block, not the whole file, is held twice.
REMOTE_BLOCK_BYTES = 16 << 20
# A file read as a stream comes in blocks of this size, and its gzip members inflate into blocks of at most this.
STREAM_BLOCK_BYTES = 1 << 20
# Off, read_private copies a local file too (see there): TensorBoard's plugin turns it off (plugin_loader.py).
ALLOW_MAP = True
GZIP_MAGIC = b"\x1f\x8b"
# Mapped files read zeros where they were cut short, instead of dying of SIGBUS (see read_private); None: not built.
_map_guard = compiled.built("tb_leakfinder.read._map_guard")


class _RemoteFiles:
    """TensorBoard's `tf` (its gfile and errors), imported at the first remote path: local ones load no TensorBoard."""

    def __getattr__(self, name: str) -> Any:
        from tensorboard.compat import tf as gfile_tf

        return getattr(gfile_tf, name)


tf = _RemoteFiles()


def is_local(path: str) -> bool:
    return "://" not in path


def join(base: str, *parts: str) -> str:
    return os.path.join(base, *parts) if is_local(base) else posixpath.join(base, *parts)


def basename(path: str) -> str:
    return os.path.basename(path.rstrip("/")) if is_local(path) else posixpath.basename(path.rstrip("/"))


def dirname(path: str) -> str:
    return os.path.dirname(path.rstrip("/")) if is_local(path) else posixpath.dirname(path.rstrip("/"))


def isdir(path: str) -> bool:
    return os.path.isdir(path) if is_local(path) else bool(tf.io.gfile.isdir(path))


def exists(path: str) -> bool:
    return os.path.exists(path) if is_local(path) else bool(tf.io.gfile.exists(path))


def listdir(path: str) -> list[str]:
    try:
        names = os.listdir(path) if is_local(path) else tf.io.gfile.listdir(path)
        return sorted(str(name).rstrip("/") for name in names)
    except Exception:  # noqa: BLE001 - an unreadable folder is skipped, as TensorBoard does
        return []


def listdir_and_subdirs(path: str) -> tuple[list[str], list[str]]:
    """(every name, the names of folders) in `path`, sorted; [] for an unreadable folder.

    A local folder is read with scandir, whose entries know their type without a
    stat each (only symlinks are followed with one): a logdir that links to a
    large tree is walked many times faster than with an isdir() per name.
    """
    if not is_local(path):
        names = listdir(path)
        return names, [name for name in names if isdir(join(path, name))]
    try:
        with os.scandir(path) as entries:
            typed = [(entry.name, _is_dir(entry)) for entry in entries]
    except OSError:
        return [], []
    typed.sort()
    return [name for name, _ in typed], [name for name, folder in typed if folder]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks, as isdir() does
    except OSError:
        return False


@dataclass(frozen=True)
class FileIdentity:
    """What decides whether a cached analysis of a file is still valid."""

    path: str  # as given: what messages name
    # What names the disk cache's entry: a relative path names another file in another working folder.
    real_path: str
    size: int
    mtime_ns: int
    # Names of the session's other files the analysis reads (XProf's `.hlo_proto.pb`, written when the
    # Profile tab first opens the session): one appearing makes the analysis stale too.
    companions: tuple[str, ...] = ()
    # The file recorded beside it (docs/recordings.md), read with it: its path, size and mtime_ns; None without one.
    recordings: tuple[str, int, int] | None = None


def _cannot_read(path: str, exc: BaseException) -> LeakfinderError:
    return LeakfinderError(f"{path}: cannot read the file ({exc})", source=path)


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((kind for test, kind in _FILE_KINDS if test(mode)), "not a regular file")


@contextlib.contextmanager
def open_regular(path: str) -> Iterator[io.FileIO]:
    """A local file opened for reading once it is a regular one (or a link to one: a logdir may link its runs' files
    from elsewhere); else the error naming it, at once: a FIFO, device, socket or folder is never read from."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:  # ENXIO: a socket; ELOOP: a link cycle
        raise _cannot_read(path, exc) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise LeakfinderError(f"{path}: {_kind(mode)}, not a regular file: it is not read", source=path)
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    with f:
        yield f


def _read_at_most(f: io.FileIO, limit: int) -> bytes:
    """Up to `limit` bytes: a file may have grown since it was stat'ed, so the size is never trusted."""
    chunks = []
    left = limit
    while left > 0 and (chunk := f.read(min(left, REMOTE_BLOCK_BYTES))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _over_limit(path: str, limit: int, size: int | None = None) -> LeakfinderError:
    found = "" if size is None else f" {size} bytes,"
    return LeakfinderError(f"{path}: the file is{found} over the {limit}-byte limit for one analysis", source=path)


def real_path(path: str) -> str:
    """A local path made absolute with its folder's symlinks resolved; a remote URL as it is.

    The file's own link is kept: its analysis reads the HLO files of the folder it sits in, not of its target's.
    """
    if not is_local(path):
        return path
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(folder), name)


def identity(path: str) -> FileIdentity:
    if is_local(path):
        try:
            st = os.stat(path)
        except OSError as exc:
            raise _cannot_read(path, exc) from exc
        return FileIdentity(path, real_path(path), st.st_size, st.st_mtime_ns)
    # What gfile raises: its OpError (NotFoundError, PermissionDeniedError...) or the OSError of a filesystem.
    try:
        remote = tf.io.gfile.stat(path)
    except (OSError, tf.errors.OpError) as exc:
        raise _cannot_read(path, exc) from exc
    return FileIdentity(path, path, int(remote.length), int(getattr(remote, "mtime_nsec", 0) or 0))


def _size_within(path: str, limit: int | None, size: int | None = None) -> int:
    """The file's size (`size` when known), refused when over `limit`."""
    size = identity(path).size if size is None else size
    if limit is not None and size > limit:
        raise _over_limit(path, limit, size)
    return size


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The whole file; one of more than `limit` bytes is refused (without one, the size it had when asked is read)."""
    size = _size_within(path, limit)
    wanted = size if limit is None else limit + 1
    if is_local(path):
        try:
            with open_regular(path) as f:
                data = _read_at_most(f, wanted)
        except OSError as exc:
            raise _cannot_read(path, exc) from exc
    else:
        try:
            with tf.io.gfile.GFile(path, "rb") as remote:
                data = bytes(remote.read(wanted))
        except (OSError, tf.errors.OpError) as exc:
            raise _cannot_read(path, exc) from exc
    if limit is not None and len(data) > limit:
        raise _over_limit(path, limit)
    return data


def read_head(path: str, size: int) -> bytes:
    """At most the first `size` bytes of a file: b"" when it cannot be read or is no regular file (a sniff)."""
    if is_local(path):
        try:
            with open_regular(path) as f:
                return _read_at_most(f, size)
        except (OSError, LeakfinderError):
            return b""
    try:
        with tf.io.gfile.GFile(path, "rb") as remote:
            return bytes(remote.read(size))
    except (OSError, tf.errors.OpError):
        return b""


@contextlib.contextmanager
def read_private(path: str, limit: int | None = None) -> Iterator[memoryview]:
    """A file's bytes (up to the size it had when opened) in private memory the caller owns.

    The view is writable and its pages may be given back to the system (madvise) as they are used, so that
    a large profile is not held whole while it is decoded. A local regular file is mapped copy-on-write
    (MAP_PRIVATE): its pages come from the page cache, not through a copy; a remote file comes through gfile in
    blocks into anonymous memory. A file cut short while it is read (still being written, or copied over) is
    refused with the error `changed_while_read` gives, when the block leaves: a mapped page past the file's new
    end would raise SIGBUS, which the compiled guard (`_map_guard.c`) turns into zeros read and a mark; without
    the guard, or with `ALLOW_MAP` off, the file is copied instead. The memory goes on exit; `limit` is as
    read_bytes'.
    """
    if ALLOW_MAP and is_local(path) and _map_guard is not None:
        mapped = _map_local(path, limit)  # checks the limit on the open file itself
        if mapped is None:  # an empty file
            yield memoryview(bytearray())
            return
        token = _map_guard.guard(mapped)
        if token >= 0:
            try:
                with memoryview(mapped) as data:
                    try:
                        yield data
                    except Exception as exc:  # what reading zeros made the reader raise: the cut is the cause
                        if _map_guard.was_cut(token):
                            raise changed_while_read(path) from exc
                        raise
            finally:
                cut = _map_guard.release(token)  # before the mapping goes: its addresses may be reused
                mapped.close()
            if cut:
                raise changed_while_read(path)
            return
        mapped.close()  # every guard in use: copied
    size = _size_within(path, limit)
    memory = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE)  # an empty mapping cannot be made
    _huge_pages(memory)
    try:
        with memoryview(memory) as whole:
            filled = _read_into(path, whole, size)
            if filled < size:
                raise changed_while_read(path, filled)
            with whole[:size] as data:
                yield data
    finally:
        memory.close()


def changed_while_read(path: str, size: int | None = None) -> LeakfinderError:
    """The error for a file cut short while it was read: `size` bytes long at its end (now, when not given)."""
    if size is None:
        with contextlib.suppress(OSError):
            size = os.stat(path).st_size
    now = "" if size is None else f": truncated to {size} bytes"
    return LeakfinderError(f"{path}: the file changed while it was read{now}", source=path)


def _map_local(path: str, limit: int | None) -> mmap.mmap | None:
    """A local file mapped copy-on-write, at the size it has once open (within `limit`); None for an empty one.
    Opened as every read opens (`open_regular`): a FIFO, device, socket or folder is refused at once."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if limit is not None and size > limit:
            raise _over_limit(path, limit, size)
        if not size:
            return None
        try:
            # Not MAP_POPULATE: mapping every page up front cost more CPU than the scan's faults (benchmarks/RESULTS.md).
            return mmap.mmap(f.fileno(), size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as exc:
            raise _cannot_read(path, exc) from exc


def _huge_pages(memory: mmap.mmap) -> None:
    """Filled front to back, so one page fault per 2 MiB where the system offers transparent huge pages."""
    if hasattr(mmap, "MADV_HUGEPAGE"):
        with contextlib.suppress(OSError):  # a kernel without them: small pages
            memory.madvise(mmap.MADV_HUGEPAGE)


def _read_into(path: str, whole: memoryview, size: int) -> int:
    """Bytes read into the first `size` of `whole`: fewer if the file got shorter meanwhile."""
    filled = 0
    with whole[:size] as view:
        if is_local(path):
            # Apart from the remote case: an error passing an except clause that names tf.errors loads TensorFlow.
            try:
                with open_regular(path) as f:
                    while filled < len(view):
                        with view[filled:] as rest:
                            n = f.readinto(rest)
                        if not n:
                            break
                        filled += n
            except OSError as exc:
                raise _cannot_read(path, exc) from exc
            return filled
        try:
            with tf.io.gfile.GFile(path, "rb") as remote:
                while filled < len(view) and (block := remote.read(min(REMOTE_BLOCK_BYTES, len(view) - filled))):
                    view[filled : filled + len(block)] = block
                    filled += len(block)
        except (OSError, tf.errors.OpError) as exc:
            raise _cannot_read(path, exc) from exc
    return filled


def read_blocks(path: str, block_bytes: int = STREAM_BLOCK_BYTES, *, limit: int) -> Iterator[bytes]:
    """A file's bytes in blocks of at most `block_bytes`, read as they are asked for (gfile for a remote one); past
    `limit` bytes in all, the file is refused."""
    total = 0
    if is_local(path):
        # Apart from the remote case: naming tf.errors in an except clause loads TensorFlow (seconds, and half a
        # GB), and a reader that stops early closes this generator through that clause.
        try:
            with open_regular(path) as f:
                while block := f.read(block_bytes):
                    total += len(block)
                    if total > limit:
                        raise _over_limit(path, limit)
                    yield block
        except OSError as exc:
            raise _cannot_read(path, exc) from exc
        return
    try:
        with tf.io.gfile.GFile(path, "rb") as remote:
            while block := remote.read(block_bytes):
                total += len(block)
                if total > limit:
                    raise _over_limit(path, limit)
                yield bytes(block)
    except (OSError, tf.errors.OpError) as exc:
        raise _cannot_read(path, exc) from exc


# What to do about a file cut short: said after every "truncated" error.
TRUNCATED_ADVICE = "If it is still being copied or written, wait until it is whole; else capture it again."


def truncated(size: int | None, needed: int | None = None, detail: str = "") -> str:
    """The words for a file cut short: "truncated (1,024 of at least 4,096 bytes: …)", as much as the format can
    know of its size and its whole size, then what to do."""
    whole = "" if size is None else f"{size:,} of at least {needed:,} bytes" if needed else f"{size:,} bytes"
    said = ": ".join(part for part in (whole, detail) if part)
    return f"truncated{f' ({said})' if said else ''}. {TRUNCATED_ADVICE}"


def protobuf_needs(data: bytes | memoryview, limit: int) -> int | None:
    """The bytes a protobuf message needs when its top-level fields read as a prefix of a whole one whose last field
    runs past the end of `data` (a file cut short): that field's end; None when every field fits, or when a field
    is no field at all (a corrupt file, not a cut one) or would end past `limit`."""
    view = memoryview(data)
    size = len(view)
    at = 0
    while at < size:
        tag, at = _varint(view, at)
        if tag is None:
            return None if at < size else size + 1
        wire = tag & 7
        if tag >> 3 == 0 or wire in (3, 4, 6, 7):
            return None
        if wire == 0:
            value, at = _varint(view, at)
            if value is None:
                return None if at < size else size + 1
            continue
        if wire == 2:
            length, at = _varint(view, at)
            if length is None:
                return None if at < size else size + 1
            end = at + length
        else:
            end = at + (8 if wire == 1 else 4)
        if end > size:
            return end if end <= limit else None
        at = end
    return None


def _varint(view: memoryview, at: int) -> tuple[int | None, int]:
    """The varint at `at` and the position after it; None when it is longer than 10 bytes or the data ends in it."""
    value = shift = 0
    for k in range(10):
        if at + k >= len(view):
            return None, at + k
        byte = view[at + k]
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at + k + 1
    return None, at


def gunzip_blocks(
    blocks: Iterable[bytes], path: str, limit: int, refuse: Callable[[str, object], LeakfinderError]
) -> Iterator[bytes]:
    """The bytes of the gzip members in `blocks`, inflated a block at a time: more than `limit` of them in all are
    refused before they are held (a gzip bomb stops there), as is anything but zero padding after the last member.
    Errors are `refuse`'s: the format's own words for a file it cannot read."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total = 0
    compressed = 0
    padded = False  # some writers pad the file with zeros after its last member
    try:
        for data in blocks:
            compressed += len(data)
            while not padded:
                if inflater.eof and data:
                    if not data.strip(b"\0"):
                        padded = True
                        break
                    if not data.startswith(GZIP_MAGIC[: len(data)]):
                        raise refuse(path, "bytes that are not gzip data follow the profile")
                    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                out = inflater.decompress(data, STREAM_BLOCK_BYTES)
                total += len(out)
                if total > limit:
                    raise refuse(path, f"it decompresses to more than {limit} bytes")
                if out:
                    yield out
                data = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
                # A full block out may leave inflated bytes inside zlib, to be asked for even without more input.
                if not data and (inflater.eof or len(out) < STREAM_BLOCK_BYTES):
                    break
            if padded and data.strip(b"\0"):
                raise refuse(path, "bytes that are not gzip data follow the profile")
    except zlib.error as exc:
        raise refuse(path, f"corrupt gzip data: {exc}") from exc
    if not inflater.eof:
        # gzip writes its size at the end: a stream cut short cannot say how long it was.
        stops = f"its gzip stream stops before its end marker, after {total:,} bytes inflated"
        raise refuse(path, truncated(compressed, detail=stops))
