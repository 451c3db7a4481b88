from typing import Literal, TypedDict

import pytest

from tb_leakfinder.wire.shape import Shape, conforms, typed_shape

HOST: Shape = {
    "name": str,
    "peak": float,
    "count": int,
    "kind": frozenset({"leak", "steady"}),
    "extra": object,
    "start": (int, None),
    "steps": [{"step": int, "flag": bool}],
}
GOOD = {
    "name": "a",
    "peak": 1.5,
    "count": 3,
    "kind": "leak",
    "extra": [1, {}],
    "start": None,
    "steps": [{"step": 1, "flag": True}],
}


def test_a_value_of_the_shape_conforms_with_keys_beyond_it():
    assert conforms(GOOD, HOST)
    assert conforms({**GOOD, "peak": 2, "start": 7, "steps": [], "more": "x"}, HOST)


def test_each_way_a_value_can_differ_is_refused():
    for key, wrong in [
        ("name", 1),
        ("peak", True),  # a bool is no number here, though Python says it is an int
        ("count", 1.0),
        ("count", False),
        ("kind", "other"),
        ("start", "0"),
        ("steps", {"step": 1, "flag": True}),
        ("steps", [{"step": 1, "flag": 1}]),
        ("steps", [{"step": 1}]),
    ]:
        assert not conforms({**GOOD, key: wrong}, HOST), (key, wrong)
    assert not conforms({k: v for k, v in GOOD.items() if k != "extra"}, HOST)  # a key of any value must be there
    assert not conforms([GOOD], HOST) and not conforms(None, HOST)


def test_each_shape_is_checked_as_itself_though_checks_are_made_once():
    for _ in range(3):  # shapes made and dropped: a new one may take the id of an old one
        assert conforms(None, None) and not conforms(0, None)
        assert conforms([1, 2], [int]) and not conforms([1, "2"], [int])
        assert conforms({"a": "x"}, {"a": str}) and not conforms({"a": "x"}, {"a": str, "b": object})


class _Step(TypedDict):
    step: int
    kind: Literal["train", "eval"]


class _RunKeys(TypedDict):
    name: str
    rate: float | None
    steps: list[_Step]
    listed: Literal[1]


class _Run(_RunKeys, total=False):
    error: str


def test_a_declaration_gives_its_shape_with_its_optional_keys_left_out():
    assert typed_shape(_Run) == {
        "name": str,
        "rate": (float, None),
        "steps": [{"step": int, "kind": frozenset({"train", "eval"})}],
        "listed": int,
    }
    run = {"name": "a", "rate": None, "steps": [{"step": 0, "kind": "eval"}], "listed": 1}
    assert conforms(run, typed_shape(_Run)) and conforms({**run, "error": "x"}, typed_shape(_Run))
    assert not conforms({**run, "steps": [{"step": 0, "kind": "test"}]}, typed_shape(_Run))


def test_a_type_json_cannot_hold_has_no_shape():
    class Odd(TypedDict):
        when: bytes

    with pytest.raises(TypeError, match="no JSON shape"):
        typed_shape(Odd)
