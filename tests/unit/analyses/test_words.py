"""How figures read in sentences and tables (analyses/words.py)."""

from __future__ import annotations

import pytest

from tb_leakfinder.analyses.words import (
    format_duration_ps,
    format_fraction,
    held_by,
    module_base_name,
    normalize_name,
    short_program_ids,
)


@pytest.mark.parametrize(
    ("ps", "text"),
    [(100_000_000_000, "100 ms"), (1_500_000_000_000, "1.5 s"), (3113 * 10**12, "52 min"), (5 * 3600 * 10**12, "5 h")],
)
def test_durations_read_naturally(ps, text):
    assert format_duration_ps(ps) == text


@pytest.mark.parametrize(("f", "text"), [(0.64, "64%"), (0.025, "2.5%"), (0.00025, "< 0.1%"), (0.0, "0.0%"), (1.0, "100%")])
def test_fractions_read_as_the_tab_shows_them(f, text):
    assert format_fraction(f) == text


@pytest.mark.parametrize(
    ("text", "short"),
    [
        ("output 0 of jit_f(8213770315642958113)", "output 0 of jit_f(…8113)"),
        ("in jit_g(-6213431587374541170), no buffer of this size", "in jit_g(…1170), no buffer of this size"),
        ("output 1 of jit_train_step(12)", "output 1 of jit_train_step(12)"),  # a GPU's compilation order: short already
        ("f32[5,1024,1024,256] (1234567890)", "f32[5,1024,1024,256] (1234567890)"),  # no program's name before it
    ],
)
def test_long_program_ids_are_cut_to_their_last_digits(text, short):
    assert short_program_ids(text) == short


@pytest.mark.parametrize(
    ("name", "normal"),
    [
        ("Mul_1", "Mul"),
        ("model/dense_2/MatMul_3", "model/dense/MatMul"),
        ("fusion.12", "fusion"),
        ("Conv2D", "Conv2D"),
        ("add.5/Relu_10", "add/Relu"),
        ("x_y", "x_y"),
        ("output 0 of jit_train_step(12)", "output 0 of jit_train_step"),  # program ids follow compilation order
        ("temporaries (2 buffers) of jit_f(3)", "temporaries (2 buffers) of jit_f"),
        ("output 0 of jit_f(…8113)", "output 0 of jit_f"),  # a TPU's id as a report's label cuts it
    ],
)
def test_normalize_name(name, normal):
    assert normalize_name(name) == normal


def test_module_base_name():
    assert module_base_name("jit_train_step(10)") == "jit_train_step"
    assert module_base_name("jit_f") == "jit_f"


def test_a_holder_is_said_in_tensor_bytes_as_its_family_with_chunks_beside_only_where_they_differ():
    # Three of a BFC allocator's 1 MiB tensors, each in a chunk rounded up to 1.125 MiB.
    tensor, chunks = 3 * (1 << 20), 3 * 1179648
    assert held_by("`kept`", "list", 3, 4, tensor, chunks) == (
        "held by `kept`: list, 3 of 4 never-freed buffers, 3 MiB (3.4 MiB in chunks)"
    )
    one = held_by("`kept`", "", 1, 1, tensor, tensor, at_least=True)
    assert one == "held by `kept`: at least 1 of 1 never-freed buffer, 3 MiB"
