"""XSpace's own codes in neutral terms: TensorFlow's DataType enum as dtype names, shapes without a TPU's
layout, and each allocator's memory id as a device label ('GPU_0_bfc' -> 'GPU:0'), with whether it hands out
host RAM or records only part of what it allocates."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from tb_leakfinder.model.memory import ALLOC, NO_ALLOCATOR_KEY, AllocatorInfo, HostProfile, MemoryEvents
from tb_leakfinder.read.formats.xplane.names import MKLCPU_ID

# TensorFlow's DataType enum (types.proto), as memory events carry it.
_TF_DTYPES = {
    1: "float",
    2: "double",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    11: "qint8",
    12: "quint8",
    13: "qint32",
    14: "bfloat16",
    15: "qint16",
    16: "quint16",
    17: "uint16",
    18: "complex128",
    19: "half",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
    24: "float8_e5m2",
    25: "float8_e4m3fn",
    29: "int4",
    30: "uint4",
}


def dtype_name(code: int) -> str:
    """The TF DataType's name; "" when the event has none (-1) or says DT_INVALID (0), as PJRT runtimes do."""
    if code <= 0:
        return ""
    return _TF_DTYPES.get(code, f"dtype({code})")


# Pinned host memory of TF's and PJRT's GPU clients: host RAM, listed after the devices.
HOST_PINNED_IDS = ("gpu_host_bfc", "xla_gpu_host_bfc")
_GPU_BFC = re.compile(r"GPU_(\d+)_bfc")
_DEVICE_PLANE = re.compile(r"/device:(TPU|GPU):(\d+)")


def allocator_label(memory_id: str, device_planes: list[str]) -> str:
    """'TPU:2' or 'GPU:0' when the memory id names a device plane of the profile ('2', 'GPU_0_bfc'), else the id."""
    if not memory_id:
        return NO_ALLOCATOR_KEY
    gpu = _GPU_BFC.fullmatch(memory_id)
    ordinal = memory_id if memory_id.isdecimal() else gpu.group(1) if gpu else None
    for plane in device_planes:
        device = _DEVICE_PLANE.fullmatch(plane)
        if device and ordinal is not None and int(device.group(2)) == int(ordinal) and (not gpu or device.group(1) == "GPU"):
            return f"{device.group(1)}:{device.group(2)}"
    return memory_id


def spoken_name(memory_id: str, label: str) -> str:
    """What a verdict calls an allocator whose label is its raw memory id: the memory it hands out, then the id that
    XProf's Memory Profile lists it by ("CPU allocator (bfc_cpu_allocator_for_gpu)", "GPU:0 allocator (GPU_0_bfc)",
    "pinned host memory allocator (gpu_host_bfc)"); "" when the label already names a device ("GPU:0") or the id
    says nothing more."""
    if label != memory_id or not memory_id:
        return ""
    gpu = _GPU_BFC.fullmatch(memory_id)
    if gpu:
        kind = f"GPU:{gpu.group(1)}"
    elif memory_id in HOST_PINNED_IDS:
        kind = "pinned host memory"
    elif "cpu" in memory_id.lower():
        kind = "CPU"
    elif memory_id.isdecimal():
        return f"device {memory_id} allocator"  # an index_on_host or device_ordinal without its device plane
    else:
        return ""
    return f"{kind} allocator" + ("" if memory_id.lower() == kind.lower() else f" ({memory_id})")


# Memory ids only one framework's runtime writes: TensorFlow's CPU allocators (BFC, oneDNN's) and its GPU client's
# pinned host memory; PJRT's (JAX's) GPU client's pinned host memory.
TENSORFLOW_IDS = frozenset({"bfc_cpu_allocator_for_gpu", MKLCPU_ID, "gpu_host_bfc"})
PJRT_IDS = frozenset({"xla_gpu_host_bfc"})
# JAX names the programs it compiles by the transformation and the function: jit_train_step, pmap_update.
_JAX_MODULE = re.compile(r"(?:jit|pmap)_.*")
TENSORFLOW, JAX = "TensorFlow", "JAX"


def framework_of(events: MemoryEvents, modules: Iterable[str]) -> str:
    """TensorFlow or JAX, when the file says which, "" when it does not (or says both): TensorFlow names its
    buffers' ops (tf_op; PJRT writes placeholders, blanked before) and has allocators of its own; JAX's programs
    are named jit_<function> or pmap_<function> (`modules`: the profile's HLO modules, "<module>(<id>)") and
    PJRT's GPU client has its own pinned host memory."""
    ids = set(events.allocator_names)
    said = set()
    # Two masks and no gather: selecting the allocations' ops first cost 6 ms of a 1M-event profile's read.
    if ids & TENSORFLOW_IDS or bool(np.any((events.op != 0) & (events.kind == ALLOC))):
        said.add(TENSORFLOW)
    if ids & PJRT_IDS or any(_JAX_MODULE.fullmatch(name) for name in modules):
        said.add(JAX)
    return said.pop() if len(said) == 1 else ""


def is_host_memory(memory_id: str) -> bool:
    """Whether an allocator hands out host RAM (pinned for a GPU, or a CPU allocator), not device memory."""
    return memory_id in HOST_PINNED_IDS or "cpu" in memory_id.lower()


# The widest spread of dtype codes that one table covers (TF's enum has a few dozen).
DENSE_CODE_SPAN = 1 << 16
MKLCPU_NOTE = (
    "mklcpu records only large blocks: small buffers are not seen; set TF_CPU_ALLOCATOR_USE_BFC=true "
    "before TensorFlow is imported to record every allocation"
)


# What PJRT writes where it names nothing: "(null)" for an op, shape or region, and "dummy" for an output's op.
NULL_NAME = "(null)"
PLACEHOLDER_OPS = (NULL_NAME, "dummy")


def _unnamed_as_empty(events: MemoryEvents) -> MemoryEvents:
    """Placeholders as "" (none recorded), so that the attribution names those buffers by their program."""

    def blank(values: np.ndarray, placeholders: tuple[str, ...]) -> np.ndarray:
        codes = [i for i, text in enumerate(events.strings) if text in placeholders]
        return np.where(np.isin(values, codes), 0, values).astype(values.dtype) if codes else values

    return replace(
        events,
        op=blank(events.op, PLACEHOLDER_OPS),
        shape=blank(events.shape, (NULL_NAME,)),
        region=blank(events.region, (NULL_NAME,)),
    )


# A TPU runtime's shape carries its layout: `f32[5,1024,1024,256]{3,2,1,0:T(8,128)}`; a tuple's elements each their own.
_LAYOUT = re.compile(r"\{[^{}]*\}")


def _without_layouts(events: MemoryEvents) -> MemoryEvents:
    """Shapes as the program declares them, without the device layout (which tells apart no buffer a user
    knows), so that `f32[8]{0}` and `f32[8]` are one shape."""
    strings = events.strings
    # Most profiles have no layout in any string: then no event needs looking at (a count over every event).
    if not len(events.shape) or not any("{" in text for text in strings):
        return events
    used = np.flatnonzero(np.bincount(events.shape, minlength=len(strings)))
    laid_out = [code for code in used.tolist() if "{" in strings[code]]
    if not laid_out:
        return events
    index = {s: i for i, s in enumerate(strings)}
    table = np.arange(len(strings), dtype=events.shape.dtype)
    for code in laid_out:
        bare = _LAYOUT.sub("", strings[code])
        if bare not in index:
            index[bare] = len(strings)
            strings.append(bare)
        table[code] = index[bare]
    return replace(events, shape=table[events.shape])


def in_neutral_terms(profile: HostProfile) -> HostProfile:
    """The profile as the model speaks: dtype names (interned with the other strings) instead of TF's enum,
    and a label for each allocator. Both decoders end with it, so they agree."""
    events = profile.events
    strings = events.strings
    codes = events.dtype
    if len(codes):
        lo, hi = int(codes.min()), int(codes.max())
        # TF's enum is a few small codes: a table indexed by code, not a sort of every event (np.unique), which
        # cost 8% of a cold analysis of a 1M-event profile. Codes spread wider are corrupt: sorted, then.
        dense = hi - lo < DENSE_CODE_SPAN
        # Offsets made once in numpy's index type: the count and the table's lookup below would each widen them.
        offsets = np.subtract(codes, lo, dtype=np.intp) if dense else codes
        present = np.flatnonzero(np.bincount(offsets, minlength=hi - lo + 1)) + lo if dense else np.unique(codes)
        index = {s: i for i, s in enumerate(strings)}
        names = []
        for code in present.tolist():
            name = dtype_name(int(code))
            if name not in index:
                index[name] = len(strings)
                strings.append(name)
            names.append(index[name])
        if dense:
            table = np.zeros(hi - lo + 1, np.int32)
            table[present - lo] = names
            dtype = table[offsets]
        else:
            dtype = np.asarray(names, np.int32)[np.searchsorted(present, codes)]
        events = replace(events, dtype=dtype)
    events = _without_layouts(_unnamed_as_empty(events))
    allocators = {}
    for memory_id in events.allocator_names:
        label = allocator_label(memory_id, profile.device_planes)
        note = MKLCPU_NOTE if memory_id == MKLCPU_ID else None
        allocators[memory_id] = AllocatorInfo(label, is_host_memory(memory_id), note, spoken=spoken_name(memory_id, label))
    framework = framework_of(events, profile.hlo_protos)
    return replace(profile, events=events, allocators=allocators, framework=framework)
