"""Fuzzing the XSpace decoder: every hostile input ends in a report or a LeakfinderError.

A seeded, structure-aware mutator (deterministic: a failure reproduces from its
seed and index) takes real captures and synthesised profiles and truncates
them, flips bits, rewrites length prefixes and varints, changes wire types,
declares huge lengths and nests groups deeply. Each input goes through what
the plugin runs: `read_host`, `analyze_host`, the report, timeline and buffer
JSON. `tests/fuzz/fuzz_long.py` runs the same harness for 100,000+ inputs.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tb_leakfinder.errors import LeakfinderError
from tb_leakfinder.read.formats.common import limits
from tb_leakfinder.testing import hostile
from tb_leakfinder.testing.xspace_builder import ProfileBuilder, encode_varint
from tests.support.fuzzing import (
    HUGE_DECLARATIONS,
    MAX_RSS_GROWTH_BYTES,
    MAX_SECONDS_PER_INPUT,
    PURE_ENV,
    ROOT,
    Mutator,
    Seed,
    Tally,
    analyse_file,
    decoder_path,
    decoder_paths,
    fuzz_inputs,
    peak_rss_bytes,
    replace_in_message,
    run_differential,
    run_input,
    wire_fields,
    xspace_seeds,
)

CI_SEED = 20261129
CI_INPUTS = 1200


# --- the tests ---------------------------------------------------------------


def test_wire_scanner_reads_every_seed():
    small, whole = xspace_seeds()
    assert len(small) >= 4
    for seed in small + whole:
        assert seed.fields, f"{seed.name}: the mutator would only do byte-level mutations"


def test_seeds_analyse_cleanly(tmp_path, decoder):
    tally = Tally()
    small, whole = xspace_seeds()
    for seed in small + whole:
        run_input(tally, seed.name, seed.data, tmp_path / "seed.xplane.pb")
    assert tally.crashes == []
    assert tally.outcomes == {"report": len(small) + len(whole)}


def test_fuzzed_inputs_end_in_report_or_project_error(tmp_path):
    """Each input through both decoders: no crash, bounded time and memory, and the very same answer."""
    rss_before = peak_rss_bytes()
    tallies = {decoder: Tally() for decoder in decoder_paths()}
    path = tmp_path / "f.xplane.pb"
    disagreements = [name for name, data in fuzz_inputs(CI_SEED, CI_INPUTS) if not run_differential(tallies, name, data, path)]
    assert disagreements == [], disagreements[:10]
    for tally in tallies.values():
        assert tally.inputs == CI_INPUTS
        assert tally.crashes == [], tally.crashes[:10]
        assert tally.max_seconds < MAX_SECONDS_PER_INPUT, tally.slowest
        # The mutator is neither so gentle that nothing fails nor so rough that nothing parses.
        assert tally.outcomes["report"] >= CI_INPUTS // 10, tally.outcomes
        assert tally.outcomes["error"] >= CI_INPUTS // 10, tally.outcomes
    assert peak_rss_bytes() - rss_before < MAX_RSS_GROWTH_BYTES


def test_profiles_at_and_past_the_caps_mutated_end_alike_in_both_decoders(tmp_path):
    """The counts the caps bound (limits.py), a step either side, mutated: a duplicated or deleted field, a changed
    name or field number moves a profile across a cap; both decoders must still give the very same answer."""
    built = {
        "allocators_past": hostile.xspace_allocators(tmp_path / "a.pb", limits.MAX_ALLOCATORS + 1),
        "devices_past": hostile.xspace_devices(tmp_path / "d.pb", limits.MAX_ALLOCATORS + 1),
        "planes_at": hostile.xspace_empty_planes(tmp_path / "p.pb", limits.MAX_PLANES - 1),
        "planes_past": hostile.xspace_empty_planes(tmp_path / "q.pb", limits.MAX_PLANES),
    }
    seeds = [Seed(name, path.read_bytes()) for name, path in built.items()]
    mutator = Mutator(seeds, random.Random(CI_SEED))
    inputs = [(seed.name, seed.data) for seed in seeds] + [mutator.next() for _ in range(40)]
    tallies = {decoder: Tally() for decoder in decoder_paths()}
    path = tmp_path / "f.xplane.pb"
    disagreements = [name for name, data in inputs if not run_differential(tallies, name, data, path)]
    assert disagreements == [], disagreements[:10]
    for tally in tallies.values():
        assert tally.crashes == [], tally.crashes[:10]
        assert tally.max_seconds < MAX_SECONDS_PER_INPUT, tally.slowest
        assert tally.outcomes["report"] and tally.outcomes["error"], tally.outcomes


def test_declared_huge_lengths_allocate_nothing_like_them(tmp_path):
    """Under an address-space limit 1 GiB above what the process holds, no input may fail to allocate."""
    for name, data in HUGE_DECLARATIONS.items():
        (tmp_path / f"{name}.xplane.pb").write_bytes(data)
    assert len(HUGE_DECLARATIONS["planes_2gb"]) == 20
    script = f"""
import json, resource, sys
sys.path.insert(0, {str(ROOT)!r})
from tests.support.fuzzing import HUGE_DECLARATIONS, Tally, analyse_file, run_input
from pathlib import Path
vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), resource.RLIM_INFINITY))
tally = Tally()
for name in HUGE_DECLARATIONS:
    path = Path({str(tmp_path)!r}) / (name + ".xplane.pb")
    run_input(tally, name, path.read_bytes(), path)
print(json.dumps({{"outcomes": dict(tally.outcomes), "crashes": tally.crashes}}))
"""
    for pure in ("1", ""):
        env = {**os.environ, PURE_ENV: pure}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.splitlines()[-1])
        assert result == {"outcomes": {"error": len(HUGE_DECLARATIONS)}, "crashes": []}


def test_deep_nesting_is_refused_not_recursed(tmp_path, decoder):
    path = tmp_path / "deep.xplane.pb"
    groups = encode_varint(15 << 3 | 3) * 100_000 + encode_varint(15 << 3 | 4) * 100_000
    plane = b"\x12\x09/host:CPU"
    for _ in range(5000):  # an unknown length-delimited field inside each other, inside a plane
        plane = encode_varint(15 << 3 | 2) + encode_varint(len(plane)) + plane
    tally = Tally()
    run_input(tally, "deep_groups", groups, path)
    assert tally.outcomes == {"error": 1}, tally.crashes
    assert "incomplete or corrupt profile" in _error_message(path)
    run_input(tally, "deep_unknown_fields", b"\x0a" + encode_varint(len(plane)) + plane, path)
    assert tally.crashes == []


def _error_message(path: Path) -> str:
    with pytest.raises(LeakfinderError) as info:
        analyse_file(str(path))
    return info.value.message


def test_a_map_entry_with_an_unknown_field_is_dropped_by_both_decoders(tmp_path):
    """Found by the long run: protobuf drops such an entry from the map; the C scanner once kept it."""
    builder = ProfileBuilder("host0")
    for step in range(4):
        builder.step(step, step * 1000, step * 1000 + 999)
        builder.alloc(step * 1000 + 10, 0x1000 + step * 0x100, 1024, allocator="GPU_0_bfc", op="Mul")
    data = builder.to_bytes()
    fields = wire_fields(data)
    assert fields is not None
    # The value of the stat-metadata entry named tf_op (XPlane field 5, entry field 2): add field 3 after it.
    tf_op = b"\x12\x05tf_op"
    value = next(f for f in fields if f.wire_type == 2 and data[f.body : f.end].endswith(tf_op) and len(f.parents) == 2)
    data = replace_in_message(data, fields, value, value.end, value.end, b"\x18\x01")
    answers = {}
    for decoder in decoder_paths():
        with decoder_path(decoder):
            tally = Tally()
            answers[decoder] = run_input(tally, decoder, data, tmp_path / "host0.xplane.pb")
    assert len(set(answers.values())) == 1
    allocator = json.loads(answers["pure"])["allocators"][0]
    assert allocator["families"] and {family["op"] for family in allocator["families"]} == {""}
