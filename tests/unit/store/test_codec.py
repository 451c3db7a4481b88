"""Dataclass trees through JSON + .npz: every field of a real host analysis comes back equal, with its type."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tb_leakfinder.engine.engine import HostResult, analyze_file
from tb_leakfinder.store.codec import CodecError, Decoder, Encoder
from tb_leakfinder.testing.recordings_builder import companion, holder, write_companion
from tb_leakfinder.testing.xspace_builder import synthesize_training, write_session
from tests.support.demo import DEMO_LOGS
from tests.support.never_freed import never_freed
from tests.support.trees import assert_same


def round_trip(value: Any, hint: Any) -> Any:
    """Through real bytes: the JSON text and an .npz read back without pickle."""
    encoder = Encoder()
    tree = json.dumps(encoder.encode(value))
    buffer = io.BytesIO()
    np.savez(buffer, **encoder.arrays)
    buffer.seek(0)
    with np.load(buffer, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    return Decoder(arrays).decode(json.loads(tree), hint)


def _results(tmp_path: Path) -> list[HostResult]:
    demo = sorted(DEMO_LOGS.glob("*/plugins/profile/*/*.xplane.pb"))
    builder, _ = synthesize_training(num_events=20_000, steps=12, allocators=("GPU_0_bfc", "GPU_1_bfc", "cpu_bfc"), seed=3)
    (synthetic,) = write_session(tmp_path, "train", "session", {"host0": builder})
    results = [analyze_file(str(p), "vm", str(p.parent)) for p in demo]
    return [*results, analyze_file(synthetic, "host0", str(Path(synthetic).parent))]


def test_every_field_of_real_host_results_round_trips(tmp_path):
    results = _results(tmp_path)
    assert any(r.hlo_protos for r in results) and any(r.modules for r in results)  # the static view is covered too
    assert any(len(r.unwrap().allocators) == 3 for r in results)
    for result in results:
        back = round_trip(result, HostResult)
        assert_same(result, back)
        assert back.json() == result.json()  # the report is rebuilt identically from the decoded analysis


def test_a_host_read_with_its_companion_file_round_trips_with_its_holders_and_recordings(tmp_path):
    """The companion file's model (every section) and the holders it gives families, as the disk cache stores them."""
    shutil.copytree(DEMO_LOGS / "tf_leak", tmp_path / "tf_leak")
    (profile,) = (tmp_path / "tf_leak").glob("plugins/profile/*/*.xplane.pb")
    kept = [a for a, (op, _) in never_freed(profile).items() if op == "Mul"]
    sample = {"step": 1, "time_ns": 5, "main": {"pid": 7, "rss": 10, "uss": None, "pss": 8}, "children": []}
    memory = {"status": "complete", "warning": "", "source": "proc", "samples": [sample]}
    document = companion(holders=[holder("history", kept)], sources={"/x/a.py:1": "a = []"}, process_memory=memory)
    path = write_companion(profile, document)
    result = analyze_file(str(profile), "vm", str(profile.parent), str(path))
    analysis = result.unwrap()
    assert analysis.profile.recordings is not None and analysis.profile.recordings.process_memory is not None
    assert analysis.holder_status is not None and analysis.allocators[0].holders[0]
    back = round_trip(result, HostResult)
    assert_same(result, back)
    assert back.json() == result.json()


def test_shared_objects_are_stored_once_and_come_back_shared(tmp_path):
    *_, result = _results(tmp_path)
    allocators = result.unwrap().allocators
    assert allocators[0].events.strings is allocators[1].events.strings
    encoder = Encoder()
    encoder.encode(result)
    back = round_trip(result, HostResult).unwrap().allocators
    assert back[0].events.strings is back[1].events.strings
    assert len(encoder.arrays) == len({id(a) for a in encoder._keep if isinstance(a, (np.ndarray, bytes))})


@dataclasses.dataclass
class Inner:
    values: np.ndarray
    label: str | None


@dataclasses.dataclass(frozen=True)
class Outer:
    """Kinds of field the analyses may grow: optional dataclasses, tuples, dicts with int keys, numpy scalars."""

    count: int
    ratio: float
    flag: bool
    blob: bytes
    scalar: np.int64
    nested: Inner | None
    items: list[Inner]
    pair: tuple[int, str]
    table: dict[int, list[str]]
    anything: dict[str, Any]


def test_fields_of_any_supported_kind_round_trip():
    inner = Inner(np.arange(5, dtype=np.uint64) << np.uint64(60), "x")
    value = Outer(
        count=7,
        ratio=float("nan"),
        flag=True,
        blob=b"\x00\xff",
        scalar=np.int64(-3),
        nested=None,
        items=[inner, Inner(np.zeros((2, 3), np.float32), None)],
        pair=(1, "one"),
        table={4: ["a", "b"], -1: []},
        anything={"k": [1, 2.5, None, "s"], "m": {"n": True}},
    )
    assert_same(value, round_trip(value, Outer))
    assert_same(dataclasses.replace(value, nested=inner), round_trip(dataclasses.replace(value, nested=inner), Outer))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t["$d"].pop("label"), "fields differ"),
        (lambda t: t["$d"].update(extra=1), "fields differ"),
        (lambda t: t["$d"].update(label=3), "expected str"),
        (lambda t: t["$d"].update(values={"$a": "a9"}), "missing"),
        (lambda t: t["$d"].update(values=[1, 2]), "expected a \\$a node"),
    ],
)
def test_a_tree_that_does_not_fit_the_classes_is_refused(mutate, message):
    encoder = Encoder()
    tree = encoder.encode(Inner(np.arange(3), "x"))
    mutate(tree)
    with pytest.raises(CodecError, match=message):
        Decoder(encoder.arrays).decode(tree, Inner)


def test_object_arrays_are_refused():
    with pytest.raises(CodecError, match="object"):
        Encoder().encode(Inner(np.array([object()]), None))
