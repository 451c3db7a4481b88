"""Loading a PyTorch memory snapshot's pickle without running anything it holds.

`torch.cuda.memory._dump_snapshot` pickles a dict of plain builtins (dicts,
lists, tuples, strings, numbers, None). A pickle from someone else can name any
importable callable and have it called while it loads (`os.system`, `exec`):
the unpickler here refuses every class and every persistent id, so a snapshot
that needs one is not a snapshot, and nothing in the file is ever called. What
a hostile or truncated file makes the unpickler raise becomes the project's
error naming the file. A pickle's memo lets a small file hold one object many
times over; the reader bounds what it walks, not this module.

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


def _refuse_bytearray(unpickler: pickle.Unpickler) -> None:
    assert isinstance(unpickler, _BuiltinsOnly)  # installed in its dispatch only
    raise not_readable(unpickler.path, "it holds a bytearray, which a snapshot never does: refused")


class _BuiltinsOnly(pickle._Unpickler):
    """An unpickler that builds only what pickle's own opcodes build: it imports and calls nothing."""

    dispatch: ClassVar[dict[int, Callable[[pickle.Unpickler], None]]] = {
        **pickle._Unpickler.dispatch,
        pickle.BYTEARRAY8[0]: _refuse_bytearray,
    }

    def __init__(self, data: bytes, path: str) -> None:
        super().__init__(io.BytesIO(data))
        self.path = path

    def find_class(self, module: str, name: str) -> NoReturn:
        # The names come from the file: shown as text of bounded length, never looked up.
        wanted = f"{module}.{name}"[:200]
        raise not_readable(self.path, f"it needs the class or function {wanted!r}, and a snapshot holds none: refused")

    def persistent_load(self, pid: Any) -> NoReturn:
        raise not_readable(self.path, "it refers to a persistent object, which a snapshot never does: refused")


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
