"""Fuzzing the device memory profile reader: every hostile `.prof` ends in a report or a LeakfinderError.

Seeds are pprof Profiles built as JAX writes them (tb_leakfinder.testing.pprof_builder): long stacks of
library and user frames, executables, several devices, inlined lines, time_nanos. The XSpace fuzz's
structure-aware mutator (tests/support/fuzzing.py) rewrites the Profile's wire bytes, which are then
gzipped, or, more rarely, the gzip bytes themselves. Each input goes through what the plugin runs for a
host of this format: the registry's read, the analysis, the report, timeline and buffer JSON.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tb_leakfinder.read.formats.pprof import reader
from tb_leakfinder.read.formats.pprof.format import HOST
from tb_leakfinder.testing.pprof_builder import PprofBuilder
from tests.support.fuzzing import (
    MAX_RSS_GROWTH_BYTES,
    MAX_SECONDS_PER_INPUT,
    ROOT,
    Mutator,
    Seed,
    Tally,
    analyse_registry_file,
    peak_rss_bytes,
    run_guarded,
)

CI_SEED = 20261201
CI_INPUTS = 1200
# Inputs whose gzip bytes, not the Profile inside, are mutated.
GZIP_SHARE = 0.1
SITE = "/usr/lib/python3.11/site-packages/jax/_src"


def _jax_like() -> PprofBuilder:
    b = PprofBuilder(time_nanos=1_764_000_000_000_000_000)
    library = [(f"{SITE}/{name}.py", name, 10 * k + 1, 10 * k + 5) for k, name in enumerate(("pjit", "core", "dispatch"))]
    for step in range(6):
        user = [
            ("/work/train.py", "make_batch", 12, 14),
            ("/work/train.py", "main", 20, 20 + step),
            ("/work/train.py", "<module>", 1, 40),
        ]
        b.sample(1 << 20, library + user, count=step + 1, device=f"cpu:{step % 2}")
    b.sample(0, library, kind="executable")
    b.sample(4096, library[1:], kind="executable", device="cuda:0")
    return b


def _seeds() -> list[Seed]:
    jax_like = _jax_like()
    inlined = _jax_like()
    extra = inlined.message.location[0].line.add()
    extra.function_id, extra.line = 2, 99
    odd = PprofBuilder(sample_types=[("space", "bytes")])
    odd.sample(0, [("<frozen runpy>", "_run_code", 0, 88)], values=[1 << 62], device="", kind="")
    odd.sample(5, (), values=[])
    # Issue 31: a stack naming one location of many lines many times over; its innermost frames are what is read.
    deep = PprofBuilder()
    deep.sample(1 << 20, [("/work/train.py", "f", 1, 2)])
    for k in range(600):
        line = deep.message.location[0].line.add()
        line.function_id, line.line = 1, k + 3
    deep.message.sample[0].location_id.extend([1] * 50)
    return [
        Seed("jax_like", jax_like.to_bytes()),
        Seed("deep_location", deep.to_bytes()),
        Seed("inlined", inlined.to_bytes()),
        Seed("odd", odd.to_bytes()),
        Seed("empty_snapshot", PprofBuilder().to_bytes()),
    ]


def fuzz_inputs(seed: int, count: int):
    rng = random.Random(seed)
    seeds = _seeds()
    mutator = Mutator(seeds, rng)
    gzipped = Mutator([Seed(s.name, zlib.compress(s.data, 6, 16 + zlib.MAX_WBITS)) for s in seeds], rng)
    for i in range(count):
        if rng.random() < GZIP_SHARE:
            name, data = gzipped.next()
            yield f"#{i} gzip:{name}", data
        else:
            name, data = mutator.next()
            yield f"#{i} {name}", zlib.compress(data, 1, 16 + zlib.MAX_WBITS)


def analyse_snapshot(path: str) -> str:
    """What the plugin answers for one snapshot: through the registry, the report, timeline and buffers."""
    return analyse_registry_file(path, HOST)


def run_snapshot(tally: Tally, name: str, data: bytes, path: Path) -> str:
    path.write_bytes(data)
    return run_guarded(tally, name, lambda: analyse_snapshot(str(path)), lambda message: str(path) in message)


def test_seeds_analyse_cleanly(tmp_path):
    tally = Tally()
    for seed in _seeds():
        assert seed.fields or not seed.data
        run_snapshot(tally, seed.name, zlib.compress(seed.data, 6, 16 + zlib.MAX_WBITS), tmp_path / "seed.prof")
    assert tally.crashes == []
    assert tally.outcomes == {"report": len(_seeds())}


def test_fuzzed_snapshots_end_in_report_or_project_error(tmp_path):
    rss_before = peak_rss_bytes()
    tally = Tally()
    for name, data in fuzz_inputs(CI_SEED, CI_INPUTS):
        run_snapshot(tally, name, data, tmp_path / "f.prof")
    assert (tally.inputs, tally.crashes[:10]) == (CI_INPUTS, [])
    assert tally.max_seconds < MAX_SECONDS_PER_INPUT, tally.slowest
    # Neither so gentle that nothing fails nor so rough that nothing parses (measured: about 1 in 6 reports).
    assert min(tally.outcomes["report"], tally.outcomes["error"]) >= CI_INPUTS // 10, tally.outcomes
    assert peak_rss_bytes() - rss_before < MAX_RSS_GROWTH_BYTES


def _bomb(decompressed_bytes: int) -> bytes:
    """gzip members of zeros, one after another: `decompressed_bytes` of them from a few hundred KB."""
    member = zlib.compress(bytes(16 << 20), 9, 16 + zlib.MAX_WBITS)
    return member * (decompressed_bytes // (16 << 20))


@pytest.mark.parametrize("gib", [1, 8])
def test_a_gzip_bomb_is_the_project_error_under_a_memory_limit(tmp_path, gib):
    """Under an address-space limit 1 GiB above what the process holds, a bomb of many GiB is refused, not a
    MemoryError."""
    path = tmp_path / "bomb.prof"
    path.write_bytes(_bomb(gib << 30))
    assert path.stat().st_size < reader.MAX_FILE_BYTES
    script = f"""
import json, resource, sys
sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
from tests.fuzz.test_fuzz_pprof import Tally, run_snapshot
vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), resource.RLIM_INFINITY))
path = Path({str(path)!r})
tally = Tally()
answer = run_snapshot(tally, "bomb", path.read_bytes(), path)
print(json.dumps({{"outcomes": dict(tally.outcomes), "crashes": tally.crashes}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"outcomes": {"error": 1}, "crashes": []}
