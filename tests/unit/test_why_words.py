"""A hit's ``why`` names the query's words as the user wrote them, not the stems the index keeps."""

from __future__ import annotations

import pytest

import sgmem
from sgmem.text.lexical import as_written

from .helpers import HashEmbedder


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_matched_words_are_the_users_words(mode: str) -> None:
    with sgmem.Memory(embedder=HashEmbedder(), config=sgmem.Config(min_relevance=0)) as mem:
        mem.add({"role": "user", "content": "Alice manages the hiking club's budgets."}, scope="a", thread="t")
        hits = mem.search("Is Alice's team managing the Budgets?", scope="a", mode=mode)
        assert hits[0].why["matched"] == ["Alice", "managing", "Budgets"]
        trace = mem.context_trace("Who manages budgets?", scope="a")
        assert trace.hits[0].why["matched"] == ["manages", "budgets"]


def test_as_written_keeps_query_order_and_unknown_terms() -> None:
    assert as_written("Caroline’s dogs, and DOGS", ["dog", "caroline", "zzz"]) == ["Caroline", "dogs", "DOGS", "zzz"]
    # a store written before the analyzer was recorded keeps Snowball stems
    assert as_written("Caroline’s dogs", ["dog", "carolin"], "snowball") == ["Caroline", "dogs"]
