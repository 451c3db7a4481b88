"""A family's holders and likely cause in words, against tests/cases/holders.json (frontend/tests/cases.test.mjs holds
the tab's words to the same file)."""

from __future__ import annotations

from tb_leakfinder.analyses.words import held_by
from tb_leakfinder.views.text import CAUSE_TITLES, HOLDER_KIND_WORDS, SHAPE_MATCH_WORDS, ambiguous_text
from tb_leakfinder.wire.schema import CauseId, HolderKind
from tests.support.cases import load_cases

CASES = load_cases("holders")


def test_every_holder_kind_and_cause_has_the_words_of_the_case_file():
    assert CASES["holder_kind"] == HOLDER_KIND_WORDS
    assert CASES["cause_title"] == CAUSE_TITLES
    assert set(HOLDER_KIND_WORDS) == set(HolderKind.__args__)
    assert set(CAUSE_TITLES) == set(CauseId.__args__)


def test_held_by_answers_the_case_file():
    wrong = [
        (args, held_by(*args[:6], at_least=args[6]), said)
        for args, said in CASES["held_by"]
        if held_by(*args[:6], at_least=args[6]) != said
    ]
    assert wrong == []


def test_a_match_by_shape_and_ambiguous_buffers_answer_the_case_file():
    assert CASES["shape_match"] == SHAPE_MATCH_WORDS
    wrong = [(args, ambiguous_text(*args), said) for args, said in CASES["ambiguous"] if ambiguous_text(*args) != said]
    assert wrong == []
