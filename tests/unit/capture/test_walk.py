"""The holder finder's walk on plain Python objects, with a matcher whose buffers are `Buffer` objects: the access
path and kind of each holder, the program's hostile objects (every method a walk could call raises, and says so),
a list that contains itself, suspended generators, and the walk's bounds.

The walk on real PyTorch, TensorFlow and JAX captures is tests/integration/test_holders.py.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import sys
import threading
import tracemalloc
from typing import Any, ClassVar

import pytest

from tb_leakfinder.capture.holders import finder
from tb_leakfinder.capture.holders.never_freed import NeverFreedBuffer
from tb_leakfinder.capture.holders.walk import MATCHER_PLANS, Walk, derives, roots

_addresses = itertools.count(0x7000_0000, 0x1000)
CALLED: list[str] = []  # every method of a hostile object that something called


class Buffer:
    """A never-freed buffer's owner, as a framework's tensor is."""

    __slots__ = ("addr",)

    def __init__(self) -> None:
        self.addr = next(_addresses)


class BufferMatcher:
    def session(self) -> contextlib.AbstractContextManager[object]:
        return contextlib.nullcontext()

    def plan(self, cls: type) -> int | None:
        return MATCHER_PLANS if derives(cls, Buffer) else None

    def addresses(self, obj: Any, plan: int) -> list[int]:
        return [Buffer.addr.__get__(obj)]  # type: ignore[attr-defined]

    def children(self, obj: Any, plan: int, walk: Walk) -> list[Any]:
        return []

    def container(self, cls: type, plan: int) -> bool:
        return False


def addresses(*groups: Any) -> list[int]:
    return [Buffer.addr.__get__(b) for group in groups for b in group]  # type: ignore[attr-defined]


def search(targets: list[int], max_objects: int = 5_000_000, time_limit_s: float = 60.0) -> tuple[Walk, dict]:
    """The holders of the buffers at `targets`, walked from this process's frames and the program's modules (no
    frame holds the buffers themselves but the program's): path -> record."""
    by_address = {a: NeverFreedBuffer(a, 100, "", "", "") for a in targets}
    walk = Walk(BufferMatcher(), set(by_address), max_objects, time_limit_s)
    walk.run(roots())
    return walk, {record["path"]: record for record, _ in finder.holders(walk, by_address)}


def check(holders: dict, path: str, kind: str, type_name: str, count: int) -> None:
    record = holders[path]
    assert (record["kind"], record["type"], record["count"], record["bytes"]) == (kind, type_name, count, 100 * count)


# The program's own state, as a training script keeps it (this module is one of the program's: not a library's).
GLOBAL_HISTORY: list[Buffer] = []


class Model:
    cache: ClassVar[list[Buffer]] = []  # a class attribute that every instance appends to

    def __init__(self) -> None:
        self.layers: list[Buffer] = []
        self.metrics: dict[str, list[Buffer]] = {"loss_map": []}


def memo(step: int, _memo: dict[int, Buffer] = {}) -> Buffer:  # noqa: B006 - the mutable default under test
    _memo[step] = Buffer()
    return _memo[step]


def make_counter():
    seen: list[Buffer] = []

    def count() -> None:
        seen.append(Buffer())

    return count


def test_each_holder_gets_its_path_and_kind():
    model = Model()
    counter = make_counter()
    kept = []
    for step in range(6):
        model.layers.append(Buffer())
        model.metrics["loss_map"].append(Buffer())
        Model.cache.append(Buffer())
        GLOBAL_HISTORY.append(Buffer())
        kept.append(Buffer())
        model.metrics[f"step{step}"] = [Buffer()]  # one buffer per key: the dict is what grows
        memo(step)
        counter()
    last = Buffer()
    steps = [v for k, v in model.metrics.items() if k.startswith("step")]
    lists = [model.layers, model.metrics["loss_map"], Model.cache, GLOBAL_HISTORY, kept, [last], *steps]
    targets = addresses(*lists, memo.__defaults__[0].values(), counter.__closure__[0].cell_contents)
    del steps, lists
    walk, holders = search(targets)
    assert not walk.stopped
    check(holders, "model.layers", "attribute", "list", 6)
    check(holders, "model.metrics['loss_map']", "dict_entry", "list", 6)
    check(holders, "model.metrics", "attribute", "dict", 6)
    check(holders, "Model.cache", "class_attribute", "list", 6)
    check(holders, "GLOBAL_HISTORY", "global", "list", 6)
    check(holders, "kept", "frame_local", "list", 6)
    check(holders, "memo._memo", "default_argument", "dict", 6)
    check(holders, "counter.seen", "closure", "list", 6)
    check(holders, "last", "frame_local", "Buffer", 1)
    code = test_each_holder_gets_its_path_and_kind.__code__
    assert holders["kept"]["created"] == f"{code.co_filename}:{code.co_firstlineno} in {code.co_name}"
    assert holders["memo._memo"]["created"].startswith(f"{__file__}:{memo.__code__.co_firstlineno} in memo")
    assert holders["Model.cache"]["created"] == ""
    assert holders["kept"]["addresses"] == sorted(addresses(kept))
    Model.cache.clear()
    GLOBAL_HISTORY.clear()


def test_a_holder_is_created_where_tracemalloc_saw_it_made():
    tracemalloc.start()
    try:
        made_at = sys._getframe().f_lineno + 1
        kept = collections.deque([Buffer(), Buffer()])  # a list, a dict come from free lists, which it does not see
        _, holders = search(addresses(kept))
    finally:
        tracemalloc.stop()
    assert holders["kept"]["created"] == f"{__file__}:{made_at}"


def loader(ready: threading.Event, done: threading.Event, found: list[int]) -> None:
    prefetched = [Buffer() for _ in range(3)]  # a local of another thread's running function
    found += addresses(prefetched)
    ready.set()
    done.wait(60)


def test_another_threads_running_frames_are_roots():
    ready, done, found = threading.Event(), threading.Event(), []
    thread = threading.Thread(target=loader, args=(ready, done, found))
    thread.start()
    try:
        ready.wait(60)
        _, holders = search(list(found))
    finally:
        done.set()
        thread.join()
    check(holders, "prefetched", "frame_local", "list", 3)
    assert holders["prefetched"]["created"] == f"{__file__}:{loader.__code__.co_firstlineno} in loader"


def suspended(count: int):
    held = [Buffer() for _ in range(count)]
    yield len(held)
    yield 0


def test_a_suspended_generators_locals_and_a_list_that_contains_itself():
    loop: list[Any] = []
    loop.append(loop)
    loop.append([Buffer() for _ in range(3)])
    generator = suspended(4)
    next(generator)
    walk, holders = search(addresses(loop[1], generator.gi_frame.f_locals["held"]))
    check(holders, "loop[1]", "list", "list", 3)
    check(holders, "generator.held", "frame_local", "list", 4)
    assert not walk.stopped


class HostileMeta(type):
    """A metaclass whose every method a walk could call raises: a class's own hash, equality, attributes."""

    def __eq__(cls, other: object) -> bool:
        CALLED.append("metaclass __eq__")
        raise AssertionError("metaclass __eq__")

    def __hash__(cls) -> int:
        CALLED.append("metaclass __hash__")
        raise AssertionError("metaclass __hash__")

    def __instancecheck__(cls, obj: object) -> bool:
        CALLED.append("__instancecheck__")
        raise AssertionError("__instancecheck__")

    def __subclasscheck__(cls, sub: type) -> bool:
        CALLED.append("__subclasscheck__")
        raise AssertionError("__subclasscheck__")

    @property
    def __mro__(cls) -> tuple[type, ...]:  # type: ignore[override]
        CALLED.append("metaclass __mro__")
        raise AssertionError("metaclass __mro__")


def _raises(name: str):
    def method(self: object, *args: object, **kwargs: object) -> Any:
        CALLED.append(name)
        raise AssertionError(name)

    return method


ARMED: list[bool] = []  # empty while the test builds its objects: a dict's key is hashed once, to be stored


def _hash(self: object) -> int:
    if ARMED:
        CALLED.append("__hash__")
        raise AssertionError("__hash__")
    return id(self)


HOSTILE = {
    name: _raises(name)
    for name in (
        "__getattr__",
        "__getattribute__",
        "__setattr__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__hash__",
        "__repr__",
        "__str__",
        "__len__",
        "__iter__",
        "__contains__",
        "__getitem__",
        "__bool__",
        "__sizeof__",
        "__dir__",
        "__reduce__",
        "__format__",
    )
}
HOSTILE["__hash__"] = _hash
HOSTILE["__class__"] = property(_raises("__class__ property"))
HOSTILE["value"] = property(_raises("a property"))


def hostile(base: type, name: str) -> type:
    return HostileMeta(name, (base,), dict(HOSTILE))


Hostile = hostile(object, "Hostile")
HostileList = hostile(list, "HostileList")
HostileDict = hostile(dict, "HostileDict")


def test_the_walk_runs_none_of_the_programs_code():
    CALLED.clear()
    owner = Hostile()
    object.__setattr__(owner, "buffers", [Buffer() for _ in range(5)])  # its own __setattr__ raises
    items = HostileList(Buffer() for _ in range(4))
    table = HostileDict()
    dict.__setitem__(table, Hostile(), [Buffer() for _ in range(3)])  # a key whose hash would raise
    crowd = [Hostile() for _ in range(1000)]
    ARMED.append(True)
    (value,) = dict.values(table)
    targets = addresses(object.__getattribute__(owner, "buffers"), list.__iter__(items), value)
    del value
    _, holders = search(targets)
    check(holders, "owner.buffers", "attribute", "list", 5)
    check(holders, "items", "frame_local", "HostileList", 4)
    check(holders, "table[<Hostile>]", "dict_entry", "list", 3)
    everything, _ = search([1])  # a buffer nowhere: every object reachable is read, the crowd's among them
    assert not everything.stopped and everything.visited > len(crowd)
    assert CALLED == []


@pytest.mark.slow
def test_the_walk_is_bounded_in_objects_and_time():
    small = [[[i] for i in range(1000)] for _ in range(1000)]  # a million small objects, read before `kept`'s items
    kept = [Buffer() for _ in range(3)]
    deep = [[kept]]
    del kept
    walk, holders = search(addresses(deep[0][0]), max_objects=10_000)
    # Checked as each object is read: the last one read may add its own (at most 1000 here) past the bound.
    assert walk.stopped == f"the walk stopped after {walk.visited} objects (max_objects=10000)"
    assert 10_000 <= walk.visited <= 11_000 and holders == {}
    walk, holders = search(addresses(deep[0][0]), time_limit_s=0.0)
    assert walk.stopped.startswith("the walk stopped after 0 s (time_limit_s)")
    whole, holders = search(addresses(deep[0][0]))
    assert not whole.stopped and whole.visited > 1_000_000
    check(holders, "deep[0][0]", "list", "list", 3)
    assert len(small) == 1000


@pytest.mark.slow
def test_a_container_of_a_million_is_read_after_the_rest():
    crowd = [[i] for i in range(1_000_000)]
    kept = [Buffer() for _ in range(3)]
    walk, holders = search(addresses(kept))
    check(holders, "kept", "frame_local", "list", 3)
    assert walk.visited < 10_000 < len(crowd)


def test_a_self_containing_list_reached_from_a_global_is_walked_once(monkeypatch):
    loop: list[Any] = []
    loop.append(loop)
    monkeypatch.setattr(sys.modules[__name__], "GLOBAL_LOOP", loop, raising=False)
    walk, _ = search(addresses([Buffer()]))
    ids = [id(o) for o in walk.objects]
    assert len(ids) == len(set(ids)) and ids.count(id(loop)) == 1


@pytest.fixture(autouse=True)
def _clear_called():
    CALLED.clear()
    yield
    ARMED.clear()
