"""Real device memory profiles, written by JAX on CPU in a process of its own (tests/unit/read/formats/pprof/
jax_program.py): what JAX writes, as the reader takes it."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from tb_leakfinder import proto
from tb_leakfinder.read.formats.pprof import reader
from tests.unit.read.formats.pprof import jax_program

# JAX starts and writes its profiles in a process of its own: seconds of CPU.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    return jax_program.run(tmp_path_factory.mktemp("jax_snapshots"), steps=4, every=2)


def test_what_jax_writes(written):
    (first, _) = written["saved"]
    message = proto.PprofProfile()().FromString(gzip.decompress(Path(first["path"]).read_bytes()))
    strings = [s.decode() for s in message.string_table]
    assert [(strings[t.type], strings[t.unit]) for t in message.sample_type] == [("allocations", "count"), ("space", "bytes")]
    labels = {(strings[label.key], strings[label.str]) for sample in message.sample for label in sample.label}
    assert {key for key, _ in labels} == {"kind", "device"}  # no shape, no dtype
    assert ("device", "cpu:0") in labels and ("kind", "buffer") in labels
    assert str(jax_program.PROGRAM) in strings  # functions carry their whole file path


def test_each_snapshot_holds_the_kept_arrays_made_in_make_batch(written):
    for saved in written["saved"]:
        profile = reader.read_host(saved["path"], "memory_profile")
        assert profile.warnings == []
        assert profile.events.allocator_names == ["cpu:0"]
        assert int(profile.events.requested_bytes.sum()) == saved["kept_bytes"]
        assert set(profile.events.strings) == {"", "buffer"}  # the executables hold 0 bytes on CPU: left out
        line = written["make_batch"].split(":")[1].split()[0]
        assert f"${jax_program.PROGRAM}:{line} make_batch" in profile.spans.names
        # JAX 0.10 records no time_nanos; where a later one does, it is when the file was written.
        start = profile.start_time_ns
        assert start is None or abs(start / 1e9 - os.stat(saved["path"]).st_mtime) < 60
