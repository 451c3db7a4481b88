"""What one process knows of a disk cache folder's entries, so that a write evicts in amortised O(1).

Each process holds, per folder, every entry's size and mtime (the least recently used entry has the oldest), their
total and a heap in mtime order. It builds them from the folder itself the first time it writes there (a scan: a
stat per entry, once per process), and learns of the other processes' writes and deletions from the folder's
index file, `.index`: a header naming this generation of the file, then one line per entry written or deleted,
its file name's 40 hex digits, appended with one `write` (O_APPEND). A line only says "look at this entry again":
its size and time are taken from a stat of the entry, never from the file, so a crafted or damaged index can
make a process stat files but never count a size it did not see or delete a file that is not an entry of the
folder. A line that is not 40 hex digits, an index too large to be read cheaply or a header of another
generation makes the process scan the folder again, and a bad index is replaced by a fresh one.

Before it deletes the oldest entry it knows, a process stats it: an entry another process has used since
(a newer mtime) or rewritten goes back into the heap with its new time, one that has gone is forgotten. A
process also scans again after as many of its own writes as there were entries at its last scan, which catches
writers that left no line (one killed between its rename and its append, or a version of the tool without the
index): amortised O(1) stats per write too. (Not by the clock: a scan a minute made a slow precompute of 10,000
hosts stat 240,000 entries.) The index is
started afresh when it holds more lines than twice the entries (and at least MIN_COMPACT_LINES); every
process then sees a new generation and scans once.
"""

from __future__ import annotations

import contextlib
import heapq
import io
import os
import re
import stat
import threading
import time

INDEX = ".index"
TEMP_PREFIX = ".tmp-"
HEADER_PREFIX = b"tb_leakfinder cache index 1 "
_HEADER = re.compile(rb"tb_leakfinder cache index 1 [0-9a-f]{32}\n")
_HEADER_BYTES = len(HEADER_PREFIX) + 33
NAME_CHARS = 40
_LINE = NAME_CHARS + 1
_NAME = re.compile(r"[0-9a-f]{40}")
_LINES = re.compile(rb"(?:[0-9a-f]{40}\n)*")
# Past this many unread bytes (about 200,000 lines), a scan of the folder is cheaper than the lines.
MAX_UNREAD_BYTES = 8 << 20
MIN_COMPACT_LINES = 4096
RESCAN_WRITES = 64  # the fewest own writes between two scans
# A write reads the index when another process appended to it since it was last read (its own line did not land
# where the last read ended), and at least every this many writes (another process may have started a new
# generation of the index, whose lines this one's appends would not see).
SYNC_WRITES = 16
STALE_TEMP_S = 3600.0  # a temporary file this old was left by a writer that died
_OK, _OTHER, _BAD = range(3)  # what reading the index found: its new lines, another generation, no index to use
# Not a FIFO's writer to wait for, nor a link to follow (to /dev/zero, or out of the folder).
_SAFE_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_OPEN_FLAGS = os.O_RDONLY | _SAFE_FLAGS
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | _SAFE_FLAGS


class FolderIndex:
    """One process's view of one cache folder's entries (`<40 hex digits><suffix>`); thread-safe."""

    def __init__(self, folder: str, suffix: str) -> None:
        self.folder = folder
        self.suffix = suffix
        self.index_path = os.path.join(folder, INDEX)
        self.total = 0
        self.entries: dict[str, tuple[int, int]] = {}  # name -> (size, mtime_ns)
        self.scans = 0
        self._heap: list[tuple[int, str]] = []  # (mtime_ns, name), stale items skipped when popped
        self._lock = threading.Lock()
        self._header: bytes | None = None  # the index's header as this process last read it
        self._offset = 0  # bytes of the index read
        self._lines = 0  # lines of the index read or appended since its header
        self._scanned = False
        self._indexed = False  # whether this process reads and appends to the index
        self._writes_since_scan = 0
        self._writes_since_sync = 0
        self._entries_at_scan = 0
        self._append_fd: int | None = None  # the index, open for appending, while its generation is the one read

    # What a cache does --------------------------------------------------------------------------------------

    def written(self, name: str, size: int, mtime_ns: int, max_bytes: int) -> None:
        """An entry this process has just written: counted, announced to the other processes, and the folder
        brought back under `max_bytes` (the entry itself is kept)."""
        with self._lock:
            if not self._scanned:
                self._scan()
            self._set(name, size, mtime_ns)
            others = self._announce(name)
            self._writes_since_scan += 1
            self._writes_since_sync += 1
            if self._writes_since_scan >= max(RESCAN_WRITES, self._entries_at_scan):
                self._scan()
            elif others or self._writes_since_sync >= SYNC_WRITES:
                self._sync()
            if self.total > max_bytes:
                self._evict(max_bytes, keep=name)
            if self._lines > max(MIN_COMPACT_LINES, 2 * len(self.entries)):
                self._start_index()
                self._scan()

    def used(self, name: str, mtime_ns: int) -> None:
        """An entry this process has just read (and set the mtime of): it becomes the most recently used."""
        with self._lock:
            known = self.entries.get(name)
            if known is not None:
                self._set(name, known[0], mtime_ns)

    def evict(self, max_bytes: int) -> None:
        """The folder scanned afresh and brought under `max_bytes`."""
        with self._lock:
            self._scan()
            self._evict(max_bytes, keep=None)

    # The entries known ----------------------------------------------------------------------------------------

    def _set(self, name: str, size: int, mtime_ns: int) -> None:
        old = self.entries.get(name)
        self.total += size - (old[0] if old else 0)
        self.entries[name] = (size, mtime_ns)
        if old is None or old[1] != mtime_ns:
            heapq.heappush(self._heap, (mtime_ns, name))
            if len(self._heap) > 2 * len(self.entries) + 64:  # stale items of entries used or rewritten since
                self._heap = [(t, n) for n, (_, t) in self.entries.items()]
                heapq.heapify(self._heap)

    def _forget(self, name: str) -> None:
        old = self.entries.pop(name, None)
        if old is not None:
            self.total -= old[0]

    def _look(self, name: str) -> os.stat_result | None:
        """The entry as it is now (counted, or forgotten when it is gone or no regular file)."""
        try:
            st = os.stat(os.path.join(self.folder, name + self.suffix), follow_symlinks=False)
        except OSError:
            self._forget(name)
            return None
        if not stat.S_ISREG(st.st_mode):
            self._forget(name)
            return None
        self._set(name, st.st_size, st.st_mtime_ns)
        return st

    def _evict(self, max_bytes: int, keep: str | None) -> None:
        """Least recently used first; each checked by a stat just before it goes."""
        kept: list[tuple[int, str]] = []
        while self.total > max_bytes and self._heap:
            mtime_ns, name = heapq.heappop(self._heap)
            known = self.entries.get(name)
            if known is None or known[1] != mtime_ns:
                continue  # stale: the entry has gone, or has a newer item
            if name == keep:
                kept.append((mtime_ns, name))
                continue
            st = self._look(name)
            if st is None or st.st_mtime_ns != mtime_ns:
                continue  # gone, or used or rewritten by another process: back in the heap at its time
            with contextlib.suppress(OSError):  # another process may have evicted it already
                os.unlink(os.path.join(self.folder, name + self.suffix))
            self._forget(name)
            self._announce(name)
        for item in kept:
            heapq.heappush(self._heap, item)

    def _scan(self) -> None:
        """The entries from the folder itself (a stat each), and the temporary files of dead writers removed; the
        index is read from its end on (what it announced is in the folder already), or started afresh when bad."""
        self._scanned = True
        self.scans += 1
        self._writes_since_scan = self._writes_since_sync = 0
        if self._adopt_index() == _BAD:
            self._start_index()
        entries: dict[str, tuple[int, int]] = {}
        now = time.time()
        try:
            items = list(os.scandir(self.folder))
        except OSError:
            items = []
        for item in items:
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            if item.name.startswith(TEMP_PREFIX):
                if now - st.st_mtime > STALE_TEMP_S:
                    with contextlib.suppress(OSError):
                        os.unlink(item.path)
                continue
            name = item.name[: -len(self.suffix)]
            if item.name.endswith(self.suffix) and _NAME.fullmatch(name) and stat.S_ISREG(st.st_mode):
                entries[name] = (st.st_size, st.st_mtime_ns)
        self.entries = entries
        self.total = sum(size for size, _ in entries.values())
        self._heap = [(t, n) for n, (_, t) in entries.items()]
        heapq.heapify(self._heap)
        self._entries_at_scan = len(entries)

    # The index file ---------------------------------------------------------------------------------------------

    def _sync(self) -> None:
        """What the other processes announced since the last read; a scan when the index cannot say (another
        generation, or too far ahead), after starting a fresh one when it is bad."""
        self._writes_since_sync = 0
        if not self._indexed:
            return  # none this process can use: its scans count for the others' writes
        status = self._read_new()
        if status == _BAD:
            self._start_index()
        if status != _OK:
            self._scan()

    def _open_index(self) -> tuple[io.FileIO, os.stat_result, bytes] | None:
        """The index open, its stat and its header; None when it is missing, no regular file or not an index."""
        try:
            fd = os.open(self.index_path, _OPEN_FLAGS)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            header = os.read(fd, _HEADER_BYTES) if stat.S_ISREG(st.st_mode) else b""
        except OSError:
            header = b""
        if _HEADER.fullmatch(header) is None:
            os.close(fd)
            return None
        return os.fdopen(fd, "rb", buffering=0), st, header

    def _adopt_index(self) -> int:
        """The index taken from its end on (a scan sees what it announced before); _BAD when there is none."""
        opened = self._open_index()
        if opened is None:
            return _BAD
        f, st, header = opened
        f.close()
        self._lines = (st.st_size - _HEADER_BYTES) // _LINE  # a line being appended is read next time
        if header != self._header:
            self._close_append()
        self._header, self._offset, self._indexed = header, _HEADER_BYTES + self._lines * _LINE, True
        return _OK

    def _read_new(self) -> int:
        """The lines appended since the last read, each entry they name looked at again."""
        opened = self._open_index()
        if opened is None:
            return _BAD
        f, st, header = opened
        with f:
            if header != self._header or st.st_size < self._offset or st.st_size - self._offset > MAX_UNREAD_BYTES:
                return _OTHER
            try:
                f.seek(self._offset)
                new = f.read(st.st_size - self._offset)
            except OSError:
                return _BAD
        whole = len(new) - len(new) % _LINE  # a line being appended is read next time
        if _LINES.fullmatch(new, 0, whole) is None:
            return _BAD
        for at in range(0, whole, _LINE):
            self._look(new[at : at + NAME_CHARS].decode())
        self._offset += whole
        self._lines += whole // _LINE
        return _OK

    def _announce(self, name: str) -> bool:
        """One line, appended in one write; whether other lines came in since the index was last read (when none
        did, the new line needs no reading back)."""
        if not self._indexed:
            return False
        line = name.encode() + b"\n"
        try:
            if self._append_fd is None:
                self._append_fd = os.open(self.index_path, _APPEND_FLAGS)
            os.write(self._append_fd, line)
            end = os.lseek(self._append_fd, 0, os.SEEK_CUR)
        except OSError:
            self._close_append()
            return False  # a read-only folder, or no index any more: the scans count for it
        if end != self._offset + len(line):
            return True
        self._offset = end
        self._lines += 1
        return False

    def _close_append(self) -> None:
        if self._append_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._append_fd)
            self._append_fd = None

    def _start_index(self) -> None:
        """A fresh index of a new generation in place of whatever is there (renamed into place: whole or absent)."""
        header = HEADER_PREFIX + os.urandom(16).hex().encode() + b"\n"
        tmp = os.path.join(self.folder, f"{TEMP_PREFIX}index-{os.getpid()}-{threading.get_ident()}")
        try:
            with open(tmp, "wb") as f:
                f.write(header)
            os.replace(tmp, self.index_path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            self._indexed = False  # the scans alone count, until one finds an index to use
            return
        self._close_append()
        self._header, self._offset, self._lines, self._indexed = header, len(header), 0, True
