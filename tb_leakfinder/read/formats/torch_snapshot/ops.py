"""The op that made a snapshot allocation, from its C++ frames.

A snapshot recorded with C++ stacks (`stacks="all"`, or PyTorch 2.0's `cpp_frames` backtrace text) names the
dispatcher's entry of each op it passes through, `at::_ops::<op>_<overload>::call` (or `::redispatch`), and
for a backward-pass buffer the autograd node that ran it, `torch::autograd::generated::BmmBackward0::apply`
(`BmmBackward0_apply_functional` in newer versions). Innermost first, the first op that is not an allocation
primitive (`empty`, `empty_strided`, `empty_like`, `new_empty…`) computes the buffer: `aten::clone` allocates
through `aten::empty_strided`, and is the one named. An autograd node around that op names it instead, as
"BmmBackward0 (backward of bmm)": its own op is a step of the backward of the forward op the node is named for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_OP_FRAME = re.compile(r"at::_ops::(?P<op>[A-Za-z0-9_]+)::(?:call|redispatch)\b")
_NODE_FRAME = re.compile(r"torch::autograd::generated::(?P<node>[A-Za-z0-9_]+?Backward\d*)(?:::apply\b|_apply_functional\b)")
_NODE_SUFFIX = re.compile(r"Backward\d*$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# The lower-case words an overload's name opens with (native_functions.yaml: `sum.dim_IntList`, `empty.memory_format`,
# `softmax.int`); an overload of capitals (`mul.Tensor`, `pow.Tensor_Scalar`) tells itself.
_OVERLOAD_WORDS = frozenset({"dim", "int", "out", "memory", "dtype", "device", "other", "names", "self", "correction", "using"})
PRIMITIVES = frozenset({"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"})
ATEN = "aten::"


def aten_name(struct: str) -> str:
    """`mul_Tensor` -> `mul`, `sum_dim_IntList` -> `sum`, `fill__Scalar` -> `fill_`, `empty_strided` -> itself.

    `at::_ops` joins an op's name and its overload with `_`; the overload is where a word of capitals, or one of
    the lower-case words overloads open with, begins (after the name's first word).
    """
    words = struct.split("_")
    for k in range(1, len(words)):
        word = words[k]
        if word[:1].isupper() or (word in _OVERLOAD_WORDS and words[k - 1]):
            return "_".join(words[:k])
    return struct


def node_label(node: str) -> str:
    """'BmmBackward0' -> 'BmmBackward0 (backward of bmm)', 'NativeLayerNormBackward0' -> '… of native_layer_norm'."""
    forward = _CAMEL.sub("_", _NODE_SUFFIX.sub("", node)).lower()
    return f"{node} (backward of {forward})" if forward else node


def computing_op(names: Iterable[str]) -> str:
    """The op that made an allocation, from its C++ frames' names (innermost first); "" when none names one."""
    primitive = ""
    op = ""
    for name in names:
        if not op:
            found = _OP_FRAME.search(name)
            if found is not None:
                aten = aten_name(found["op"])
                if aten not in PRIMITIVES:
                    op = ATEN + aten
                elif not primitive:
                    primitive = ATEN + aten
                continue
        node = _NODE_FRAME.search(name)
        if node is not None:
            return node_label(node["node"])
    return op or primitive
