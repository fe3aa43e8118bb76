"""The adapters' retrievers ask at the time they are given: an older chat's "last Saturday" is the one before it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

import sgmem
from tests.conftest import NO_CUTOFF
from tests.unit.test_reference_time import NOW, _add

pytestmark = pytest.mark.integration

QUESTION = "What did I cook last Saturday?"


@pytest.fixture(scope="module")
def mem(embedder: sgmem.Embedder) -> Iterator[sgmem.Memory]:
    with sgmem.Memory(None, embedder=embedder, config=NO_CUTOFF) as m:
        _add(m)
        yield m


def test_the_langchain_retriever_passes_the_chat_time(mem: sgmem.Memory) -> None:
    from langchain_sgmem import SGMemRetriever

    retriever = SGMemRetriever(memory=mem, scope="u", k=2)
    assert "lentil soup" in retriever.invoke(QUESTION, now=NOW)[0].page_content
    # a week later, "last Saturday" is 16 March, and two Saturdays ago the lentil soup's day
    later = SGMemRetriever(memory=mem, scope="u", k=2, search_kwargs={"now": "2024-03-21T09:00:00Z"})
    assert "lentil soup" in later.invoke("What did I cook two Saturdays ago?")[0].page_content
    with pytest.raises(sgmem.InvalidInputError, match="now"):
        retriever.invoke(QUESTION, now="next week")


async def test_the_llama_index_retriever_passes_the_chat_time(mem: sgmem.Memory) -> None:
    from llama_index_sgmem import SGMemRetriever

    retriever = SGMemRetriever(memory=mem, scope="u", k=2, now=datetime(2024, 3, 14, 9, 0, tzinfo=timezone.utc))
    assert "lentil soup" in retriever.retrieve(QUESTION)[0].node.get_content()
    assert "lentil soup" in (await retriever.aretrieve(QUESTION))[0].node.get_content()
    with pytest.raises(sgmem.InvalidInputError, match="now"):
        SGMemRetriever(memory=mem, scope="u", now="next week")
