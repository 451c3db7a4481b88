"""docs/report_v3_changes.json against the schema: every key added since version 3 began is listed there (so that
`tools/report_identity.py --changes` and a reader of docs/http_api.md know it), and every key it lists is one."""

from __future__ import annotations

import json
import pathlib
import subprocess
import types
import typing
from collections.abc import Iterator

import pytest

from tb_leakfinder.wire import schema

ROOT = pathlib.Path(__file__).resolve().parents[3]
CHANGES = json.loads((ROOT / "docs" / "report_v3_changes.json").read_text())


def _typed_dicts(hint: object) -> Iterator[type]:
    """The TypedDicts a field's type holds: itself, a list's items, the options of a union."""
    if typing.is_typeddict(hint):
        yield typing.cast(type, hint)
    for arg in typing.get_args(hint):
        yield from _typed_dicts(arg)


def key_paths(module: types.ModuleType) -> set[str]:
    """Every key of the module's JSON objects as "parent.key": `parent` is the key the object is found under (a
    list's key for its items), "" for an answer at the top."""
    # A class named with "_" holds keys its subclass is declared with (the wire types flatten it): not an object.
    classes = [
        c
        for name, c in vars(module).items()
        if typing.is_typeddict(c)
        and c.__module__ == module.__name__
        and not name.startswith("_")
        and not name.endswith("Args")  # a route's query arguments, not keys of an answer
    ]
    hints = {c: typing.get_type_hints(c, vars(module)) for c in classes}
    parents: dict[type, set[str]] = {c: set() for c in classes}
    for c in classes:
        for key, hint in hints[c].items():
            for child in _typed_dicts(hint):
                parents.setdefault(child, set()).add(key)
    return {f"{parent}.{key}" for c in classes for key in hints[c] for parent in parents[c] or {""}}


def _schema_at(commit: str) -> types.ModuleType:
    try:
        source = subprocess.run(
            ["git", "show", f"{commit}:tb_leakfinder/report/schema.py"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"the schema of version 3's first commit {commit} is not in this checkout's history ({exc})")
    module = types.ModuleType(f"schema_at_{commit}")
    exec(compile(source, f"{commit}:schema.py", "exec"), module.__dict__)
    return module


def _renamed(path: str) -> str:
    """An old "parent.key" by the changes' new names: its key renamed, and its parent when that key was."""
    keys: dict[str, str] = CHANGES["keys"]
    parent, key = path.split(".", 1)
    new_parent = next((new for old, new in keys.items() if old.rpartition(".")[2] == parent), parent)
    return f"{new_parent}.{keys.get(path, keys.get(key, key))}"


def _listed(path: str, paths: set[str], seen: frozenset[str] = frozenset()) -> bool:
    """Whether the changes list a key found at `path`: itself, or the object it is in (whose key drops it whole)."""
    parent, key = path.split(".", 1)
    if path in CHANGES["added"] or key in CHANGES["added"]:
        return True
    holders = [p for p in paths if parent and p.endswith(f".{parent}") and p not in seen]
    return any(_listed(p, paths, seen | {path}) for p in holders)


def test_every_key_added_since_version_3_began_is_listed():
    base = _schema_at(CHANGES["since"])
    assert base.__dict__["__doc__"]  # the module was read, not an empty one
    old = {_renamed(p) for p in key_paths(base)}
    paths = key_paths(schema)
    missing = sorted(p for p in paths - old if not _listed(p, paths))
    assert not missing, f"add these to docs/report_v3_changes.json's `added`: {missing}"


def test_every_listed_key_is_one_of_the_schema():
    paths = key_paths(schema)
    keys = {p.split(".", 1)[1] for p in paths}
    unknown = [k for k in CHANGES["added"] if k not in paths and k not in keys]
    assert not unknown, unknown


def test_a_key_path_names_where_a_key_is_found():
    # The paths this test reads the changes by, from the schema's own declarations.
    paths = key_paths(schema)
    assert {"hosts.default_allocator", "allocators.host_memory", "histories.gate_verdict"} <= paths
    assert "default_allocator.reason" in paths and "families.cause" in paths
