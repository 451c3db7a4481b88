"""The companion file read into the model: every section of the contract (docs/recordings.md's own example), and
every way a file can be other than it says refused with an error naming the file."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.model.recordings import (
    MAX_ADDRESSES,
    MAX_COMPANION_BYTES,
    RECORDINGS_FORMAT,
    HolderRecord,
    ProcessReading,
)
from tb_leakfinder.read.formats import registry
from tb_leakfinder.read.formats.recordings.reader import MAX_TEXT, read_recordings
from tb_leakfinder.testing.recordings_builder import companion, companion_path, holder, write_companion
from tests.support.demo import ROOT


def _doc_example() -> dict:
    """The JSON example of docs/recordings.md: the contract as its readers and writers see it."""
    text = (ROOT / "docs" / "recordings.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```json\n(.*?)```", text, re.S)
    return json.loads(block)


def _write(tmp_path: Path, document: dict | str | bytes) -> str:
    return str(write_companion(tmp_path / "vm.xplane.pb", document))


def test_the_contracts_example_is_read_whole(tmp_path):
    example = _doc_example()
    found = read_recordings(_write(tmp_path, example))
    assert (found.version, found.host, found.pid, found.framework) == (1, "worker0", 4242, "torch")
    search = found.holders
    assert search is not None
    assert (search.status, search.warning, search.objects_visited, search.elapsed_s) == ("complete", "", 183204, 0.41)
    (h,) = search.holders
    wanted = example["holders"]["holders"][0]
    assert h == HolderRecord(
        wanted["path"], wanted["kind"], wanted["type"], wanted["created"], wanted["addresses"], wanted["count"], wanted["bytes"]
    )
    memory = found.process_memory
    assert memory is not None
    assert (memory.status, memory.source) == ("complete", "psutil")
    (sample,) = memory.samples
    assert (sample.step, sample.time_ns) == (5, 1765090000000000000)
    assert sample.main == ProcessReading(4242, 812000000, 790000000, 795000000)
    assert sample.children == [ProcessReading(4250, 310000000, 40000000, 120000000)]
    assert found.sources == example["sources"]


def test_sections_left_out_are_none_and_nulls_are_kept(tmp_path):
    document = companion(process_memory=None)
    found = read_recordings(_write(tmp_path, document))
    assert (found.holders, found.process_memory, found.sources) == (None, None, {})
    sample = {"step": 1, "time_ns": 2, "main": {"pid": 3, "rss": 4, "uss": None, "pss": None}}
    document = companion(process_memory={"status": "partial", "warning": "off", "source": "proc", "samples": [sample]})
    memory = read_recordings(_write(tmp_path, document)).process_memory
    assert memory is not None
    assert memory.samples[0].main == ProcessReading(3, 4, None, None)
    assert memory.samples[0].children == []


def test_long_texts_are_cut(tmp_path):
    line = "x" * (MAX_TEXT * 3)
    found = read_recordings(_write(tmp_path, companion(holders=[holder(line, [1])], sources={"a.py:1": line})))
    assert found.holders is not None
    assert len(found.holders.holders[0].path) == MAX_TEXT
    assert found.sources["a.py:1"].endswith("…")


def _spoiled(change) -> dict:
    document = companion(holders=[holder("model.heads", [0x1000, 0x2000], type_name="ModuleList", nbytes=8192)])
    change(document)
    return document


SPOILED = {
    "another format": lambda d: d.update(format="something.else"),
    "no format": lambda d: d.pop("format"),
    "a newer version": lambda d: d.update(version=2),
    "version 0": lambda d: d.update(version=0),
    "a version as text": lambda d: d.update(version="1"),
    "a boolean pid": lambda d: d.update(pid=True),
    "a negative pid": lambda d: d.update(pid=-1),
    "a pid past int64": lambda d: d.update(pid=1 << 70),
    "holders a list": lambda d: d.update(holders=[]),
    "an unknown status": lambda d: d["holders"].update(status="done"),
    "a NaN time": lambda d: d["holders"].update(elapsed_s=float("nan")),
    "an infinite time": lambda d: d["holders"].update(elapsed_s=float("inf")),
    "a negative time": lambda d: d["holders"].update(elapsed_s=-1.0),
    "an unknown kind": lambda d: d["holders"]["holders"][0].update(kind="pointer"),
    "a path not text": lambda d: d["holders"]["holders"][0].update(path=["model"]),
    "an address past 64 bits": lambda d: d["holders"]["holders"][0].update(addresses=[1 << 64]),
    "an address as a float": lambda d: d["holders"]["holders"][0].update(addresses=[4096.0]),
    "fewer buffers than addresses": lambda d: d["holders"]["holders"][0].update(count=1),
    "too many addresses": lambda d: d["holders"]["holders"][0].update(
        addresses=list(range(1, MAX_ADDRESSES + 2)), count=MAX_ADDRESSES + 1
    ),
    "a holder not an object": lambda d: d["holders"]["holders"].append("model"),
    "sources a list": lambda d: d.update(sources=["a.py:1"]),
    "a source line a number": lambda d: d.update(sources={"a.py:1": 1}),
    "a sample without main": lambda d: d.update(process_memory={"status": "complete", "source": "psutil", "samples": [{}]}),
}


@pytest.mark.parametrize("name", SPOILED)
def test_a_spoiled_value_refuses_the_file_naming_it(tmp_path, name):
    path = _write(tmp_path, _spoiled(SPOILED[name]))
    with pytest.raises(LeakfinderError, match=re.escape(path)):
        registry.read_recordings(path)


HOSTILE = {
    "empty": b"",
    "not JSON": b"\x89PNG\r\n\x1a\n",
    "not UTF-8": b'{"format": "\xff\xfe"}',
    "JSON, not an object": b"[1, 2, 3]",
    "cut short": json.dumps(companion(holders=[holder("a", [1])])).encode()[:-7],
    "deeply nested": b'{"format": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    "a number of 5000 digits": b'{"format": "tb_leakfinder.recordings", "version": 1, "pid": ' + b"9" * 5000 + b"}",
    "NaN": b'{"format": "tb_leakfinder.recordings", "version": NaN}',
    "over the size bound": json.dumps({**companion(), "pad": "x" * MAX_COMPANION_BYTES}).encode(),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_file_is_refused_naming_it(tmp_path, name):
    path = _write(tmp_path, HOSTILE[name])
    with pytest.raises(LeakfinderError, match=re.escape(path)):
        registry.read_recordings(path)


def test_a_fifo_is_not_read(tmp_path):
    path = companion_path(tmp_path / "vm.xplane.pb")
    os.mkfifo(path)
    with pytest.raises(LeakfinderError, match="not a regular file"):
        registry.read_recordings(str(path))


@pytest.mark.parametrize(
    ("profile", "beside"),
    [
        ("vm.xplane.pb", "vm.leakfinder.json"),
        ("host_12.1700000000000.pt.trace.json.gz", "host_12.1700000000000.leakfinder.json"),
        ("host_12.1700000000000.pt.trace.json", "host_12.1700000000000.leakfinder.json"),
        ("memory_step_5.prof", "memory_step_5.leakfinder.json"),
        ("snapshot.pickle", "snapshot.leakfinder.json"),
    ],
)
def test_the_file_beside_each_formats_profile_is_its_stem_and_the_suffix(tmp_path, profile, beside):
    assert companion_path(tmp_path / profile).name == beside
    assert registry.recordings_name(profile, {beside, "other.leakfinder.json"}) == beside
    assert registry.recordings_name(profile, {"other.leakfinder.json"}) is None


def test_a_companion_is_never_a_profile_of_any_format(tmp_path):
    path = _write(tmp_path, companion(holders=[holder("a", [1])]))
    assert not any(f.sniff(path) for f in registry.FORMATS)
    assert registry.RECORDINGS[0].sniff(path)
    assert RECORDINGS_FORMAT in Path(path).read_text()
