"""Offline sentence splitting: the sentences a user's message is indexed by."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sgmem.text import split_sentences
from sgmem.text.segment import sentence_spans


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # abbreviations do not end a sentence
        (
            "Dr. Smith went to Washington. He arrived at 5 p.m. yesterday. Then he left.",
            ["Dr. Smith went to Washington.", "He arrived at 5 p.m. yesterday.", "Then he left."],
        ),
        (
            "e.g. this is an example, i.e. a sample. Mr. Jones agreed.",
            ["e.g. this is an example, i.e. a sample.", "Mr. Jones agreed."],
        ),
        ("U.S.A. is big. The U.K. is small.", ["U.S.A. is big.", "The U.K. is small."]),
        # decimals and money
        ("It costs $3.50 today. Pi is 3.14159 roughly.", ["It costs $3.50 today.", "Pi is 3.14159 roughly."]),
        # URLs and e-mail addresses are never cut, a trailing full stop still ends the sentence
        (
            "See https://example.com/a?b=1&c=2. Then mail me at bob.smith@example.org! Thanks.",
            ["See https://example.com/a?b=1&c=2.", "Then mail me at bob.smith@example.org!", "Thanks."],
        ),
        ("Visit www.example.com. It rocks.", ["Visit www.example.com.", "It rocks."]),
        # emoji
        ("I love it 😍! Great 🎉 really. 👍", ["I love it 😍!", "Great 🎉 really.", "👍"]),
        # no punctuation at all: one sentence
        ("hello there how are you", ["hello there how are you"]),
        # line breaks end sentences in chat text
        ("first line\nsecond line\n\nthird para", ["first line", "second line", "third para"]),
        # ellipses and mixed terminators
        ("Wait... what? Really?! Yes.", ["Wait... what?", "Really?!", "Yes."]),
        # quotes
        ('He said "Go home." Then he left.', ['He said "Go home."', "Then he left."]),
        # surrounding white space is not part of a sentence
        ("  leading spaces. trailing  ", ["leading spaces.", "trailing"]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n"])
def test_blank_text_has_no_sentences(text: str) -> None:
    assert split_sentences(text) == []
    assert sentence_spans(text) == ()


def test_url_query_string_with_question_mark_is_not_split() -> None:
    url = "https://shop.example.com/search?q=cat+food&page=2"
    sents = split_sentences(f"I bought it at {url} yesterday. It was cheap.")
    assert any(url in s for s in sents)
    assert len(sents) == 2


def test_spans_index_the_original_text() -> None:
    text = "Dr. Who paid $3.50.\nSee https://x.io/a?b=1 now!  Bye 👋"
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == split_sentences(text)
    assert all(a < b for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:], strict=False))


_PIECES = list("abc XYZ.?!\n,;:'\"()0123456789$%-/@é😀…") + ["Dr.", "p.m.", "https://x.io/a?b=1", "e.g.", "  ", "..."]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_sentences_are_exact_ordered_substrings_that_lose_nothing(text: str) -> None:
    spans = sentence_spans(text)
    prev_end = 0
    for a, b in spans:
        assert prev_end <= a < b <= len(text)
        piece = text[a:b]
        assert piece == piece.strip()
        prev_end = b
    # every non-space character of the message is in exactly one sentence
    kept = "".join(text[a:b] for a, b in spans)
    assert re.sub(r"\s", "", kept) == re.sub(r"\s", "", text)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_any_unicode_text_splits_into_substrings(text: str) -> None:
    for s in split_sentences(text):
        assert s and s in text


class _PysbdOnly:
    @staticmethod
    def search(_: str) -> bool:
        return True


_WORDS = ["Dr", "Mr", "e", "g", "U", "S", "St", "vs", "etc", "I", "3", "pm", "Jan", "hello", "it's", "😀", "-", ",", "(", "'", '"']


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12),
    st.sampled_from(["", ".", "!", "?", "...", "!!", "?!", " ", '"', '."']),
)
def test_the_one_sentence_fast_path_agrees_with_pysbd(words: list[str], end: str) -> None:
    import sgmem.text.segment as seg

    text = " ".join(words) + end
    fast = seg._spans(text)
    real_boundary = seg._MAYBE_BOUNDARY
    seg._MAYBE_BOUNDARY = _PysbdOnly  # type: ignore[assignment]
    try:
        slow = seg._spans(text)
    finally:
        seg._MAYBE_BOUNDARY = real_boundary
    # pysbd sometimes splits a lone "." off an ellipsis ("Jan..." → "Jan..", "."): not a sentence
    if fast != slow:
        assert any(not re.search(r"\w", text[a:b]) for a, b in slow), (text, fast, slow)


_PIECES = ["Dr.", "e.g.", "U.S.", "etc.", "p.m.", "No.", "3.5", "I", "hello", "it's", "(", ")", ",", "?", "!", "...", "\n", "1)", "2.", '"', "“Hi.”", "http://x.io/a?b", "ok"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=15))
def test_sentences_from_pysbd_processor_equal_segmenter_output(pieces: list[str]) -> None:
    import sgmem.text.segment as seg

    text = " ".join(pieces)
    ours = seg._spans(text)
    real = seg._sentences
    seg._sentences = lambda s, block: s.segment(block)  # pysbd's public call
    try:
        assert seg._spans(text) == ours
    finally:
        seg._sentences = real
