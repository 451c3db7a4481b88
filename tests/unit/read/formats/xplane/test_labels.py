"""XSpace's labels: allocators from memory ids and device planes, host memory, TF dtypes as names."""

from __future__ import annotations

import pytest

from tb_leakfinder.model.memory import ALLOC, NO_ALLOCATOR_KEY
from tb_leakfinder.read.formats.xplane.labels import (
    JAX,
    TENSORFLOW,
    allocator_label,
    dtype_name,
    in_neutral_terms,
    is_host_memory,
    spoken_name,
)
from tests.support.columns import host_profile, memory_events

TPU_PLANES = [f"/device:TPU:{n}" for n in range(4)]
GPU_PLANES = ["/device:GPU:0", "/device:GPU:1"]


@pytest.mark.parametrize(
    ("memory_id", "planes", "label"),
    [
        ("2", TPU_PLANES, "TPU:2"),  # index_on_host, as PJRT writes it
        ("1", GPU_PLANES, "GPU:1"),  # device_ordinal
        ("GPU_0_bfc", GPU_PLANES, "GPU:0"),
        ("GPU_0_bfc", TPU_PLANES, "GPU_0_bfc"),  # a GPU allocator is never labelled as a TPU
        ("GPU_7_bfc", GPU_PLANES, "GPU_7_bfc"),  # no such plane
        ("7", TPU_PLANES, "7"),
        ("2", [], "2"),
        ("gpu_host_bfc", GPU_PLANES, "gpu_host_bfc"),
        ("bfc_cpu_allocator_for_gpu", [], "bfc_cpu_allocator_for_gpu"),
        ("", TPU_PLANES, NO_ALLOCATOR_KEY),
        ("0", ["/device:TPU:0 garbage", "/device:CUSTOM:0", "/host:CPU"], "0"),
    ],
)
def test_allocator_label(memory_id, planes, label):
    assert allocator_label(memory_id, planes) == label


def test_host_memory_is_pinned_host_or_cpu_allocators():
    assert is_host_memory("gpu_host_bfc") and is_host_memory("xla_gpu_host_bfc")
    assert is_host_memory("bfc_cpu_allocator_for_gpu")
    assert not any(is_host_memory(m) for m in ("0", "GPU_0_bfc", "", "hbm"))


def test_dtype_invalid_or_absent_is_blank():
    assert dtype_name(-1) == dtype_name(0) == ""
    assert dtype_name(1) == "float" and dtype_name(99) == "dtype(99)"


@pytest.mark.parametrize(
    "codes",
    [[-1, 1, 1, 0, 3, 9], [1, 2**30, -1, 1]],  # TF's few small codes (one table), and a corrupt spread (sorted)
)
def test_dtype_codes_become_interned_names(codes):
    events = memory_events(list(range(len(codes))), ALLOC, [0x10 * (k + 1) for k in range(len(codes))], 4, dtype=codes)
    neutral = in_neutral_terms(host_profile(events)).events
    assert [neutral.strings[i] for i in neutral.dtype] == [dtype_name(c) for c in codes]
    assert neutral.strings[0] == "" and len(set(neutral.strings)) == len(neutral.strings)


def test_pjrts_placeholders_name_nothing():
    # PJRT writes "(null)" where it names nothing, and "dummy" as the op of a program's outputs.
    events = memory_events(
        [0, 1, 2], ALLOC, [0x10, 0x20, 0x30], 4, op=["(null)", "dummy", "MatMul"], shape=["(null)", "[2]", "[4]"]
    )
    neutral = in_neutral_terms(host_profile(events)).events
    assert [neutral.strings[i] for i in neutral.op] == ["", "", "MatMul"]
    assert [neutral.strings[i] for i in neutral.shape] == ["", "[2]", "[4]"]


def test_a_tpu_shape_loses_its_layout_and_joins_the_same_shape_without_one():
    shapes = ["f32[5,1024,1024,256]{3,2,1,0:T(8,128)}", "f32[5,1024,1024,256]", "(f32[8]{0}, s32[]{})", "[128,1024]", ""]
    events = memory_events(list(range(len(shapes))), ALLOC, [0x10 * (k + 1) for k in range(len(shapes))], 4, shape=shapes)
    neutral = in_neutral_terms(host_profile(events)).events
    assert [neutral.strings[i] for i in neutral.shape] == [
        "f32[5,1024,1024,256]",
        "f32[5,1024,1024,256]",
        "(f32[8], s32[])",
        "[128,1024]",
        "",
    ]
    assert neutral.shape[0] == neutral.shape[1]  # one shape: one group


@pytest.mark.parametrize(
    ("memory_id", "planes", "spoken"),
    [
        ("bfc_cpu_allocator_for_gpu", [], "CPU allocator (bfc_cpu_allocator_for_gpu)"),  # TF's CPU allocator with BFC
        ("mklcpu", [], "CPU allocator (mklcpu)"),  # TF's oneDNN CPU allocator
        ("cpu", [], "CPU allocator"),  # the id says no more than the words
        ("gpu_host_bfc", GPU_PLANES, "pinned host memory allocator (gpu_host_bfc)"),
        ("xla_gpu_host_bfc", GPU_PLANES, "pinned host memory allocator (xla_gpu_host_bfc)"),
        ("GPU_7_bfc", GPU_PLANES, "GPU:7 allocator (GPU_7_bfc)"),  # no plane of that GPU: its ordinal and its id
        ("GPU_0_bfc", GPU_PLANES, ""),  # labelled by its device plane, GPU:0: the label says it
        ("2", TPU_PLANES, ""),
        ("2", [], "device 2 allocator"),
        ("hbm", [], ""),  # an id that says nothing more is said as it is
    ],
)
def test_a_verdict_names_an_allocator_by_its_memory_and_the_id_xprof_lists(memory_id, planes, spoken):
    assert spoken_name(memory_id, allocator_label(memory_id, planes)) == spoken


def _framework(allocator: str, op: str = "", modules: tuple[str, ...] = ()) -> str:
    events = memory_events([0, 1], ALLOC, [0x10, 0x20], 4, allocator=allocator, op=op)
    protos = {name: b"" for name in modules}
    return in_neutral_terms(host_profile(events, hlo_protos=protos)).framework


def test_the_framework_is_what_the_file_says():
    # TensorFlow names its buffers' ops and has allocators of its own; JAX names its programs jit_/pmap_<function>,
    # and PJRT's GPU client has its own pinned host memory. PJRT's placeholder op says nothing.
    assert _framework("GPU_0_bfc", op="MatMul") == TENSORFLOW
    assert _framework("bfc_cpu_allocator_for_gpu") == _framework("gpu_host_bfc") == TENSORFLOW
    assert _framework("GPU_0_bfc", op="dummy", modules=("jit_train_step(12)",)) == JAX
    assert _framework("xla_gpu_host_bfc") == _framework("0", modules=("pmap_update(3)",)) == JAX
    # Nothing said, or both (TensorFlow and JAX in one process): not told.
    assert _framework("GPU_0_bfc", op="dummy") == _framework("0", modules=("a_inference_step_7(1)",)) == ""
    assert _framework("GPU_0_bfc", op="MatMul", modules=("jit_train_step(12)",)) == ""
