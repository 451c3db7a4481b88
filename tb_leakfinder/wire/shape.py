"""Whether a JSON value has the shape the code reading it expects: for JSON read back from disk.

The shapes are derived from the declarations of `schema.py` (`typed_shape`), never written by hand.
A shape is `str`, `int`, `float`, `bool` or `object` (any value); `None` (null); a one-item list
`[item]`, for a list of such items; a dict `{key: shape}`, for an object with at least those keys;
a tuple of shapes, for any of them; or a frozenset of strings, for one of those strings.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, TypeAlias

Shape: TypeAlias = type | list["Shape"] | dict[str, "Shape"] | tuple["Shape", ...] | frozenset[str] | None


Check: TypeAlias = Callable[[object], bool]
# Each shape's check, made once: a shape is a constant of the code, and walking it anew for each of a thousand
# cached reports cost more than reading them. The shape is kept beside its check so that its id stays its own.
_CHECKS: dict[int, tuple[Shape, Check]] = {}


def conforms(value: object, shape: Shape) -> bool:
    """Only the shape is walked, never deeper than it: a value nested without end costs nothing more."""
    made = _CHECKS.get(id(shape))
    if made is None or made[0] is not shape:
        made = _CHECKS[id(shape)] = shape, _check(shape)
    return made[1](value)


def _check(shape: Shape) -> Check:
    if shape is None:
        return lambda value: value is None
    if isinstance(shape, tuple):
        options = [_check(option) for option in shape]
        return lambda value: any(check(value) for check in options)
    if isinstance(shape, frozenset):
        return lambda value: isinstance(value, str) and value in shape
    if isinstance(shape, list):
        item = _check(shape[0])
        return lambda value: isinstance(value, list) and all(map(item, value))
    if isinstance(shape, dict):
        return _object_check(shape)
    if shape is object:
        return lambda value: True
    if shape is float:
        return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
    if shape is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    kind = shape
    return lambda value: isinstance(value, kind)


def _object_check(shape: dict[str, Shape]) -> Check:
    keys = frozenset(shape)  # keys of any value only need to be there
    checked = [(key, _check(inner)) for key, inner in shape.items() if inner is not object]

    def check(value: object) -> bool:
        return isinstance(value, dict) and keys <= value.keys() and all(inner(value[key]) for key, inner in checked)

    return check


def typed_shape(cls: type) -> dict[str, Shape]:
    """The shape of a `TypedDict` of the schema: its required keys (an optional one need not be there)."""
    hints = typing.get_type_hints(cls)
    required: frozenset[str] = vars(cls)["__required_keys__"]
    return {name: _hint_shape(hint) for name, hint in hints.items() if name in required}


def _hint_shape(hint: Any) -> Shape:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return tuple(None if a is type(None) else _hint_shape(a) for a in args)
    if origin is list:
        return [_hint_shape(args[0])]
    if origin is typing.Literal:
        # A key of one of some strings; a literal number (a listed row's `count` of 1) is checked as a number.
        strings = frozenset(a for a in args if isinstance(a, str))
        return strings if len(strings) == len(args) else int
    if typing.is_typeddict(hint):
        return typed_shape(hint)
    if hint in (int, float, str, bool):
        return typing.cast(type, hint)
    raise TypeError(f"no JSON shape for {hint!r}")
