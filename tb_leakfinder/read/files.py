"""File access through TensorBoard's gfile, so gs://, s3:// and fsspec logdirs work.

Local paths go straight to `os`: loading gfile costs about a second on a cold
start, which would dominate the analysis of a local profile.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import posixpath
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from tensorboard.compat import tf

from tb_leakfinder.errors import LeakfinderError

# A remote file is read in blocks of this size: one block, not the whole file, is held twice.
REMOTE_BLOCK_BYTES = 16 << 20
# A file read as a stream comes in blocks of this size, and its gzip members inflate into blocks of at most this.
STREAM_BLOCK_BYTES = 1 << 20
# Off, read_private copies a local file too (see there).
ALLOW_MAP = True
GZIP_MAGIC = b"\x1f\x8b"


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


def _cannot_read(path: str, exc: BaseException) -> LeakfinderError:
    return LeakfinderError(f"{path}: cannot read the file ({exc})", source=path)


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
        raise LeakfinderError(
            f"{path}: the file is {size} bytes, over the {limit}-byte limit for one analysis",
            source=path,
        )
    return size


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The whole file; `limit` refuses files larger than that many bytes."""
    _size_within(path, limit)
    if is_local(path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise _cannot_read(path, exc) from exc
    try:
        with tf.io.gfile.GFile(path, "rb") as remote:
            return bytes(remote.read())
    except (OSError, tf.errors.OpError) as exc:
        raise _cannot_read(path, exc) from exc


def read_head(path: str, size: int) -> bytes:
    """At most the first `size` bytes of a file: b"" when it cannot be read (a sniff, not a read)."""
    try:
        if is_local(path):
            with open(path, "rb") as f:
                return f.read(size)
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
    blocks into anonymous memory. A mapped file truncated while it is read kills the process (SIGBUS) when a
    page past its new end is touched: profiles are written once, and `ALLOW_MAP` off copies instead. The memory
    goes on exit; `limit` is as read_bytes'.
    """
    size = _size_within(path, limit)
    mapped = _map_local(path, limit) if ALLOW_MAP and is_local(path) else None
    if mapped is not None:
        try:
            with memoryview(mapped) as data:
                yield data
        finally:
            mapped.close()
        return
    memory = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE)  # an empty mapping cannot be made
    _huge_pages(memory)
    try:
        with memoryview(memory) as whole, whole[: _read_into(path, whole[:size])] as data:
            yield data
    finally:
        memory.close()


def _map_local(path: str, limit: int | None) -> mmap.mmap | None:
    """A local file mapped copy-on-write, at the size it has once open (within `limit`); None for an empty one.
    Only a regular file is mapped: a FIFO or a device is refused, and opening does not wait for a FIFO's writer."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _cannot_read(path, exc) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LeakfinderError(f"{path}: not a regular file", source=path)
        if limit is not None and st.st_size > limit:
            raise LeakfinderError(
                f"{path}: the file is {st.st_size} bytes, over the {limit}-byte limit for one analysis", source=path
            )
        if not st.st_size:
            return None
        # Not MAP_POPULATE: mapping every page up front cost more CPU than the scan's faults (benchmarks/RESULTS.md).
        return mmap.mmap(fd, st.st_size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError as exc:
        raise _cannot_read(path, exc) from exc
    finally:
        os.close(fd)


def _huge_pages(memory: mmap.mmap) -> None:
    """Filled front to back, so one page fault per 2 MiB where the system offers transparent huge pages."""
    if hasattr(mmap, "MADV_HUGEPAGE"):
        with contextlib.suppress(OSError):  # a kernel without them: small pages
            memory.madvise(mmap.MADV_HUGEPAGE)


def _read_into(path: str, view: memoryview) -> int:
    """Bytes read into `view` (and released): fewer than its length if the file got shorter meanwhile."""
    filled = 0
    try:
        with view:
            if not is_local(path):
                with tf.io.gfile.GFile(path, "rb") as remote:
                    while filled < len(view) and (block := remote.read(min(REMOTE_BLOCK_BYTES, len(view) - filled))):
                        view[filled : filled + len(block)] = block
                        filled += len(block)
                return filled
            with open(path, "rb", buffering=0) as f:
                while filled < len(view):
                    with view[filled:] as rest:
                        n = f.readinto(rest)
                    if not n:
                        break
                    filled += n
    except (OSError, tf.errors.OpError) as exc:
        raise _cannot_read(path, exc) from exc
    return filled


def read_blocks(path: str, block_bytes: int = STREAM_BLOCK_BYTES) -> Iterator[bytes]:
    """A file's bytes in blocks of at most `block_bytes`, read as they are asked for (gfile for a remote one)."""
    if is_local(path):
        # Apart from the remote case: naming tf.errors in an except clause loads TensorFlow (seconds, and half a
        # GB), and a reader that stops early closes this generator through that clause.
        try:
            with open(path, "rb") as f:
                while block := f.read(block_bytes):
                    yield block
        except OSError as exc:
            raise _cannot_read(path, exc) from exc
        return
    try:
        with tf.io.gfile.GFile(path, "rb") as remote:
            while block := remote.read(block_bytes):
                yield bytes(block)
    except (OSError, tf.errors.OpError) as exc:
        raise _cannot_read(path, exc) from exc


def gunzip_blocks(
    blocks: Iterable[bytes], path: str, limit: int, refuse: Callable[[str, object], LeakfinderError]
) -> Iterator[bytes]:
    """The bytes of the gzip members in `blocks`, inflated a block at a time: more than `limit` of them in all are
    refused before they are held (a gzip bomb stops there), as is anything but zero padding after the last member.
    Errors are `refuse`'s: the format's own words for a file it cannot read."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total = 0
    padded = False  # some writers pad the file with zeros after its last member
    try:
        for data in blocks:
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
        raise refuse(path, "the gzip data is truncated")
