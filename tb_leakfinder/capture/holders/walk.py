"""A breadth-first walk of the training process's references, from the names a user knows to the objects that own
the window's never-freed buffers, bounded in objects visited and in time, that never runs the program's code.

Roots, in order: the locals of every thread's running frames, innermost first (gc.get_referrers misses a running
frame in CPython 3.11), then the globals of the program's own modules (not the frameworks', not the standard
library's). From each object the walk follows only what it can read without calling a method of a user's class: a
dict's, list's, tuple's, set's and deque's items through the builtin types' own C methods, an instance's `__dict__`
and `__slots__` through the C descriptors of its class, a function's defaults and closure cells, a suspended
generator's frame locals, and a user class's own attributes; a framework's objects through its Matcher
(matchers.py). A type is looked up by id, never hashed; no `__eq__`, `__hash__`, `__repr__`, `__len__`, `__iter__`,
property or `__getattr__` of a user's class runs. Each object is reached once, by its shortest path from a root.
"""

from __future__ import annotations

import collections
import dataclasses
import gc
import os
import sys
import time
import types
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from tb_leakfinder.analyses.frames import FRAMEWORK_PACKAGES

# How an object was reached from its parent: its path's last step, which names the holder's kind.
ROOT_LOCAL = 0  # a running frame's local (key: name); a module-level frame's are globals
ROOT_GLOBAL = 1  # a module's global (key: name)
ATTR = 2  # an instance attribute (key: name)
CLASS_ATTR = 3  # a class's own attribute (key: name)
ITEM = 4  # a list's or tuple's element (key: index)
KEY = 5  # a dict's value (key: the dict's key, when an int or a str)
MEMBER = 6  # a set's or deque's element
SUBMODULE = 7  # an nn.Module's submodule or parameter (key: name)
MODULE_BUFFER = 8  # an nn.Module's registered buffer (key: name)
GRAD = 9  # a tensor's .grad
BASE = 10  # a view's ._base
GRAD_FN = 11  # a tensor's .grad_fn: the autograd graph begins
NEXT_FUNCTION = 12  # a graph node's next_functions[key][0]
SAVED = 13  # a graph node's saved tensor (key: the attribute, "_saved_self")
DEFAULT = 14  # a function's default argument (key: the parameter)
CLOSURE = 15  # a function's closure cell (key: the free variable)
GENERATOR_LOCAL = 16  # a suspended generator's or coroutine's local (key: name)
REFERENT = 17  # a referent of an object of C that has no names for them

AUTOGRAD = frozenset({GRAD_FN, NEXT_FUNCTION, SAVED})
_NO_KEY = object()
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_OWN_FILES = (_PACKAGE_DIR + os.sep, os.path.dirname(os.__file__) + os.sep + "contextlib.py")
_LIBRARY_DIRS = ("site-packages", "dist-packages")
_STDLIB = os.path.dirname(os.__file__) + os.sep

# Reading what a class holds through type's own descriptors: a metaclass's properties never run.
_type_mro: Any = type.__dict__["__mro__"]
_type_dict: Any = type.__dict__["__dict__"]
_type_name: Any = type.__dict__["__name__"]
_module_dict: Any = vars(types.ModuleType)["__dict__"]


def mro(cls: type) -> tuple[type, ...]:
    result: tuple[type, ...] = _type_mro.__get__(cls)
    return result


def class_dict(cls: type) -> types.MappingProxyType[str, Any]:
    result: types.MappingProxyType[str, Any] = _type_dict.__get__(cls)
    return result


def type_name(cls: type) -> str:
    name = _type_name.__get__(cls)
    return name if type(name) is str else "?"


def derives(cls: type, base: type) -> bool:
    return any(c is base for c in mro(cls))


def descriptor(cls: type, name: str) -> Any:
    """The first `name` in the class dicts of cls's MRO (the attribute lookup's, without running it), else None."""
    for c in mro(cls):
        found = class_dict(c).get(name, _NO_KEY)
        if found is not _NO_KEY:
            return found
    return None


class Matcher(Protocol):
    """A framework's objects to the walk: which own never-freed buffers, and what they lead to."""

    def plan(self, cls: type) -> int | None:
        """The matcher's own kind for objects of `cls` (its constants), None for the walk's generic handling."""
        ...

    def addresses(self, obj: Any, plan: int) -> Iterable[int]:
        """The buffer addresses an object of that plan owns (none for a container)."""
        ...

    def children(self, obj: Any, plan: int, walk: Walk) -> Iterable[tuple[int, object, Any]]:
        """(edge, key, child) of an object of that plan (`walk.instance_children` reads its attributes)."""
        ...

    def container(self, cls: type, plan: int) -> bool:
        """Whether objects of the type gather many of a kind (a ModuleList, an autograd graph's node)."""
        ...


# The walk's generic plans of a type, besides a matcher's (which are >= MATCHER_PLANS).
MATCHER_PLANS = 100
# (from 1: a plan is never falsy)
SKIP, DICT, LIST, TUPLE, SET, FROZENSET, DEQUE, INSTANCE, FUNCTION, CLASS, GENERATOR, CELL, METHOD, REFERENTS, MODULE = range(
    1, 16
)
# The builtin containers, each read through its own C iterator (a subclass's __iter__ never runs).
_BASES = ((dict, DICT), (list, LIST), (tuple, TUPLE), (set, SET), (frozenset, FROZENSET), (collections.deque, DEQUE))
_ITERATE: dict[int, Any] = {
    DICT: dict.items,
    LIST: list.__iter__,
    TUPLE: tuple.__iter__,
    SET: set.__iter__,
    FROZENSET: frozenset.__iter__,
    DEQUE: collections.deque.__iter__,
}
_CONTAINERS = frozenset({DICT, LIST, TUPLE, SET, FROZENSET, DEQUE})
# The builtin containers' own sizes (a subclass's __len__ never runs), and the size past which one is read last.
_SIZED: dict[int, Any] = {
    DICT: dict.__len__,
    LIST: list.__len__,
    TUPLE: tuple.__len__,
    SET: set.__len__,
    DEQUE: collections.deque.__len__,
}
LARGE = 10_000
_EXACT: dict[int, int] = {
    id(t): p
    for t, p in (
        *_BASES,
        (types.FunctionType, FUNCTION),
        (types.GeneratorType, GENERATOR),
        (types.CoroutineType, GENERATOR),
        (types.AsyncGeneratorType, GENERATOR),
        (types.CellType, CELL),
        (types.MethodType, METHOD),
        (types.ModuleType, MODULE),
        (type, CLASS),
        *((t, SKIP) for t in (str, bytes, bytearray, int, float, complex, bool, type(None), range, slice, memoryview)),
        *((t, SKIP) for t in (types.CodeType, types.FrameType, types.BuiltinFunctionType, types.TracebackType)),
        *((t, SKIP) for t in (types.MappingProxyType, types.WrapperDescriptorType, types.MethodDescriptorType)),
        *((t, SKIP) for t in (types.GetSetDescriptorType, types.MemberDescriptorType, property, staticmethod)),
    )
}
_FRAME_FIELD: dict[int, Any] = {
    id(types.GeneratorType): types.GeneratorType.__dict__["gi_frame"],
    id(types.CoroutineType): types.CoroutineType.__dict__["cr_frame"],
    id(types.AsyncGeneratorType): types.AsyncGeneratorType.__dict__["ag_frame"],
}
_type_flags: Any = type.__dict__["__flags__"]
_HAVE_GC = 1 << 14  # Py_TPFLAGS_HAVE_GC: objects of the type can hold references


@dataclasses.dataclass
class Root:
    edge: int  # ROOT_LOCAL or ROOT_GLOBAL
    name: str
    value: Any
    function: str  # the frame's function, or the module's name
    where: str  # "train.py:40 in train": the frame's function's first line; "" for a module's global
    file: str = ""  # the running frame's file; "" for a module's global


class Walk:
    """The walk's tree: every object reached (kept alive until the walk is dropped), its parent and how it was reached."""

    def __init__(self, matcher: Matcher, targets: set[int], max_objects: int, time_limit_s: float) -> None:
        self.matcher = matcher
        self.targets = targets
        self.max_objects = max_objects
        self.deadline = time.perf_counter() + time_limit_s
        self.time_limit_s = time_limit_s
        self.objects: list[Any] = []
        self.parent: list[int] = []
        self.edge: list[int] = []
        self.key: list[object] = []
        self.roots: list[Root] = []  # by the root's index in `objects`: root_of[index]
        self.root_of: dict[int, Root] = {}
        self.found: dict[int, int] = {}  # target address -> the node that owns it
        self._read = 0  # objects whose references were read: the clock is looked at every 1024
        self.skipped = 0  # objects whose references could not be read
        self.stopped = ""  # why the walk stopped before it reached every object it could: "" when it did not
        self._seen: set[int] = set()
        self._put_off: set[int] = set()  # the large containers read last
        self._plans: dict[int, int] = dict(_EXACT)
        self._plan_keep: list[type] = []  # the types planned, alive while their ids are keys
        self._instance: dict[int, tuple[Any, tuple[Any, ...]]] = {}
        self._user_modules = user_module_names()

    def _add(self, parent: int, edge: int, key: object, obj: Any) -> int | None:
        if id(obj) in self._seen:
            return None
        self._seen.add(id(obj))
        self.objects.append(obj)
        self.parent.append(parent)
        self.edge.append(edge)
        self.key.append(key)
        return len(self.objects) - 1

    def run(self, roots: Iterable[Root]) -> None:
        queue: collections.deque[int] = collections.deque()
        for root in roots:
            index = self._add(-1, root.edge, root.name, root.value)
            if index is not None:
                self.root_of[index] = root
                queue.append(index)
                self._match(index)
        # The loop every object goes through, its names local: a plain list's or dict's items cost a few lookups each.
        objects, parents, edges, keys, seen = self.objects, self.parent, self.edge, self.key, self._seen
        plans, plan_of, is_tracked, found = self._plans, self.plan, gc.is_tracked, self.found
        pop, push, now, add_object, add_parent, add_edge, add_key, see = (
            queue.popleft,
            queue.append,
            time.perf_counter,
            objects.append,
            parents.append,
            edges.append,
            keys.append,
            seen.add,
        )
        read, limit, wanted, deadline = self._read, self.max_objects, len(self.targets), self.deadline
        put_off, instance_fields, fields_of, plans_get = self._put_off, self._instance, self._fields, plans.get
        children: Iterable[tuple[Any, Any]]
        deferred: collections.deque[int] = collections.deque()
        try:
            while (queue or deferred) and len(found) < wanted:
                if not queue:  # the large containers put off, now that everything else was read
                    queue, deferred = deferred, queue
                    pop, push = queue.popleft, queue.append
                if len(objects) >= limit:
                    self.stopped = f"the walk stopped after {len(objects)} objects (max_objects={limit})"
                    return
                if not read & 1023 and now() > deadline:
                    self.stopped = self._timed_out()
                    return
                index = pop()
                read += 1
                obj = objects[index]
                cls = type(obj)
                plan = plans_get(id(cls)) or plan_of(cls)
                sized = _SIZED.get(plan)
                if sized is not None and sized(obj) > LARGE and index not in put_off:
                    # A container of many (a million small objects) is read after the rest: a leak's holder is rarely
                    # the largest container, and its items would otherwise come before every deeper object.
                    put_off.add(index)
                    deferred.append(index)
                    read -= 1
                    continue
                try:
                    if plan in (LIST, TUPLE):
                        edge, children = ITEM, enumerate(_ITERATE[plan](obj))
                    elif plan == DICT:
                        edge, children = KEY, dict.items(obj)
                    elif plan == INSTANCE and not (instance_fields.get(id(cls)) or fields_of(cls))[1]:
                        # An instance without __slots__, the most common: its __dict__ read as a dict is.
                        attributes = instance_fields[id(cls)][0].__get__(obj, cls)
                        if type(attributes) is not dict:
                            continue
                        edge, children = ATTR, dict.items(attributes)
                    else:
                        self._expand(index, obj, plan, queue)
                        continue
                    for key, child in children:
                        child_plan = plans_get(id(type(child))) or plan_of(type(child))
                        if child_plan == SKIP:
                            continue
                        if child_plan < MATCHER_PLANS and child_plan != CLASS and not is_tracked(child):
                            continue  # an object that can hold no other (a tuple of numbers)
                        child_id = id(child)
                        if child_id in seen:
                            continue
                        see(child_id)
                        added = len(objects)
                        add_object(child)
                        add_parent(index)
                        add_edge(edge)
                        add_key(key)
                        push(added)
                        if child_plan >= MATCHER_PLANS:
                            self._match(added)
                        elif not added & 4095 and now() > deadline:  # within a container of thousands too
                            self.stopped = self._timed_out()
                            return
                except Exception:  # noqa: BLE001 - an object that changed under the walk (another thread's dict): skipped
                    self.skipped += 1
        finally:
            self._read = read

    @property
    def visited(self) -> int:
        """The objects the walk reached (each kept alive, with its path, until the walk is dropped)."""
        return len(self.objects)

    def _timed_out(self) -> str:
        return f"the walk stopped after {self.time_limit_s:g} s (time_limit_s), {self.visited} objects visited"

    def _expand(self, index: int, obj: Any, plan: int, queue: collections.deque[int]) -> None:
        """The children of an object that is not a plain list, tuple or dict."""
        children = self.matcher.children(obj, plan, self) if plan >= MATCHER_PLANS else self._children(obj, plan)
        for edge, key, child in children:
            if child is None:
                continue
            child_plan = self.plan(type(child))
            if child_plan == SKIP or (child_plan < MATCHER_PLANS and child_plan != CLASS and not gc.is_tracked(child)):
                continue
            added = self._add(index, edge, key, child)
            if added is not None:
                queue.append(added)
                if child_plan >= MATCHER_PLANS:
                    self._match(added)

    def _match(self, index: int) -> None:
        """A framework object's buffers, matched as it is reached (not when read): a target one level down is found
        before the level's other objects are read."""
        obj = self.objects[index]
        plan = self.plan(type(obj))
        if plan >= MATCHER_PLANS:
            for address in self.matcher.addresses(obj, plan):
                if address in self.targets and address not in self.found:
                    self.found[address] = index

    def container(self, node: int) -> bool:
        """Whether a node gathers objects of a kind, as the lists, dicts and ModuleLists that leaks grow do."""
        cls = type(self.objects[node])
        plan = self.plan(cls)
        return plan in _CONTAINERS or (plan >= MATCHER_PLANS and self.matcher.container(cls, plan))

    def plan(self, cls: type) -> int:
        plan = self._plans.get(id(cls))
        if plan is None:
            plan = self._plan(cls)
            self._plans[id(cls)] = plan
            self._plan_keep.append(cls)
        return plan

    def _plan(self, cls: type) -> int:
        own = self.matcher.plan(cls)
        if own is not None:
            return own
        module = class_dict(cls).get("__module__")
        if type(module) is str and module.startswith("tb_leakfinder"):
            return SKIP  # the capture's own objects (the walk's among them)
        classes = mro(cls)
        if any(c is type for c in classes):
            return CLASS
        if any(c is types.ModuleType for c in classes):
            return MODULE
        for base, plan in _BASES:
            if any(c is base for c in classes):
                return plan
        if self._fields(cls) != (None, ()):
            return INSTANCE
        return REFERENTS if _type_flags.__get__(cls) & _HAVE_GC else SKIP

    def _fields(self, cls: type) -> tuple[Any, tuple[tuple[str, Any], ...]]:
        """The C descriptors of a class's instance `__dict__` (None without one) and `__slots__`."""
        fields = self._instance.get(id(cls))
        if fields is None:
            dict_field = descriptor(cls, "__dict__")
            slots = tuple(
                (name, value)
                for c in mro(cls)
                for name, value in class_dict(c).items()
                if type(value) is types.MemberDescriptorType and name != "__weakref__"
            )
            fields = (dict_field if type(dict_field) is types.GetSetDescriptorType else None, slots)
            self._instance[id(cls)] = fields
            self._plan_keep.append(cls)
        return fields

    def _children(self, obj: Any, plan: int) -> Iterator[tuple[int, object, Any]]:
        if plan == DICT:
            for key, value in dict.items(obj):
                yield KEY, key, value
        elif plan in (LIST, TUPLE):
            for i, value in enumerate(_ITERATE[plan](obj)):
                yield ITEM, i, value
        elif plan in (SET, FROZENSET, DEQUE):
            for value in _ITERATE[plan](obj):
                yield MEMBER, None, value
        elif plan == INSTANCE:
            yield from self.instance_children(obj)
        elif plan == FUNCTION:
            yield from _function_children(obj)
        elif plan == CLASS:
            yield from self._class_children(obj)
        elif plan == GENERATOR:
            frame = _FRAME_FIELD[id(type(obj))].__get__(obj)
            if frame is not None:
                for name, value in frame_locals(frame):
                    yield GENERATOR_LOCAL, name, value
        elif plan == CELL:
            try:
                yield CLOSURE, None, obj.cell_contents
            except ValueError:  # an empty cell
                return
        elif plan == METHOD:
            yield ATTR, "__self__", obj.__self__
        elif plan == REFERENTS:
            for value in gc.get_referents(obj):
                yield REFERENT, None, value

    def instance_children(self, obj: Any, edge: int = ATTR) -> Iterator[tuple[int, object, Any]]:
        """An instance's own attributes: its __dict__ and __slots__, read through its class's C descriptors."""
        cls = type(obj)
        dict_field, slots = self._fields(cls)
        if dict_field is not None:
            attributes = dict_field.__get__(obj, cls)
            if type(attributes) is dict:
                for name, value in attributes.items():
                    yield edge, name, value
        for name, slot in slots:
            try:
                yield edge, name, slot.__get__(obj, cls)
            except AttributeError:  # an unset slot
                continue

    def _class_children(self, cls: type) -> Iterator[tuple[int, object, Any]]:
        """A user class's own attributes (a framework's classes hold nothing of the program's)."""
        attributes = class_dict(cls)
        module = attributes.get("__module__")
        if type(module) is not str or module not in self._user_modules:
            return
        for name, value in attributes.items():
            if type(name) is str and not (name.startswith("__") and name.endswith("__")):
                yield CLASS_ATTR, name, value
                if type(value) is staticmethod or type(value) is classmethod:
                    yield CLASS_ATTR, name, value.__func__


def _function_children(function: types.FunctionType) -> Iterator[tuple[int, object, Any]]:
    code = function.__code__
    defaults = function.__defaults__ or ()
    names = code.co_varnames[code.co_argcount - len(defaults) : code.co_argcount]
    for name, value in zip(names, defaults, strict=True):
        yield DEFAULT, name, value
    for name, value in (function.__kwdefaults__ or {}).items():
        yield DEFAULT, name, value
    for name, cell in zip(code.co_freevars, function.__closure__ or (), strict=True):
        try:
            yield CLOSURE, name, cell.cell_contents
        except ValueError:  # an empty cell
            continue


def frame_locals(frame: types.FrameType) -> list[tuple[str, Any]]:
    """A frame's locals (a snapshot; its code runs none of the program's)."""
    return [(name, value) for name, value in frame.f_locals.items() if type(name) is str]


def where(code: types.CodeType) -> str:
    return f"{code.co_filename}:{code.co_firstlineno} in {code.co_name}"


def own_frame(frame: types.FrameType) -> bool:
    """tb_leakfinder's own frames and contextlib's, around the user's step: never a root."""
    return frame.f_code.co_filename.startswith(_OWN_FILES)


def frame_roots() -> Iterator[Root]:
    """Every thread's running frames' locals, innermost first, the current thread's first."""
    current = sys._getframe()
    stacks = [current, *(f for ident, f in sys._current_frames().items() if f is not current and ident != _ident())]
    for top in stacks:
        frame: types.FrameType | None = top
        while frame is not None:
            if not own_frame(frame):
                code = frame.f_code
                # A module-level frame's locals are its globals: made anywhere in the module.
                edge, made = (ROOT_GLOBAL, "") if code.co_name == "<module>" else (ROOT_LOCAL, where(code))
                for name, value in frame_locals(frame):
                    yield Root(edge, name, value, code.co_name, made, code.co_filename)
            frame = frame.f_back


def program_file(file: str) -> bool:
    """Whether a file is the program's own: not an installed package's, not the standard library's."""
    return not any(part in file for part in _LIBRARY_DIRS) and not file.startswith(_STDLIB)


def roots() -> Iterator[Root]:
    """The walk's roots, the nearest to the program first: its own frames' locals, its modules' globals, then the
    locals of the libraries' frames around them (a Keras fit() loop's)."""
    later = []
    for root in frame_roots():
        if program_file(root.file):
            yield root
        else:
            later.append(root)
    yield from global_roots()
    yield from later


def _ident() -> int:
    import threading

    return threading.get_ident()


def user_module_names() -> set[str]:
    """The program's own modules: `__main__` and every loaded module outside the frameworks, the standard library,
    the installed packages and tb_leakfinder."""
    names = set()
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in FRAMEWORK_PACKAGES or name.startswith("tb_leakfinder") or module is None:
            continue
        if not any(c is types.ModuleType for c in mro(type(module))):
            continue
        file = _module_dict.__get__(module).get("__file__")
        if name == "__main__" or (type(file) is str and program_file(file)):
            names.add(name)
    return names


def global_roots() -> Iterator[Root]:
    """The globals of the program's own modules, `__main__` first."""
    for name in sorted(user_module_names(), key=lambda n: (n != "__main__", n)):
        module = sys.modules.get(name)
        if module is None:
            continue
        for key, value in list(_module_dict.__get__(module).items()):
            if type(key) is str and not (key.startswith("__") and key.endswith("__")):
                yield Root(ROOT_GLOBAL, key, value, name, "")
