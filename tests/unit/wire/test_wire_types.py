"""tools/gen_wire_types.py: the frontend's wire types and the HTTP API's tables follow wire/schema.py."""

import importlib.util
import pathlib
import subprocess
import sys
from types import ModuleType
from typing import is_typeddict

import pytest

from tb_leakfinder.wire import schema
from tb_leakfinder.wire.shape import conforms, typed_shape

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _load(name: str, path: pathlib.Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses and TypedDicts resolve their annotations through it
    spec.loader.exec_module(module)
    return module


gen = _load("gen_wire_types", ROOT / "tools" / "gen_wire_types.py")


def _schema_with(tmp_path: pathlib.Path, before: str, added: str) -> ModuleType:
    """A copy of the schema with `added` inserted before the line `before` (which occurs once). An indented line
    before a class joins the body of the class above it."""
    source = pathlib.Path(schema.__file__).read_text(encoding="utf-8")
    assert source.count("\n" + before + "\n") == 1, before
    name = f"schema_{tmp_path.name}"
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace("\n" + before + "\n", "\n" + added + "\n" + before + "\n"), encoding="utf-8")
    return _load(name, path)


def _interface(ts: str, name: str) -> str:
    start = ts.index(f"export interface {name} ")
    return ts[start : ts.index("\n}\n", start)]


def test_the_committed_files_are_the_generators():
    parsed = gen.read_schema(schema)
    assert gen.WIRE_TS.read_text(encoding="utf-8") == gen.render_ts(parsed)
    doc = gen.HTTP_API.read_text(encoding="utf-8")
    assert doc == gen.with_tables(doc, gen.render_tables(parsed))
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_wire_types.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_key_added_to_the_schema_appears_in_the_types_the_tables_and_the_cache_shape(tmp_path, hosts):
    added = '    added_bytes: Annotated[int | None, "bytes a new analysis found"]'
    module = _schema_with(tmp_path, "class BreakdownRow(TypedDict):", added)
    parsed = gen.read_schema(module)
    family = _interface(gen.render_ts(parsed), "Family")
    assert family.endswith(";\n  /** bytes a new analysis found */\n  added_bytes: number | null;")
    tables = gen.render_tables(parsed)
    assert "| `added_bytes` | `number \\| null` | bytes a new analysis found |" in tables
    assert "added_bytes" not in gen.render_tables(gen.read_schema(schema))
    # A cache entry written before the key was declared lacks it: a miss; with it, a hit.
    host = hosts["host0"]
    assert conforms(host, typed_shape(schema.HostReport))
    assert not conforms(host, typed_shape(module.HostReport))
    with_key = [{**a, "families": [{**g, "added_bytes": None} for g in a["families"]]} for a in host["allocators"]]
    assert conforms({**host, "allocators": with_key}, typed_shape(module.HostReport))


def test_a_named_choice_is_a_type_and_its_uses_name_it(tmp_path):
    module = _schema_with(
        tmp_path,
        'CaptureKind = Literal["profile", "one_moment"]',
        'Severity = Literal["low", "high"]\n"""How bad it is."""',
    )
    module_src = pathlib.Path(module.__file__).read_text(encoding="utf-8")
    path = pathlib.Path(module.__file__)
    path.write_text(module_src.replace('    new_leak: Annotated[bool, "growing in B and not in A"]', "    severity: Severity"))
    module = _load(path.stem + "_2", path)
    ts = gen.render_ts(gen.read_schema(module))
    assert "/** How bad it is. */\nexport type Severity = 'low' | 'high';" in ts
    assert "  severity: Severity;" in _interface(ts, "FamilyDiff")
    assert "| `Severity` | `'low' \\| 'high'` | How bad it is. |" in gen.render_tables(gen.read_schema(module))


def test_optional_keys_and_private_bases():
    ts = gen.render_ts(gen.read_schema(schema))
    host = _interface(ts, "HostReport")
    assert "  error?: string;" in host and "  host: string;" in host and "extends" not in host.splitlines()[0]
    assert "_HostReportKeys" not in ts
    assert "export interface ModuleAnswer extends ModuleDetailBody {" in ts
    assert "  histories: HistoryAnswer[];" in _interface(ts, "ReportAnswer")


def test_each_object_has_the_schemas_name_in_typescript():
    """One name per concept: the frontend's interfaces are exactly the schema's public classes."""
    ts = gen.render_ts(gen.read_schema(schema))
    declared = {line.split()[2] for line in ts.splitlines() if line.startswith("export interface ")}
    classes = {name for name, value in vars(schema).items() if is_typeddict(value) and not name.startswith("_")}
    assert declared == classes


@pytest.mark.parametrize(
    ("target", "line"),
    [
        ("WIRE_TS", "  regrown: boolean;\n"),
        ("HTTP_API", "| `regrown` | `boolean` | grows by freeing one buffer and making it again larger |\n"),
    ],
)
def test_check_fails_on_a_stale_file_and_names_it(tmp_path, monkeypatch, target, line):
    original = getattr(gen, target)
    stale = tmp_path / original.name
    text = original.read_text(encoding="utf-8")
    assert text.count(line) == 1
    stale.write_text(text.replace(line, ""), encoding="utf-8")
    monkeypatch.setattr(gen, target, stale)
    monkeypatch.setattr(gen, "ROOT", tmp_path.parent)
    monkeypatch.setattr(sys, "argv", ["gen_wire_types.py", "--check"])
    with pytest.raises(SystemExit) as exit_:
        gen.main()
    assert str(exit_.value) == f"{tmp_path.name}/{original.name}: stale; run python tools/gen_wire_types.py"
    assert line not in stale.read_text(encoding="utf-8")  # --check writes nothing


def test_a_doc_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="markers"):
        gen.with_tables("# HTTP API\n", "| table |\n")
