"""capture/torch_profiler.py without PyTorch: which torch.compile check the line marks use on each PyTorch."""

from __future__ import annotations

import types

from tb_leakfinder.capture import torch_profiler


def _torch(**parts: types.SimpleNamespace) -> types.ModuleType:
    torch = types.ModuleType("torch")
    for name, part in parts.items():
        setattr(torch, name, part)
    return torch


def test_the_line_marks_ask_torch_compiler_where_it_has_it():
    def compiler_says() -> bool:
        return True

    torch = _torch(compiler=types.SimpleNamespace(is_compiling=compiler_says), _dynamo=types.SimpleNamespace(is_compiling=bool))
    assert torch_profiler._is_compiling(torch) is compiler_says


def test_before_pytorch_2_3_they_ask_dynamo():
    def dynamo_says() -> bool:
        return True

    torch = _torch(compiler=types.SimpleNamespace(), _dynamo=types.SimpleNamespace(is_compiling=dynamo_says))
    assert torch_profiler._is_compiling(torch) is dynamo_says


def test_without_torch_compile_nothing_is_ever_compiling():
    assert torch_profiler._is_compiling(_torch())() is False
