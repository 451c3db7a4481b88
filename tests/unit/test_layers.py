"""The package's imports, parsed from its source: no cycle between its modules, and each part imports only what
its docstring (a package's `__init__.py`, a module's own) says it may. Lazy and type-checking imports count: they
are dependencies all the same."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tb_leakfinder"
TOP = "tb_leakfinder"  # the Python API: the package's own __init__.py
ALL = frozenset(
    {
        TOP,
        "api",
        "errors",
        "compiled",
        "lazy",
        "model",
        "proto",
        "read",
        "analyses",
        "wire",
        "store",
        "engine",
        "capture",
        "keras",
        "views",
        "plugin_loader",
        "plugin_flags",
        "testing",
        "webapp",
    }
)
# What each part may import besides itself, as its docstring says; `errors` (the one error type) is everyone's.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "compiled": frozenset(),  # the compiled parts' loader, which the readers and the analyses share
    "lazy": frozenset(),  # a module loaded on first use: what only some inputs reach
    "model": frozenset(),
    "proto": frozenset(),
    "read": frozenset({"model", "proto", "compiled", "lazy", "errors"}),
    "analyses": frozenset({"model", "compiled", "lazy", "errors"}),
    "wire": frozenset({"analyses", "model", "read", "errors"}),  # read: the format registry's hints
    "store": frozenset({"model", "analyses", "read", "wire", "errors"}),
    "engine": ALL - {TOP, "api", "engine", "views", "plugin_loader", "plugin_flags", "testing"},  # everything but the views
    "capture": frozenset({"read", "model", "analyses", "api", "errors"}),
    "keras": frozenset({"capture"}),
    "views": ALL - {"views", "testing"},  # everything (but what only tests, benchmarks and tools import)
    "plugin_loader": frozenset({"read", "views", "plugin_flags"}),
    "plugin_flags": frozenset(),  # the plugin's name and its flags' parsers, apart from TensorBoard
    "testing": frozenset({"model", "proto", "plugin_loader", "errors"}),
    TOP: frozenset({"api", "capture"}),
    "api": frozenset({"engine", "wire", "store", "errors"}),
    "webapp": frozenset(),  # the built frontend bundle
}
FORMATS = "tb_leakfinder.read.formats"
REGISTRY = f"{FORMATS}.registry"  # the one module that lists the formats
# What every format and read's own modules may share: the interface, the registry and the common helpers.
SHARED_FORMAT_PARTS = frozenset({"base", "registry", "common", "interning", "limits"})

# The one cycle kept: the PyTorch trace reader loads its msgspec path (chunks.py, which fills the reader's own scan)
# only when msgspec is installed, so that the pure-Python reader stays whole without it. An entry that no longer
# happens fails the test, so that it goes.
OPTIONAL_PATHS: frozenset[tuple[str, str]] = frozenset(
    {("tb_leakfinder.read.formats.torch_trace.reader", "tb_leakfinder.read.formats.torch_trace.chunks")}
)


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imports(path: Path, *, outside: bool = False) -> Iterator[str]:
    """The package's modules a file imports: `from a.b import c` is module a.b.c when there is one, else a.b.
    With `outside`, the top-level names of the other modules it imports instead."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import"
            names = [f"{node.module}.{alias.name}" for alias in node.names if node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if outside and top != TOP:
                yield top
            elif not outside and top == TOP:
                yield name if name in MODULES or isinstance(node, ast.Import) else name.rpartition(".")[0]


@functools.cache
def _all_imports() -> dict[str, frozenset[str]]:
    return {name: frozenset(_imports(path)) - {name} for name, path in MODULES.items()}


def _graph(skip: frozenset[tuple[str, str]] = OPTIONAL_PATHS) -> dict[str, set[str]]:
    return {name: {t for t in targets if (name, t) not in skip} for name, targets in _all_imports().items()}


def _part(module: str) -> str:
    """Which part of the package a module belongs to: its top package or top-level module, TOP for the API."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else TOP


def _format(module: str) -> str | None:
    """The format folder a module is in (or names), or None outside them and for their shared parts."""
    if not module.startswith(FORMATS + "."):
        return None
    name = module[len(FORMATS) + 1 :].split(".")[0]
    return None if name in SHARED_FORMAT_PARTS else name


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_part_of_the_package_has_its_rule():
    assert {_part(m) for m in MODULES} == ALL == set(MAY_IMPORT)


def test_no_module_imports_another_that_imports_it_back():
    assert _cycles(_graph()) == []


def test_each_part_imports_only_what_its_docstring_allows():
    wrong = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in sorted(targets)
        if _part(target) != _part(module) and _part(target) not in MAY_IMPORT[_part(module)]
    ]
    assert wrong == []


def test_the_analyses_and_the_model_read_no_file_and_write_no_json():
    """Pure functions over the model: no I/O, no JSON, no TensorBoard (their docstrings)."""
    forbidden = {"json", "os", "io", "pathlib", "gzip", "zipfile", "pickle", "shutil", "tempfile", "socket"}
    forbidden |= {"subprocess", "urllib", "tensorboard", "werkzeug", "google"}
    wrong = [
        f"{name} imports {top}"
        for name, path in MODULES.items()
        if _part(name) in ("analyses", "model")
        for top in sorted(set(_imports(path, outside=True)) & forbidden)
    ]
    assert wrong == []


def test_no_format_imports_another_and_read_reaches_them_through_the_registry():
    wrong = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in sorted(targets)
        if _part(module) == "read" and module != REGISTRY and _format(target) not in (None, _format(module))
    ]
    assert wrong == []


def test_every_exception_still_happens():
    """So that the set of imports being removed is emptied as they go."""
    everything = _graph(frozenset())
    assert sorted(edge for edge in OPTIONAL_PATHS if edge[1] not in everything.get(edge[0], ())) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set(), "c": {"b"}}, []),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}}, [["a", "b"], ["c", "d"]]),
    ],
)
def test_the_cycle_finder_finds_cycles_and_only_them(graph, expected):
    assert sorted(_cycles(graph)) == expected
