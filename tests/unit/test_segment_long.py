"""Sentence splitting of long messages (up to the 200,000-character limit): the same sentences as
short text, none lost or altered, and a cost that grows linearly with the length on any shape."""

from __future__ import annotations

import random
import re
import time

import pytest

from sgmem.text import segment, split_sentences
from sgmem.text.segment import sentence_spans
from sgmem.text.tokens import count_tokens

_WORDS = (
    "the memory store keeps every message verbatim and builds summaries over sentences Alice Bob Paris "
    "Berlin marathon cat keyboard tuna function returns value index vector search query budget thread"
).split()


def _sentence(rng: random.Random) -> str:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 18)))
    end = rng.choice([".", ".", "?", "!", ", e.g. as Dr. Smith said at 5 p.m. today.", " for $3.50 (see x.io/a?b=1)."])
    return words[0].upper() + words[1:] + end


def _paragraphs(n_chars: int, seed: int = 3) -> list[str]:
    """Assistant-style prose: paragraphs, headings, bullet lists, numbered lists and code blocks."""
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < n_chars:
        r = rng.random()
        if r < 0.08:
            p = "```python\ndef double(x):\n    return x * 2  # twice\n\nprint(double(3))\n```"
        elif r < 0.15:
            p = "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(2, 5)))
        elif r < 0.2:
            p = "\n".join(f"{i}. {_sentence(rng)}" for i in range(1, rng.randint(3, 5)))
        elif r < 0.25:
            p = "## " + _sentence(rng).rstrip(".?!")
        else:
            p = " ".join(_sentence(rng) for _ in range(rng.randint(2, 7)))
        out.append(p)
        total += len(p) + 2
    return out


def test_a_long_message_splits_into_the_sentences_of_its_paragraphs() -> None:
    paragraphs = _paragraphs(200_000)
    text = "\n\n".join(paragraphs)
    assert 190_000 < len(text) < 210_000
    whole = split_sentences(text)
    assert whole == [s for p in paragraphs for s in split_sentences(p)]
    # every sentence is the text itself, in order, and only white space lies between them
    cursor = 0
    for start, end in sentence_spans(text):
        assert start >= cursor and not text[cursor:start].strip()
        cursor = end
    assert not text[cursor:].strip()
    assert re.sub(r"\s", "", "".join(whole)) == re.sub(r"\s", "", text)


@pytest.mark.parametrize("joiner", [" ", "\n", "\n\n"])
def test_long_text_is_split_as_if_it_were_given_to_pysbd_whole(joiner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Long text goes to pysbd in blocks; no block boundary changes a sentence ("Dr. | Smith", "2. | Budget")."""
    text = joiner.join(p for p in _paragraphs(30_000, seed=11) if joiner != " " or "\n" not in p)
    blocked = split_sentences(text)
    monkeypatch.setattr(segment, "_BLOCK_CHARS", 10**9)
    assert segment._blocks(segment._mask(text)) == [segment._mask(text)]
    assert blocked == split_sentences(text)


def _shapes(n: int) -> dict[str, str]:
    rng = random.Random(5)
    return {
        "prose": "\n\n".join(_paragraphs(n))[:n],
        "no punctuation": " ".join(rng.choice(_WORDS) for _ in range(n // 5))[:n],
        "white space": "a" + " " * (n - 2) + "b",
        "parentheses": ")" * n,
        "one url": ("see https://example.com/" + "a/b?c=d&" * n)[:n],
        "short lines": ("word\n" * n)[:n],
        "blank lines": "a" + "\n" * (n - 2) + "b",
        "dots": "a." * (n // 2),
    }


def _cpu_seconds(fn: object, text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()  # CPU time of this process: a busy machine does not stretch it
        fn(text)  # type: ignore[operator]
        best = min(best, time.process_time() - t0)
    return best


@pytest.mark.parametrize("shape", list(_shapes(10)))
def test_splitting_and_counting_grow_linearly_with_the_length(shape: str) -> None:
    """Ten times the text costs well under thirty times as much (linear is ~10x, quadratic ~100x)."""
    small, large = _shapes(20_000)[shape], _shapes(200_000)[shape]
    assert len(large) == 10 * len(small)
    split_sentences("Warm up. Done.")
    for fn in (sentence_spans, count_tokens):
        base = max(_cpu_seconds(fn, small, 3), 0.005)  # below timer resolution a ratio means nothing
        cost = _cpu_seconds(fn, large, 1)
        assert cost < 30 * base, f"{shape}: {cost:.3f}s at 200k characters, {base:.3f}s at 20k"
