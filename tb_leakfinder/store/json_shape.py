"""Whether a JSON value has the shape the code reading it expects: for JSON read back from disk.

A shape is `str`, `int`, `float`, `bool` or `object` (any value); `None` (null); a one-item list
`[item]`, for a list of such items; a dict `{key: shape}`, for an object with at least those keys;
a tuple of shapes, for any of them; or a frozenset of strings, for one of those strings.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeAlias

Shape: TypeAlias = type | list["Shape"] | dict[str, "Shape"] | tuple["Shape", ...] | frozenset[str] | None


def conforms(value: object, shape: Shape) -> bool:
    """Only the shape is walked, never deeper than it: a value nested without end costs nothing more."""
    if shape is None:
        return value is None
    if isinstance(shape, tuple):
        return any(conforms(value, option) for option in shape)
    if isinstance(shape, frozenset):
        return isinstance(value, str) and value in shape
    if isinstance(shape, list):
        return isinstance(value, list) and all(conforms(item, shape[0]) for item in value)
    if isinstance(shape, dict):
        return isinstance(value, dict) and all(key in value and conforms(value[key], s) for key, s in shape.items())
    if shape is object:
        return True
    if shape is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, shape)


def dataclass_shape(cls: type) -> dict[str, Shape]:
    """The shape of `dataclasses.asdict` of an instance of `cls`."""
    hints = typing.get_type_hints(cls)
    return {f.name: _hint_shape(hints[f.name]) for f in dataclasses.fields(cls)}


def _hint_shape(hint: Any) -> Shape:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return tuple(None if a is type(None) else _hint_shape(a) for a in args)
    if origin is list:
        return [_hint_shape(args[0])]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return dataclass_shape(hint)
    if hint in (int, float, str, bool):
        return typing.cast(type, hint)
    raise TypeError(f"no JSON shape for {hint!r}")
