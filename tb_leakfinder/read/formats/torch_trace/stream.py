"""A trace's JSON text read as a stream: the tokenizer under the Kineto decoding of `reader.py`.

The file's blocks are gunzipped as they come when it is gzipped and decoded as UTF-8 (`trace_text`), then read
front to back through a window of text (`_Text`), so a trace of gigabytes is never held whole, as bytes or as
Python objects: each value is decoded whole by the json module, the window refilled when a value runs past its
end. The top-level object's keys may come in any order (`parse_trace`); the elements of `traceEvents` go to a
callback one at a time, or, given a chunk callback, as runs of whole elements of up to CHUNK_CHARS of text that
it reads at once (`chunks.py`: the window's str and the run's bounds in it, no copy of the run); a run it does not
take is then read one element at a time. Every other
top-level value is parsed whole and only the keys asked for are kept. This module knows JSON and the trace's
top-level layout, not what an event means.
"""

from __future__ import annotations

import codecs
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import files

# The text (decompressed) of a trace may be this long: a gzip bomb stops there. One event may be this long, any
# other top-level value that long; a longer one is refused rather than held.
MAX_TRACE_BYTES = 16 << 30
MAX_EVENT_CHARS = 16 << 20
MAX_TOP_VALUE_CHARS = 16 << 20
EVENTS_KEY = "traceEvents"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_CLOSER = re.compile(r"[\]},:]")
_NEXT = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")
_COMMA_NEXT = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
# A run of events decoded at once (`chunks.py`) is at most this long, far below MAX_EVENT_CHARS, so no event in it
# is one the reader refuses for its length; a run ends at one of the last MAX_CLOSERS closing braces in it.
CHUNK_CHARS = 1 << 20
MAX_CLOSERS = 64
# The window is refilled for this many runs at a time.
RUNS_AHEAD = 4
# What takes a run of elements: the window's text and where the run starts and ends in it (not a copy of it).
Chunk = Callable[[str, int, int], int]


def not_readable(path: str, detail: object) -> LeakfinderError:
    """The error for a file that is not a PyTorch profiler trace, or not a whole one."""
    return LeakfinderError(f"{path}: not a readable PyTorch profiler trace ({detail})", source=path)


class Counted:
    """A file's blocks passed on as they are read, with how many bytes that has been so far."""

    def __init__(self, blocks: Iterable[bytes]) -> None:
        self.blocks = blocks
        self.bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        for block in self.blocks:
            self.bytes += len(block)
            yield block


def trace_text(blocks: Iterable[bytes], path: str) -> Iterator[str]:
    """A trace's text from its file's blocks, gunzipped as they come when it is gzipped; at most MAX_TRACE_BYTES."""
    source = iter(blocks)
    first = b""
    while len(first) < len(files.GZIP_MAGIC) and (block := next(source, None)) is not None:
        first += block
    whole = itertools.chain((first,), source)
    raw = files.gunzip_blocks(whole, path, MAX_TRACE_BYTES, not_readable) if first[:2] == files.GZIP_MAGIC else whole
    # Decoded as json.loads decodes bytes: UTF-8 with or without a byte order mark.
    utf8 = codecs.getincrementaldecoder("utf-8-sig")("surrogatepass")
    total = 0
    try:
        for data in raw:
            total += len(data)
            if total > MAX_TRACE_BYTES:
                raise not_readable(path, f"it is more than {MAX_TRACE_BYTES} bytes of text")
            yield utf8.decode(data)
        yield utf8.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise not_readable(path, f"bad JSON: not UTF-8 text ({exc.reason} in its first {total} bytes)") from exc


class _Text:
    """A trace's JSON text read front to back through a window: each value decoded whole, the window refilled when
    a value runs past its end, so only the value being read and a block or two of text are held."""

    def __init__(self, blocks: Iterable[bytes], path: str) -> None:
        self.path = path
        self.blocks = trace_text(blocks, path)
        self.text = ""
        self.pos = 0
        self.dropped = 0  # characters before the window: positions in messages count from the file's start
        self.ended = False

    def _fill(self, want: int) -> bool:
        """Reads on until the window holds `want` characters past `pos`; False when the text had none left (or the
        window held them already)."""
        pending = len(self.text) - self.pos
        if pending >= want:
            return False
        parts = [self.text[self.pos :]]
        while pending < want and not self.ended:
            block = next(self.blocks, None)
            if block is None:
                self.ended = True
                break
            parts.append(block)
            pending += len(block)
        if len(parts) == 1:
            return False
        # Joined once: a window of many blocks is copied once, not once per block.
        self.dropped += self.pos
        self.text = "".join(parts)
        self.pos = 0
        return any(parts[1:])

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the text), not consumed."""
        while True:
            self.pos = _WHITESPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._fill(1) and self.ended:
                return ""

    def expect(self, wanted: str, after: str, consume: bool = True) -> str:
        """The next character, one of `wanted` (consumed unless told not to); refuses the file otherwise."""
        found = self.peek()
        if found and found in wanted:
            self.pos += consume
            return found
        if not found:
            raise not_readable(self.path, files.truncated(None, detail=f"the JSON ends after {after}"))
        where = self.dropped + self.pos
        raise not_readable(self.path, f"bad JSON at character {where}: expected {' or '.join(map(repr, wanted))} after {after}")

    def value(self, what: str, limit: int) -> Any:
        """The JSON value at the next character, decoded whole; `what` names it in messages."""
        self.peek()
        while True:
            try:
                found, end = _DECODER.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                # Where nothing that closes a value follows the error, the value may go on past the window's end.
                cut = exc.msg.startswith("Unterminated string") or not _CLOSER.search(self.text, exc.pos)
                if self.ended or not cut:
                    if cut:
                        ends = f"the JSON ends inside {what}"
                        raise not_readable(self.path, files.truncated(None, detail=ends)) from exc
                    where = self.dropped + exc.pos
                    raise not_readable(self.path, f"bad JSON at character {where}, in {what}: {exc.msg}") from exc
            except RecursionError as exc:
                raise not_readable(self.path, f"{what} is nested too deeply") from exc
            except ValueError as exc:  # a number of more digits than int() converts
                raise not_readable(self.path, f"{what}: {str(exc)[:120]}") from exc
            except MemoryError as exc:
                raise not_readable(self.path, f"out of memory decoding {what}") from exc
            else:
                # A value ending where the window does (a number, say) may go on in the next block.
                if end < len(self.text) or self.ended:
                    self.pos = end
                    return found
            pending = len(self.text) - self.pos
            if pending > limit:
                raise not_readable(self.path, f"{what} is longer than {limit} characters")
            self._fill(2 * pending + 1)  # doubling: a long value is decoded a few times, not once per block

    def array(self, what: str, limit: int, chunk: Chunk | None = None) -> Iterator[tuple[int, Any]]:
        """The elements of the JSON array at the next character, one at a time with their index. With `chunk`, runs
        of whole elements go to it as their text instead: it takes them and says how many there were, or says -1
        and leaves them to be read one at a time."""
        self.expect("[", f"the key of {what}")
        if self.peek() == "]":
            self.pos += 1
            return
        k = 0
        one_by_one_until = -1  # the elements before this position in the file (from a refused run) go one at a time
        while True:
            if chunk is not None and self.dropped + self.pos >= one_by_one_until:
                run = self._run(min(CHUNK_CHARS, limit))
                if run is not None:
                    run_end, run_next = run
                    count = chunk(self.text, self.pos, run_end)
                    if count >= 0:
                        self.pos = run_next
                        k += count
                        continue
                    one_by_one_until = self.dropped + run_end
            # Most elements and the comma after them lie inside the window: decoded without the checks of `value`.
            try:
                found, end = _DECODER.raw_decode(self.text, self.pos)
                after = _NEXT.match(self.text, end)
            except (ValueError, RecursionError, MemoryError):  # the checked path says what is wrong
                after = None
            if after is not None and after.end() < len(self.text):
                self.pos = after.end()
                yield k, found
                if after.group(1) == "]":
                    return
            else:
                yield k, self.value(f"{what}[{k}]", limit)
                if self.expect(",]", f"{what}[{k}]") == "]":
                    return
                self.peek()  # where the next element starts, as the fast path wants it
            k += 1

    def _run(self, most: int) -> tuple[int, int] | None:
        """Where a run of elements from `pos` may end (after a closing brace followed by a comma) and where the
        element after it starts; None when the window has no such place. A brace inside an element may be taken
        for one: the run's text is then no list of elements, which the chunk's decoder finds. At most `most`
        characters are read ahead for it, so an element longer than the limit is still refused unread."""
        if len(self.text) - self.pos < most:
            # Read ahead several runs at once: the window's text left over is copied at each refill.
            self._fill(RUNS_AHEAD * most)
        brace = self.text.rfind("}", self.pos, self.pos + most)
        for _ in range(MAX_CLOSERS):
            if brace <= self.pos:
                return None
            comma = _COMMA_NEXT.match(self.text, brace + 1)
            if comma is not None and comma.end() < len(self.text):
                return brace + 1, comma.end()
            brace = self.text.rfind("}", self.pos, brace)
        return None


def parse_trace(
    blocks: Iterable[bytes],
    path: str,
    keep: tuple[str, ...],
    on_event: Callable[[int, Any], None],
    on_chunk: Chunk | None = None,
) -> dict[str, Any]:
    """Streams a trace's `traceEvents` through `on_event` (index, event) and returns its top-level values named in `keep`.
    With `on_chunk`, runs of events go to it as text (see `_Text.array`), the others to `on_event`.

    The keys of the top-level object may come in any order.
    """
    text = _Text(blocks, path)
    first = text.peek()
    if not first:
        raise not_readable(path, "the file is empty")
    if first != "{":
        raise not_readable(path, f'no "{EVENTS_KEY}" list at its top: the JSON is not an object')
    text.pos += 1
    kept: dict[str, Any] = {}
    events_seen = False
    after = "the top-level object's opening brace"
    closed = text.peek() == "}"
    if closed:
        text.pos += 1
    while not closed:
        text.expect('"', after, consume=False)
        key = text.value("a top-level key", MAX_TOP_VALUE_CHARS)
        text.expect(":", f"the top-level key {key!r}")
        if key == EVENTS_KEY:
            if text.peek() != "[" or events_seen:
                raise not_readable(path, f'no "{EVENTS_KEY}" list at its top, or more than one')
            for k, event in text.array(EVENTS_KEY, MAX_EVENT_CHARS, on_chunk):
                on_event(k, event)
            events_seen = True
        else:
            found = text.value(f"the top-level {key!r}", MAX_TOP_VALUE_CHARS)
            if key in keep:
                kept[key] = found
        after = f"the top-level value of {key!r}"
        closed = text.expect(",}", after) == "}"
    if text.peek():
        raise not_readable(path, f"bad JSON at character {text.dropped + text.pos}: more after the top-level object")
    if not events_seen:
        raise not_readable(path, f'no "{EVENTS_KEY}" list at its top')
    return kept
