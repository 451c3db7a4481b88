"""oneDNN's `mklcpu` allocator records only large blocks: its no-leak report is inconclusive, a leak it shows stands.

Real captures with oneDNN on and off are in tests/integration/test_capture.py; these profiles are synthesized, with the
memory id TensorFlow 2.21 gives mklcpu's events.
"""

from __future__ import annotations

import pathlib

import tb_leakfinder
from tb_leakfinder.read.formats.xplane.labels import MKLCPU_NOTE
from tb_leakfinder.testing.xspace_builder import ProfileBuilder

KIB = 1024
STEP_PS = 1_000_000
BLOCK = 256 * KIB  # mklcpu's smallest recorded block in TF 2.21's captures


def profile(path: pathlib.Path, allocator: str, steps: int = 12, leak: bool = False) -> dict:
    """A loop of one freed large temporary per step, and one more kept per step when `leak`; its host's report."""
    b = ProfileBuilder()
    for step in range(steps):
        t0 = step * STEP_PS
        b.step(step, t0, t0 + STEP_PS - 1)
        tmp = 0x10_0000 + step * 2 * BLOCK
        b.alloc(t0 + 10, tmp, BLOCK, allocator=allocator, op="_MklMatMul", shape="[128,512]")
        if leak:
            b.alloc(t0 + 20, tmp + BLOCK, 2 * BLOCK, allocator=allocator, op="Mul", shape="[256,512]")
        b.free(t0 + 30, tmp, BLOCK, allocator=allocator)
    (path / allocator).mkdir()
    file = path / allocator / "host0.xplane.pb"
    b.write(file)
    (run,) = tb_leakfinder.analyze(str(file), cache=False)["runs"]
    (host,) = run["hosts"]
    return host


def test_no_leak_in_large_blocks_is_inconclusive(tmp_path):
    host = profile(tmp_path, "mklcpu")
    clean = profile(tmp_path, "bfc_cpu_allocator_for_gpu")
    (allocator,) = host["allocators"]
    assert allocator["warnings"] == [MKLCPU_NOTE]
    assert MKLCPU_NOTE.startswith("mklcpu records only large blocks: small buffers are not seen")
    assert "TF_CPU_ALLOCATOR_USE_BFC=true" in MKLCPU_NOTE
    assert (allocator["verdict"], host["verdict"]) == ("inconclusive", "inconclusive")
    # The rest is decide()'s no-leak reason, as another allocator would have it.
    among = "Among the large blocks: No leak in TensorFlow's CPU allocator (mklcpu): "
    assert host["reason"].startswith(f"Inconclusive: {MKLCPU_NOTE}. {among}")
    # The same words as the clean profile's, but each says whose memory it judged.
    judged = host["reason"].removeprefix(f"Inconclusive: {MKLCPU_NOTE}. Among the large blocks: ")
    assert judged == clean["reason"].replace("bfc_cpu_allocator_for_gpu", "mklcpu")


def test_the_same_profile_from_bfc_is_clean(tmp_path):
    host = profile(tmp_path, "bfc_cpu_allocator_for_gpu")
    assert host["verdict"] == "no_leak"
    assert host["allocators"][0]["warnings"] == []
    assert "mklcpu" not in host["reason"]


def test_a_leak_in_large_blocks_stays_a_leak(tmp_path):
    host = profile(tmp_path, "mklcpu", leak=True)
    (allocator,) = host["allocators"]
    assert host["verdict"] == "leak"
    assert host["reason"].startswith("Leak in TensorFlow's CPU allocator (mklcpu): +512 KiB per step from Mul [256,512] output")
    assert host["reason"].endswith(f"markers). {MKLCPU_NOTE}.")
    assert allocator["warnings"] == [MKLCPU_NOTE]
    assert allocator["forecast"] is not None


def test_too_few_steps_stays_inconclusive_with_the_note(tmp_path):
    host = profile(tmp_path, "mklcpu", steps=2, leak=True)
    assert host["verdict"] == "inconclusive"
    assert host["reason"].startswith("Inconclusive in TensorFlow's CPU allocator (mklcpu): 2 steps from step_num markers")
    assert host["reason"].endswith(f". {MKLCPU_NOTE}.")
