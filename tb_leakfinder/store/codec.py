"""Dataclass trees to and from JSON plus numpy arrays (an .npz), without pickle.

Any dataclass whose fields are arrays, scalars, strings, bytes, lists, tuples,
dicts, optional values or other such dataclasses round-trips, field by field,
so a field added to an analysis is stored without a change here. Decoding is
driven by the declared field types and checks every value against them: an
entry that does not fit the current classes raises `CodecError`, never
produces a half-built object. Objects held twice (the string table every
allocator shares) are stored once and come back shared.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

import numpy as np

# Array dtypes an entry may hold: no objects, nothing numpy would need pickle for.
_ARRAY_KINDS = frozenset("biufc")


class CodecError(ValueError):
    """The stored tree does not match the classes it is decoded into."""


_SCALARS = (int, float, str, bool)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@functools.cache
def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


class Encoder:
    """Collects the arrays of everything it encodes; `arrays` is what goes into the .npz."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._memo: dict[int, Any] = {}
        self._keep: list[object] = []  # the encoded objects stay alive, so their ids stay unique

    def encode(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, np.generic):
            return value
        if isinstance(value, np.generic):
            return {"$g": value.dtype.str, "v": value.item()}
        ref = self._memo.get(id(value))
        if ref is not None:
            return ref
        if isinstance(value, (np.ndarray, bytes)):
            node = self._array(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            node = {"$d": {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
        elif isinstance(value, list):
            node = {"$l": [self.encode(v) for v in value]}
        elif isinstance(value, tuple):
            node = {"$t": [self.encode(v) for v in value]}
        elif isinstance(value, dict):
            node = {"$m": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        else:
            raise CodecError(f"cannot store a {type(value).__name__}")
        node["$id"] = len(self._memo)
        self._memo[id(value)] = {"$r": node["$id"]}
        self._keep.append(value)
        return node

    def _array(self, value: np.ndarray | bytes) -> dict[str, Any]:
        key = f"a{len(self.arrays)}"
        if isinstance(value, bytes):
            self.arrays[key] = np.frombuffer(value, np.uint8)
            return {"$b": key}
        if value.dtype.kind not in _ARRAY_KINDS:
            raise CodecError(f"cannot store an array of {value.dtype}")
        self.arrays[key] = value
        return {"$a": key}


class Decoder:
    """Rebuilds values from `encode`'s nodes and the arrays, checking them against type hints."""

    def __init__(self, arrays: typing.Mapping[str, np.ndarray]) -> None:
        self._arrays = arrays
        self._memo: dict[int, Any] = {}

    def decode(self, node: Any, hint: Any) -> Any:
        if isinstance(node, dict) and "$r" in node:
            if node["$r"] not in self._memo:
                raise CodecError(f"reference to object {node['$r']!r} before it is defined")
            value = self._memo[node["$r"]]
            _check(value, hint)
            return value
        value = self._build(node, hint)
        if isinstance(node, dict) and "$id" in node:
            self._memo[node["$id"]] = value
        return value

    def _build(self, node: Any, hint: Any) -> Any:
        if hint in _SCALARS and not isinstance(node, dict):  # most values: checked before any typing introspection
            _check(node, hint)
            return node
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint is Any:
            return self._untyped(node)
        if origin in (typing.Union, types.UnionType):
            if node is None and type(None) in args:
                return None
            options = [a for a in args if a is not type(None)]
            errors = []
            for option in options:
                try:
                    return self._build(node, option)
                except CodecError as exc:
                    errors.append(str(exc))
            raise CodecError(" / ".join(errors))
        if hint is np.ndarray or origin is np.ndarray:
            return self._load_array(node, "$a")
        if hint is bytes:
            return self._load_array(node, "$b").tobytes()
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            fields = _field(node, "$d", dict)
            declared = _fields(hint)
            if set(fields) != {f.name for f in declared}:
                raise CodecError(f"{hint.__name__} fields differ: stored {sorted(fields)}")
            hints = _hints(hint)
            values = {f.name: self.decode(fields[f.name], hints[f.name]) for f in declared}
            obj = hint.__new__(hint)
            for name, v in values.items():  # frozen or init=False fields are restored too
                object.__setattr__(obj, name, v)
            return obj
        if origin is list or hint is list:
            (item,) = args or (Any,)
            return [self.decode(v, item) for v in _field(node, "$l", list)]
        if origin is tuple or hint is tuple:
            items = _field(node, "$t", list)
            if args and not (len(args) == 2 and args[1] is Ellipsis) and len(args) != len(items):
                raise CodecError(f"a tuple of {len(items)} items where {len(args)} are declared")
            kinds = [args[0] if len(args) == 2 and args[1] is Ellipsis else a for a in args] if args else []
            return tuple(self.decode(v, kinds[i] if kinds else Any) for i, v in enumerate(items))
        if origin is dict or hint is dict:
            key_hint, value_hint = args or (Any, Any)
            pairs = _field(node, "$m", list)
            return {self.decode(k, key_hint): self.decode(v, value_hint) for k, v in _pairs(pairs)}
        if isinstance(node, dict) and "$g" in node:
            value = self._scalar(node)
            _check(value, hint)
            return value
        if hint in _SCALARS:
            _check(node, hint)
            return node
        raise CodecError(f"cannot decode a value of type {hint!r}")

    def _untyped(self, node: Any) -> Any:
        """A value declared `Any` (a JSON object in a report): rebuilt from its markers alone."""
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict):
            raise CodecError(f"unexpected {type(node).__name__} in the stored tree")
        for marker, hint in (("$a", np.ndarray), ("$b", bytes), ("$l", list), ("$t", tuple), ("$m", dict)):
            if marker in node:
                return self._build(node, hint)
        if "$g" in node:
            return self._scalar(node)
        raise CodecError("a stored dataclass where none is declared")

    def _scalar(self, node: dict[str, Any]) -> np.generic:
        dtype = np.dtype(str(node["$g"]))
        if dtype.kind not in _ARRAY_KINDS:
            raise CodecError(f"scalar of dtype {dtype}")
        value: np.generic = dtype.type(node["v"])
        return value

    def _load_array(self, node: Any, marker: str) -> np.ndarray:
        key = _field(node, marker, str)
        if key not in self._arrays:
            raise CodecError(f"array {key!r} is missing")
        return self._arrays[key]


def _field(node: Any, marker: str, kind: type) -> Any:
    if not isinstance(node, dict) or marker not in node or not isinstance(node[marker], kind):
        raise CodecError(f"expected a {marker} node, found {str(node)[:80]}")
    return node[marker]


def _pairs(pairs: list[Any]) -> list[tuple[Any, Any]]:
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise CodecError("a stored dict entry is not a key and a value")
    return [(k, v) for k, v in pairs]


def _check(value: Any, hint: Any) -> None:
    """Scalars: a bool is not an int, an int may stand for a float; containers were checked on the way in."""
    if hint is Any or typing.get_origin(hint) is not None or not isinstance(hint, type):
        return
    if hint is float and isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return
    if hint is int and isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return
    if hint is bool and isinstance(value, (bool, np.bool_)):
        return
    if isinstance(value, hint):
        return
    raise CodecError(f"expected {hint.__name__}, found {type(value).__name__}")
