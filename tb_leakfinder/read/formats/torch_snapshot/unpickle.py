"""Loading a PyTorch memory snapshot's pickle without running anything it holds.

`torch.cuda.memory._dump_snapshot` pickles a dict of plain builtins (dicts,
lists, tuples, strings, numbers, None). A pickle from someone else can name any
importable callable and have it called while it loads (`os.system`, `exec`):
the unpickler here refuses every class and every persistent id, so a snapshot
that needs one is not a snapshot, and nothing in the file is ever called. What
a hostile or truncated file makes the unpickler raise becomes the project's
error naming the file.

A pickle's memo lets two bytes list an object again, so that a small file holds
one record many times over. PyTorch shares only strings, frames (dicts of
strings and numbers) and frames lists (lists of frames) between the records of
a snapshot: a memo reference to any other container (an entry or a block,
which holds its frames list; a trace; a list of records) is refused where it
is met, before the rest of the file is unpickled, so such a file costs what
its bytes up to there cost. The reader bounds what it walks of the rest (a
record listed twice, the frames walked).

It is pickle's pure-Python unpickler (about 0.2 s a MB), not the C one: the C
unpickler's memo is an array grown to whatever index a PUT opcode names, so ten
bytes can make it allocate and clear gigabytes, where the Python one keeps a
dict. Its one loader that allocates what a length asks before reading it,
BYTEARRAY8's, is refused: a snapshot holds no bytearray.
"""

from __future__ import annotations

import io
import pickle
import struct
from collections.abc import Callable
from typing import Any, ClassVar, NoReturn

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read import files

# The first byte of a pickle of protocol 2 or later, then its protocol.
# Snapshots larger than this are refused: their builtins take several times the file's size in memory.
MAX_FILE_BYTES = 1 << 30
PROTO = 0x80
LOWEST_PROTOCOL = 2
HIGHEST_PROTOCOL = 5
# What a hostile pickle can make the C unpickler raise besides UnpicklingError: a short read (EOFError), a bad
# opcode argument or an unregistered extension code (ValueError, KeyError, IndexError), an operation on the wrong
# builtin (TypeError, AttributeError), a huge length (OverflowError, MemoryError, struct.error), deep nesting
# (RecursionError).
_UNPICKLING_ERRORS = (
    pickle.UnpicklingError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    OverflowError,
    MemoryError,
    RecursionError,
    struct.error,
)


def not_readable(path: str, detail: object) -> LeakfinderError:
    """The error for a file that is not a PyTorch memory snapshot, or not a whole one."""
    return LeakfinderError(f"{path}: not a readable PyTorch memory snapshot ({detail})", source=path)


def looks_like_pickle(head: bytes) -> bool:
    """Whether a file's first bytes open a pickle of protocol 2 to 5."""
    return len(head) >= 2 and head[0] == PROTO and LOWEST_PROTOCOL <= head[1] <= HIGHEST_PROTOCOL


_SCALARS = (str, bytes, int, float, bool, complex, type(None))


def _refuse_bytearray(unpickler: pickle.Unpickler) -> None:
    assert isinstance(unpickler, _BuiltinsOnly)  # installed in its dispatch only
    raise not_readable(unpickler.path, "it holds a bytearray, which a snapshot never does: refused")


def _flat(value: object) -> bool:
    """A frame: a dict of strings and numbers."""
    return type(value) is dict and all(isinstance(item, _SCALARS) for item in value.values())


def _shareable(value: object) -> bool:
    """What PyTorch lists more than once in a snapshot: a string or number, a frame, or a frames list."""
    if isinstance(value, _SCALARS) or _flat(value):
        return True
    return isinstance(value, (list, tuple)) and all(isinstance(item, _SCALARS) or _flat(item) for item in value)


class _Memo(dict[int, Any]):
    """The unpickler's memo, with the values a reference has found shareable (`checked`), forgotten when their index
    is written again. What a later opcode adds to a checked container is the reader's to bound."""

    def __init__(self) -> None:
        super().__init__()
        self.checked: dict[int, object] = {}

    def __setitem__(self, index: int, value: Any) -> None:
        self.checked.pop(index, None)
        super().__setitem__(index, value)


class _BuiltinsOnly(pickle._Unpickler):
    """An unpickler that builds only what pickle's own opcodes build: it imports and calls nothing."""

    dispatch: ClassVar[dict[int, Callable[[Any], None]]] = {
        **pickle._Unpickler.dispatch,
        pickle.BYTEARRAY8[0]: _refuse_bytearray,
    }

    # What pickle's unpickler sets when it loads (typeshed leaves them out).
    read: Callable[[int], bytes]
    readline: Callable[[], bytes]
    append: Callable[[object], None]

    def __init__(self, data: bytes, path: str) -> None:
        self.source = io.BytesIO(data)
        super().__init__(self.source)
        self.path = path
        self.memo: _Memo = _Memo()
        self.checked = self.memo.checked

    # A memo reference pushes again the object it names, once it is one PyTorch shares: checked at its first
    # reference, then taken from `checked` (a snapshot holds hundreds of thousands of references).
    def load_binget(self) -> None:
        index = self.read(1)[0]
        try:
            self.append(self.checked[index])
        except KeyError:
            self.check_shared(index)

    def load_long_binget(self) -> None:
        (index,) = struct.unpack("<I", self.read(4))
        try:
            self.append(self.checked[index])
        except KeyError:
            self.check_shared(index)

    def load_get(self) -> None:
        index = int(self.readline()[:-1])
        try:
            self.append(self.checked[index])
        except KeyError:
            self.check_shared(index)

    def check_shared(self, index: int) -> None:
        try:
            value = self.memo[index]
        except KeyError:
            raise pickle.UnpicklingError(f"Memo value not found at index {index}") from None
        if not _shareable(value):
            self.refuse_shared(value)
        self.checked[index] = value
        self.append(value)

    def refuse_shared(self, value: object) -> NoReturn:
        what = "a dict holding containers (a record)" if isinstance(value, dict) else f"a {type(value).__name__} of records"
        raise not_readable(
            self.path,
            f"a pickle memo reference before byte {self.source.tell()} lists {what} again: a snapshot lists each"
            " record once and shares only strings, frames and frames lists",
        )

    def find_class(self, module: str, name: str) -> NoReturn:
        # The names come from the file: shown as text of bounded length, never looked up.
        wanted = f"{module}.{name}"[:200]
        raise not_readable(self.path, f"it needs the class or function {wanted!r}, and a snapshot holds none: refused")

    def persistent_load(self, pid: Any) -> NoReturn:
        raise not_readable(self.path, "it refers to a persistent object, which a snapshot never does: refused")


_BuiltinsOnly.dispatch = {
    **_BuiltinsOnly.dispatch,
    pickle.BINGET[0]: _BuiltinsOnly.load_binget,
    pickle.LONG_BINGET[0]: _BuiltinsOnly.load_long_binget,
    pickle.GET[0]: _BuiltinsOnly.load_get,
}


def load(data: bytes, path: str) -> object:
    """The object a snapshot file's bytes pickle, built from builtins only."""
    if not data:
        raise not_readable(path, "the file is empty")
    if not looks_like_pickle(data[:2]):
        raise not_readable(path, f"not a pickle of protocol {LOWEST_PROTOCOL} to {HIGHEST_PROTOCOL}")
    unpickler = _BuiltinsOnly(data, path)
    try:
        return unpickler.load()
    except LeakfinderError:
        raise
    except _UNPICKLING_ERRORS as exc:
        # A pickle cut short runs out of bytes before its STOP opcode; its whole size is written nowhere.
        if isinstance(exc, EOFError) or "truncated" in str(exc):
            raise not_readable(path, files.truncated(len(data), detail="the pickle ends before its last opcode")) from exc
        raise not_readable(path, f"a broken pickle: {type(exc).__name__}: {str(exc)[:200]}") from exc
