"""MGRetrieval's keyword grouping as published (§3.2 step 2): a memory is also filed under broader existing keywords."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import sgmem
from sgmem.pyramid.retrieve import ensure_keywords

T0 = datetime(2024, 2, 1, tzinfo=timezone.utc)


def _postings(cfg: sgmem.Config, embedder: sgmem.Embedder) -> tuple[set[str], set[str]]:
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        mem.add([{"role": "user", "content": "Big city life suits me.", "id": "a"}], scope="s", thread="t", at=T0)
        mem.add(
            [{"role": "user", "content": "We spent the weekend in Chicago.", "id": "b"}],
            scope="s",
            thread="t",
            at=T0 + timedelta(days=1),
        )
        idx = mem._index(mem._store.scope_id("s"))
        kwi = ensure_keywords(mem._store, idx)
        city = kwi.lookup["city"]
        own = {kwi.words[i] for i in kwi.turn_kws.get(1, [])}
        return {idx.ext_ids[r] for r in kwi.rows[city]}, own


def test_a_memory_keeps_its_keywords_and_is_filed_under_a_broader_existing_one(embedder: sgmem.Embedder) -> None:
    grouped = sgmem.Config(pyramid=sgmem.PyramidConfig(group_cosine=0.5))
    under_city, own = _postings(grouped, embedder)
    assert under_city == {"a", "b"} and {"chicago", "weekend", "city"} <= own
    plain_city, plain_own = _postings(sgmem.Config(), embedder)
    assert plain_city == {"a"} and "city" not in plain_own


def _llm_grouped(embedder: sgmem.Embedder, grouping_reply: str) -> set[str]:
    """Keyword calls answered by a LangChain fake chat model: the memories filed under "city"."""
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    adapters = pytest.importorskip("langchain_sgmem")
    model = fake.FakeListChatModel(
        responses=[
            '["city", "life"]',  # extraction, first add (empty vocabulary: nothing to group under or match)
            '["Chicago", "weekend"]',  # extraction, second add
            grouping_reply,  # grouping, second add
            '{"chicago": null, "weekend": null}',  # matching, second add: no synonyms
        ]
    )
    # the rule alone (cosine ≥ 0.99) would file nothing: what is grouped is the model's choice
    cfg = sgmem.Config(
        pyramid=sgmem.PyramidConfig(llm_keywords=True, group_cosine=0.99),
        derived=sgmem.DerivedConfig(llm_tasks=()),  # the model answers the keyword calls only
    )
    with sgmem.Memory(embedder=embedder, llm=adapters.LangChainLLM(model), config=cfg) as mem:
        mem.add([{"role": "user", "content": "Big city life suits me.", "id": "a"}], scope="s", thread="t", at=T0)
        mem.add(
            [{"role": "user", "content": "We spent the weekend in Chicago.", "id": "b"}],
            scope="s",
            thread="t",
            at=T0 + timedelta(days=1),
        )
        idx = mem._index(mem._store.scope_id("s"))
        kwi = ensure_keywords(mem._store, idx)
        under_city = {idx.ext_ids[r] for r in kwi.rows[kwi.lookup["city"]]}
    return under_city


def test_with_an_llm_the_grouping_prompt_files_a_memory_under_a_broader_keyword(embedder: sgmem.Embedder) -> None:
    assert _llm_grouped(embedder, '{"Chicago": ["city"], "weekend": []}') == {"a", "b"}
    # the model groups nothing: Chicago's memory stays out of "city"
    assert _llm_grouped(embedder, '{"Chicago": [], "weekend": []}') == {"a"}
    # output it cannot use falls back to the rule (cosine 0.99: nothing), the add still succeeds
    assert _llm_grouped(embedder, "not json") == {"a"}
