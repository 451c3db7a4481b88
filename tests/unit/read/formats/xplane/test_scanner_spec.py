"""read/formats/xplane/stat_spec.py, the one stat table: the scanner's header written from it, and what the generator refuses."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tb_leakfinder.model.memory import EVENT_COLUMNS
from tb_leakfinder.read.formats.xplane import decoder, hlo, stat_spec
from tb_leakfinder.read.formats.xplane.stat_spec import FILLS, INT, STRING, UINT64, Fill
from tb_leakfinder.testing.xspace_builder import synthesize_training
from tests.support.demo import ROOT


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_scanner_tables", ROOT / "tools" / "gen_scanner_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()


def test_the_committed_header_is_the_generators():
    assert gen.problems(EVENT_COLUMNS, FILLS) == []
    assert gen.OUTPUT.read_text(encoding="utf-8") == gen.render(EVENT_COLUMNS, FILLS)
    command = [sys.executable, str(ROOT / "tools" / "gen_scanner_tables.py"), "--check"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_the_metadata_stats_are_the_hlo_readers():
    assert (stat_spec.HLO_PROTO_STAT, stat_spec.PROGRAM_ID_STAT) == (hlo.HLO_PROTO_STAT, hlo.PROGRAM_ID_STAT)


def test_an_integer_stat_is_one_row():
    """A new INT row joins the end of the int64 run, its role too, and leaves the host-event roles' range as it was."""
    columns = {**EVENT_COLUMNS, "bytes_limit": np.int64}
    fills = (*FILLS, Fill("bytes_limit", INT, ("bytes_limit",)))
    assert gen.problems(columns, fills) == []

    def ints(columns: dict[str, type], fills: tuple[Fill, ...]) -> tuple[list[str], list[str]]:
        order = [column for column, kind in gen.column_order(columns, fills) if kind == INT]
        return order, [role.name for role in gen.roles(fills) if role.kind == INT]

    (columns_before, roles_before), (columns_after, roles_after) = ints(EVENT_COLUMNS, FILLS), ints(columns, fills)
    assert (columns_after, roles_after) == ([*columns_before, "bytes_limit"], [*roles_before, "ROLE_BYTES_LIMIT"])
    before, after = gen.render(EVENT_COLUMNS, FILLS), gen.render(columns, fills)
    assert f"#define NINTS {len(columns_after)}" in after
    assert '{"bytes_limit", ROLE_BYTES_LIMIT, COL_BYTES_LIMIT},' in after
    host_range = [line for line in before.splitlines() if "_HOST_ROLE " in line]
    assert len(host_range) == 2 and all(line in after for line in host_range)


def _replaced(column: str, **changes: object) -> tuple[Fill, ...]:
    return tuple(fill._replace(**changes) if fill.column == column else fill for fill in FILLS)


@pytest.mark.parametrize(
    ("columns", "fills", "problem"),
    [
        ({**EVENT_COLUMNS, "bytes_limit": np.int64}, FILLS, "model column bytes_limit is filled by no row"),
        (EVENT_COLUMNS, (*FILLS, Fill("bytes_limit", INT, ("bytes_limit",))), "column bytes_limit is not one of the model's"),
        (EVENT_COLUMNS, (*FILLS, Fill("op", STRING, ("op_name",))), "column op is filled by more than one row"),
        (EVENT_COLUMNS, _replaced("shape", stats=("tf_op",)), "stat 'tf_op' is given more than one role"),
        (EVENT_COLUMNS, _replaced("region", stats=("step_num",)), "stat 'step_num' is given more than one role"),
        ({**EVENT_COLUMNS, "stack_bytes": np.int32}, FILLS, "column stack_bytes of kind int must be int64"),
        ({**EVENT_COLUMNS, "kind": np.int32}, FILLS, "column kind must be int8"),
        (EVENT_COLUMNS, _replaced("op", default=1), "a string column's default is 0"),
        (EVENT_COLUMNS, _replaced("dtype", default=1 << 40), "column dtype: the default does not fit int32"),
        (EVENT_COLUMNS, _replaced("fragmentation", default=float("nan")), "a finite float"),
        (EVENT_COLUMNS, _replaced("requested_bytes", kind="int16"), "unknown kind 'int16'"),
        (
            {**EVENT_COLUMNS, "base": np.uint64},
            (*FILLS, Fill("base", UINT64, ("base",))),
            "one column of kind uint64, not 2",
        ),
    ],
)
def test_the_generator_refuses_a_table_the_scanner_cannot_hold(
    columns: dict[str, type], fills: tuple[Fill, ...], problem: str
) -> None:
    assert any(problem in found for found in gen.problems(columns, fills)), gen.problems(columns, fills)


def test_stat_names_are_c_string_literals():
    assert gen._c_string('Hlo Proto "x" \\ é') == '"Hlo Proto \\042x\\042 \\134 \\303\\251"'


# Reads a profile in a process where the compiled scanner cannot be imported, as when it was never built.
WITHOUT_SCANNER = """
import hashlib, json, sys
sys.modules["tb_leakfinder.read.formats.xplane._xspace_scan"] = None
from tb_leakfinder.model.memory import EVENT_COLUMNS
from tb_leakfinder.read.formats.xplane import reader, scan
assert scan.compiled_scanner() is None
events = reader.read_host(sys.argv[1], "h").events
print(json.dumps({name: hashlib.sha256(getattr(events, name).tobytes()).hexdigest() for name in EVENT_COLUMNS}))
"""


def test_the_package_reads_profiles_without_the_compiled_scanner(tmp_path: Path):
    builder, _ = synthesize_training(2_000, 5)
    data = builder.to_bytes()
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_SCANNER, str(path)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    events = decoder.decode(data, "h", str(path)).events
    assert len(events) > 0
    assert json.loads(done.stdout) == {
        name: hashlib.sha256(getattr(events, name).tobytes()).hexdigest() for name in EVENT_COLUMNS
    }
