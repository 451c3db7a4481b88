"""The holder finder: when a window closes, the references that keep its never-freed buffers alive.

Its never-freed buffers come from the window's profile, read back and paired as the report pairs them
(never_freed.py); JAX on CPU, whose profiles record no memory events, has them from its live arrays instead: those
alive when the window ends that were not when it began. The walk (walk.py) then reaches the objects that own them
from the program's names; each buffer's holder is the container on its path from which the buffers hang one by one
(the list they were appended to, the ModuleList that gained a module per step), or, for a buffer kept alone, the
object that owns it; inside an autograd graph, the graph itself (`total.grad_fn`). See docs/recordings.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import pathlib
import sys
import time
import tracemalloc
import types
import weakref
from collections.abc import Set as AbstractSet
from typing import Any

from tb_leakfinder.analyses.words import count_of
from tb_leakfinder.capture.holders import matchers
from tb_leakfinder.capture.holders.never_freed import NeverFreedBuffer, never_freed
from tb_leakfinder.capture.holders.walk import (
    ATTR,
    AUTOGRAD,
    BASE,
    CLASS_ATTR,
    CLOSURE,
    DEFAULT,
    GENERATOR_LOCAL,
    GRAD,
    GRAD_FN,
    ITEM,
    KEY,
    MEMBER,
    MODULE_BUFFER,
    NEXT_FUNCTION,
    REFERENT,
    ROOT_GLOBAL,
    ROOT_LOCAL,
    SAVED,
    SUBMODULE,
    Walk,
    roots,
    type_name,
    where,
)
from tb_leakfinder.capture.recorder import Section, Window
from tb_leakfinder.model.recordings import ADDRESS, COMPLETE, FAILED, MAX_ADDRESSES, PARTIAL, SHAPE

TIME_LIMIT_S = 2.0
MAX_OBJECTS = 5_000_000
MAX_HOLDERS = 64  # the largest, by bytes
# The holder's kind (model/recordings.HOLDER_KINDS) by the last step of its path.
_KINDS = {
    ROOT_LOCAL: "frame_local",
    ROOT_GLOBAL: "global",
    ATTR: "attribute",
    GRAD: "attribute",
    BASE: "attribute",
    REFERENT: "attribute",
    CLASS_ATTR: "class_attribute",
    ITEM: "list",
    MEMBER: "list",
    KEY: "dict_entry",
    SUBMODULE: "module",
    MODULE_BUFFER: "buffer",
    GRAD_FN: "autograd_graph",
    NEXT_FUNCTION: "autograd_graph",
    SAVED: "autograd_graph",
    DEFAULT: "default_argument",
    CLOSURE: "closure",
    GENERATOR_LOCAL: "frame_local",
}


class HolderFinder:
    """The `holders` companion recorder. `time_limit_s` and `max_objects` bound the walk: past either, what it found
    is written with status `partial`. `by_address=False` matches every buffer by shape and dtype, the fallback for
    those no address matches (as on a device whose objects give none)."""

    name = "holders"

    def __init__(
        self,
        framework: str,
        module: types.ModuleType,
        time_limit_s: float = TIME_LIMIT_S,
        max_objects: int = MAX_OBJECTS,
        by_address: bool = True,
    ) -> None:
        self.framework = framework
        self.by_address = by_address
        self.module = module
        self.time_limit_s = time_limit_s
        self.max_objects = max_objects
        self._matcher = matchers.matcher(framework, module)
        self._live_at_start: set[int] = set()
        # The framework's immutable objects (EagerTensors, JAX arrays) alive when the window began, by id: none owns a
        # buffer the window made, whatever its shape.
        self._before: dict[int, weakref.ref[Any]] = {}

    def available(self) -> bool:
        return self._matcher is not None

    def start(self, directory: pathlib.Path) -> None:
        if isinstance(self._matcher, matchers.JaxMatcher):
            arrays = self.module.live_arrays()
            self._live_at_start = {p for array in arrays for p in matchers.buffer_pointers(array)}
            self._before = _refs(arrays)
        elif isinstance(self._matcher, matchers.TensorflowMatcher) and (
            not self.by_address or self.module.config.list_logical_devices("GPU")
        ):
            # Only where the match by shape is likely: finding them costs a pass over every object.
            self._before = _refs(self._matcher.live_tensors())

    def step(self, step_num: int) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()

    def stop(self) -> None:
        return None

    def section(self, window: Window) -> Section:
        began = time.perf_counter()
        try:
            return self._section(window, began)
        except Exception as exc:  # noqa: BLE001 - never into the training loop: the file says what failed
            warning = f"the holder search failed ({type(exc).__name__}: {str(exc)[:300]})"
            value = _search(FAILED, warning, 0, time.perf_counter() - began, [], [])
            return Section(value, warning)

    def _section(self, window: Window, began: float) -> Section:
        matcher = self._matcher
        assert matcher is not None
        buffers = never_freed(window.profile, window.host)
        if not buffers and isinstance(matcher, matchers.JaxMatcher):
            buffers = self._new_arrays()
        self._live_at_start = set()
        before, self._before = self._before, {}
        by_address = {b.addr: b for b in buffers}
        targets = set(by_address) if self.by_address else set()
        walk = Walk(matcher, targets, self.max_objects, self.time_limit_s)
        if targets:
            with matcher.session():
                walk.run(roots())
        # The fallback: a second walk, of every object, for the buffers no address matched, when some object gave no
        # address (on CPU every one does, and the first walk's answer stands); see by_shape.
        pending = [b for b in buffers if b.addr not in walk.found and b.shape and b.dtype]
        signatures = frozenset((b.shape, b.dtype) for b in pending)
        if signatures and (walk.addressless or not targets) and not isinstance(matcher, matchers.TorchMatcher):
            walk = Walk(matcher, targets, self.max_objects, self.time_limit_s, signatures)
            with matcher.session():
                walk.run(roots())
        shaped, ambiguous = by_shape(walk, buffers, before)
        groups = holders(walk, by_address, shaped)
        unmatched = [b for b in buffers if b.addr not in walk.found]
        # Objects another thread changed while they were read were skipped: what lay behind them was not reached.
        status = PARTIAL if walk.stopped or walk.skipped else COMPLETE
        were = "was" if walk.skipped == 1 else "were"
        skipped = f"; {count_of(walk.skipped, 'object')} changed while read and {were} skipped" if walk.skipped else ""
        warning = walk.stopped + skipped
        records = [record for record, _ in groups]
        value = _search(status, warning.lstrip("; "), walk.visited, time.perf_counter() - began, records, unmatched)
        value["ambiguous_count"] = len(ambiguous)
        value["ambiguous_bytes"] = sum(b.bytes for b in ambiguous)
        files = _files_by_name()
        lines = {where_of(w, files) for w in {b.where for b in buffers if b.where}} | {line for _, line in groups}
        return Section(value, lines=tuple(sorted(line for line in lines if line)))

    def _new_arrays(self) -> list[NeverFreedBuffer]:
        """JAX's arrays alive now whose buffers were not when the window began (a CPU profile records none)."""
        found: dict[int, NeverFreedBuffer] = {}  # by pointer: arrays on one buffer (jax.device_put's) are one buffer
        for array in self.module.live_arrays():
            shape, dtype = matchers.array_signature(array) or ("", "")
            for pointer, size in matchers.shard_buffers(array):
                if pointer not in self._live_at_start and pointer not in found:
                    found[pointer] = NeverFreedBuffer(pointer, size, shape, dtype, "")
        return list(found.values())


def _refs(objects: list[Any]) -> dict[int, weakref.ref[Any]]:
    refs = {}
    for obj in objects:
        with contextlib.suppress(TypeError):  # a type without weak references: it stays a candidate
            refs[id(obj)] = weakref.ref(obj)
    return refs


def by_shape(
    walk: Walk, buffers: list[NeverFreedBuffer], before: dict[int, weakref.ref[Any]] | None = None
) -> tuple[set[int], list[NeverFreedBuffer]]:
    """The fallback match, by (shape, dtype) and by count: for each (shape, dtype), the never-freed buffers no address
    matched and the objects alike the walk reached whose address is not known, but those alive when the window began
    (`before`: an EagerTensor's or array's buffer is its own from its making). When the objects are no more than the
    buffers, each is taken to own one (which one is not known: they are paired in order, so that a holder's count and
    bytes are exact, not its addresses); when they outnumber the buffers, which of them are the leak's is not known,
    and none is named. Records the pairs in `walk.found`; returns the addresses matched so, and the ambiguous
    buffers."""
    pending: dict[tuple[str, str], list[NeverFreedBuffer]] = {}
    for b in buffers:
        if b.addr not in walk.found and (b.shape, b.dtype) in walk.signatures:
            pending.setdefault((b.shape, b.dtype), []).append(b)
    shaped: set[int] = set()
    ambiguous: list[NeverFreedBuffer] = []
    for signature, waiting in pending.items():
        alike = [n for n in walk.alike.get(signature, []) if not _existed(walk.objects[n], before or {})]
        if len(alike) > len(waiting):
            ambiguous.extend(waiting)
            continue
        for b, node in zip(waiting, alike, strict=False):
            walk.found[b.addr] = node
            shaped.add(b.addr)
    return shaped, ambiguous


def _search(
    status: str, warning: str, visited: int, elapsed_s: float, records: list[dict[str, Any]], unmatched: list[NeverFreedBuffer]
) -> dict[str, Any]:
    return {
        "status": status,
        "warning": warning,
        "objects_visited": visited,
        "elapsed_s": round(elapsed_s, 4),
        "unmatched_count": len(unmatched),
        "unmatched_bytes": sum(b.bytes for b in unmatched),
        "holders": records,
    }


@dataclasses.dataclass
class _Holder:
    node: int
    addresses: list[int] = dataclasses.field(default_factory=list)
    bytes: int = 0


def _existed(obj: Any, before: dict[int, weakref.ref[Any]]) -> bool:
    ref = before.get(id(obj))
    return ref is not None and ref() is obj


def holders(
    walk: Walk, by_address: dict[int, NeverFreedBuffer], shaped: AbstractSet[int] = frozenset()
) -> list[tuple[dict[str, Any], str]]:
    """Each holder's record (its JSON) and its line ("path:line", "" when not known), the largest first."""
    paths = {address: _path(walk, node) for address, node in walk.found.items()}
    branches: dict[int, set[int]] = {}
    for path in paths.values():
        for parent, child in itertools.pairwise(path):
            branches.setdefault(parent, set()).add(child)
    chosen: dict[int, _Holder] = {}
    for address, path in paths.items():
        node = _holder_node(walk, path, branches)
        holder = chosen.setdefault(node, _Holder(node))
        holder.addresses.append(address)
        holder.bytes += by_address[address].bytes
    ranked = sorted(chosen.values(), key=lambda h: (-h.bytes, h.node))[:MAX_HOLDERS]
    return [_record(walk, h, ADDRESS if shaped.isdisjoint(h.addresses) else SHAPE) for h in ranked]


def _path(walk: Walk, node: int) -> list[int]:
    """The nodes from the root to `node`."""
    path = [node]
    while walk.parent[path[-1]] >= 0:
        path.append(walk.parent[path[-1]])
    return path[::-1]


def _holder_node(walk: Walk, path: list[int], branches: dict[int, set[int]]) -> int:
    """The container on a buffer's path from which its buffers hang one by one: the deepest whose branches are at
    least half the most of any on the path (the list they were appended to, the ModuleList that gained a module per
    step, `metrics['loss_map']` rather than `metrics`; a list of small dicts rather than each dict); for a buffer kept
    alone, its owner. Inside an autograd graph, the graph's first node."""
    fan_out = [len(branches.get(node, ())) if walk.container(node) else 0 for node in path]
    most = max(fan_out)
    position = len(path) - 1
    if most >= 2:
        position = max(i for i, n in enumerate(fan_out) if n >= max(2, most / 2))
    for node in path[: position + 1]:
        if walk.edge[node] in AUTOGRAD:
            return node
    return path[position]


def _record(walk: Walk, holder: _Holder, match: str) -> tuple[dict[str, Any], str]:
    node = holder.node
    obj = walk.objects[node]
    created = _created(walk, node)
    addresses = sorted(holder.addresses)
    record = {
        "path": render(walk, node),
        "kind": _KINDS[walk.edge[node]],
        "type": type_name(type(obj)),
        "created": created,
        "addresses": addresses[:MAX_ADDRESSES],
        "count": len(addresses),
        "bytes": holder.bytes,
        "match": match,
    }
    return record, created.split(" in ")[0]


def _created(walk: Walk, node: int) -> str:
    """Where the holder was made: tracemalloc's record when it traces, else the function that owns it (a frame's
    local, a default argument, a closure cell), else ""."""
    if tracemalloc.is_tracing():
        traceback = tracemalloc.get_object_traceback(walk.objects[node])
        if traceback is not None and len(traceback):
            frame = traceback[0]
            return f"{frame.filename}:{frame.lineno}"
    root = walk.root_of.get(node)
    if root is not None:
        return root.where
    parent = walk.parent[node]
    if walk.edge[node] in (DEFAULT, CLOSURE) and type(walk.objects[parent]) is types.FunctionType:
        return where(walk.objects[parent].__code__)
    return ""


def render(walk: Walk, node: int) -> str:
    """A node's access path in the program's terms: `model.heads`, `metrics['loss_map']`, `total.grad_fn`."""
    parts = []
    while walk.parent[node] >= 0:
        parts.append(_step(walk.edge[node], walk.key[node]))
        node = walk.parent[node]
    parts.append(str(walk.key[node]))
    return "".join(reversed(parts))


def _step(edge: int, key: object) -> str:
    if edge in (SUBMODULE, MODULE_BUFFER) and type(key) is str and key.isdecimal():
        return f"[{key}]"
    if edge in (ATTR, CLASS_ATTR, SUBMODULE, MODULE_BUFFER, DEFAULT, GENERATOR_LOCAL, SAVED) and type(key) is str:
        return f".{key}"
    if edge == CLOSURE:
        return f".{key}" if type(key) is str else ".cell_contents"
    if edge == ITEM:
        return f"[{key}]"
    if edge == KEY:
        # Only a builtin key's own repr: a user key's would run its code, and may hold data.
        plain = key is None or any(type(key) is t for t in (str, int, bool, float))
        return f"[{key!r}]" if plain else f"[<{type_name(type(key))}>]"
    return {
        GRAD: ".grad",
        BASE: "._base",
        GRAD_FN: ".grad_fn",
        NEXT_FUNCTION: f".next_functions[{key}][0]",
        MEMBER: "[*]",
    }.get(edge, "[?]")


def where_of(line: str, files: dict[str, str]) -> str:
    """A profile's "train.py:42" as "path:line": the loaded file of that base name (`files`), when there is one."""
    file, _, number = line.rpartition(":")
    if not file or not number.isdecimal():
        return ""
    if os.path.isabs(file):
        return line
    found = files.get(os.path.basename(file))
    return f"{found}:{number}" if found else ""


def _files_by_name() -> dict[str, str]:
    """The program's files by base name (those of one name in two folders are left out): its modules' and the
    running frames' files."""
    files: dict[str, set[str]] = {}
    names = [getattr(m, "__file__", None) for m in list(sys.modules.values()) if type(m) is types.ModuleType]
    for frame in sys._current_frames().values():
        current: types.FrameType | None = frame
        while current is not None:
            names.append(current.f_code.co_filename)
            current = current.f_back
    for name in names:
        if type(name) is str and name.endswith(".py"):
            files.setdefault(os.path.basename(name), set()).add(os.path.abspath(name))
    return {base: paths.pop() for base, paths in files.items() if len(paths) == 1}
