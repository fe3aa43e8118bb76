"""Lexical analysis: what the bm25 mode and the hybrid lexical channel match on."""

from __future__ import annotations

import pytest

from sgmem.text import analyze, stem_terms
from sgmem.text.lexical import STOPWORDS, tokenize


def test_tokenize_lowercases_and_drops_punctuation() -> None:
    assert tokenize("Hello, WORLD! It's 2024.") == ["hello", "world", "it's", "2024"]


def test_tokenize_normalises_curly_apostrophes() -> None:
    assert tokenize("Caroline’s dog") == ["caroline's", "dog"]


def test_tokenize_keeps_unicode_letters_and_splits_underscores() -> None:
    assert tokenize("Zürich café snake_case") == ["zürich", "café", "snake", "case"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("marathons", "marathon"),
        ("running", "runs"),
        ("adopted", "adopting"),
        ("Caroline's", "Caroline"),
        ("CATS", "cat"),
    ],
)
def test_inflections_and_possessives_match(a: str, b: str) -> None:
    assert analyze(a) == analyze(b) != []


@pytest.mark.parametrize("filler", ["the", "what", "is", "yeah", "okay", "wow", "thanks", "really", "I'm"])
def test_stopwords_and_chat_fillers_carry_no_terms(filler: str) -> None:
    assert analyze(filler) == []


def test_question_words_are_dropped_but_content_words_kept() -> None:
    terms = analyze("What is the name of my cat?")
    assert terms == stem_terms(["name", "cat"])


def test_stopword_list_is_lowercase() -> None:
    assert all(w == w.lower() for w in STOPWORDS)


def test_analyze_of_blank_or_punctuation_is_empty() -> None:
    assert analyze("") == []
    assert analyze("?!... ---") == []
