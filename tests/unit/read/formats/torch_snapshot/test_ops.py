"""The op a snapshot allocation's C++ frames name: at::_ops structs as aten names, autograd nodes, primitives."""

from __future__ import annotations

import pytest

from tb_leakfinder.read.formats.torch_snapshot.ops import aten_name, computing_op, node_label


@pytest.mark.parametrize(
    ("struct", "name"),
    [
        # native_functions.yaml's name.overload, joined by `_` in at::_ops.
        ("bmm", "bmm"),
        ("mul_Tensor", "mul"),
        ("pow_Tensor_Scalar", "pow"),
        ("sum_dim_IntList", "sum"),
        ("empty_memory_format", "empty"),
        ("softmax_int", "softmax"),
        ("fill__Scalar", "fill_"),
        ("add__Tensor", "add_"),
        ("to_dtype", "to"),
        ("empty_strided", "empty_strided"),
        ("new_empty_strided", "new_empty_strided"),
        ("_to_copy", "_to_copy"),
        ("native_layer_norm", "native_layer_norm"),
        ("index_select", "index_select"),
    ],
)
def test_at_ops_structs_are_aten_names(struct, name):
    assert aten_name(struct) == name


def test_autograd_nodes_say_what_they_are_the_backward_of():
    assert node_label("BmmBackward0") == "BmmBackward0 (backward of bmm)"
    assert node_label("NativeLayerNormBackward0") == "NativeLayerNormBackward0 (backward of native_layer_norm)"


def test_the_computing_op_is_the_first_that_is_no_primitive():
    # As the real snapshot's AdamW state (torch.zeros_like): empty_strided inside empty_like inside zeros_like.
    frames = [
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)",
        "at::_ops::empty_strided::redispatch(c10::DispatchKeySet, c10::ArrayRef<c10::SymInt>)",
        "at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>)",
        "at::_ops::empty_like::call(at::Tensor const&)",
        "at::_ops::zeros_like::call(at::Tensor const&)",
        "at::_ops::mul_Tensor::call(at::Tensor const&, at::Tensor const&)",
    ]
    assert computing_op(frames) == "aten::zeros_like"
    assert computing_op(frames[:4]) == "aten::empty_strided"  # a primitive alone names itself
    assert computing_op(["PyEval_EvalFrameDefault", "_start"]) == ""


def test_an_autograd_node_around_the_op_names_the_buffer():
    # Newer versions name the node's function `<Node>_apply_functional` (the real snapshot's SubBackward0).
    assert computing_op(["at::_ops::neg::call(a)", "torch::autograd::generated::SubBackward0_apply_functional(x)"]) == (
        "SubBackward0 (backward of sub)"
    )
    frames = ["at::_ops::bmm::call(a, b)", "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)"]
    assert computing_op(frames) == "BmmBackward0 (backward of bmm)"
    # A backtrace line of PyTorch 2.0's cpp_frames text names it the same way.
    line = "frame #7: at::_ops::clone::call(at::Tensor const&) + 0x88 (0x7f0000000007 in /opt/torch/lib/libtorch_cpu.so)"
    assert computing_op([line]) == "aten::clone"
