"""Exact cl100k_base token counting and truncation (what context budgets rely on)."""

from __future__ import annotations

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from sgmem.text import count_tokens, truncate_to_tokens
from sgmem.text.tokens import encoding

TEXTS = [
    "hello world",
    "I adopted a grey cat named Miso last spring.",
    "emoji 😍🎉 and accents: café, naïve, Zürich",
    "日本語のテキストも数えます。",
    "<|endoftext|> is a special token in cl100k but counts as plain text here",
    "a" * 1000,
    "line one\nline two\n\n\tindented",
]


@pytest.fixture(scope="module")
def reference() -> tiktoken.Encoding:
    """cl100k_base as shipped offline (same ranks as cl100k_base)."""
    return encoding()


def test_encoding_is_cl100k(reference: tiktoken.Encoding) -> None:
    assert reference.name.startswith("cl100k_base")


@pytest.mark.parametrize("text", TEXTS)
def test_count_matches_tiktoken(reference: tiktoken.Encoding, text: str) -> None:
    assert count_tokens(text) == len(reference.encode(text, disallowed_special=()))


def test_empty_text_has_no_tokens() -> None:
    assert count_tokens("") == 0


def test_special_token_text_does_not_raise() -> None:
    # tiktoken's default would raise on "<|endoftext|>"; user text may contain it
    assert count_tokens("<|endoftext|>") > 1


@pytest.mark.parametrize("text", TEXTS)
def test_text_that_fits_is_returned_unchanged(text: str) -> None:
    assert truncate_to_tokens(text, count_tokens(text)) == text


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("limit", [1, 2, 3, 5, 8, 13, 40])
def test_truncation_never_exceeds_the_limit(text: str, limit: int) -> None:
    cut = truncate_to_tokens(text, limit)
    assert count_tokens(cut) <= limit
    if count_tokens(text) > limit and cut:
        assert cut.endswith("…")
        assert text.startswith(cut[: -len("…")])


@pytest.mark.parametrize("limit", [0, -3])
def test_no_room_gives_empty_string(limit: int) -> None:
    assert truncate_to_tokens("some text here", limit) == ""


def test_custom_suffix() -> None:
    cut = truncate_to_tokens("one two three four five six seven eight", 4, suffix=" [cut]")
    assert cut.endswith(" [cut]") or cut == ""
    assert count_tokens(cut) <= 4


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=0, max_value=60))
def test_truncation_property(text: str, limit: int) -> None:
    cut = truncate_to_tokens(text, limit)
    assert count_tokens(cut) <= max(limit, 0)
    if count_tokens(text) <= limit:
        assert cut == text
    elif cut:
        # a cut is a clean prefix: never a broken character (U+FFFD) at the boundary
        assert text.startswith(cut[: -len("…")])
