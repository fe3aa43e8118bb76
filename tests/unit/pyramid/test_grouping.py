"""MGRetrieval's keyword grouping as published (§3.2 step 2): a memory is also filed under broader existing keywords."""

from __future__ import annotations

import json
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
            '["city", "life"]',  # extraction, first add (empty vocabulary: nothing to group under, no second call)
            '["Chicago", "weekend"]',  # extraction, second add
            grouping_reply,  # grouping, second add (no synonym-matching call follows)
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
    assert _llm_grouped(embedder, '{"total": ["Chicago", "weekend", "city"]}') == {"a", "b"}
    # the model groups nothing: Chicago's memory stays out of "city"
    assert _llm_grouped(embedder, '{"total": ["Chicago", "weekend"]}') == {"a"}
    # a term outside the vocabulary it was shown is never appended
    assert _llm_grouped(embedder, '{"total": ["Chicago", "weekend", "metropolis"]}') == {"a"}
    # output it cannot use falls back to the rule (cosine 0.99: nothing), the add still succeeds
    assert _llm_grouped(embedder, "not json") == {"a"}


# --------------------------------------------------------------- the paper's write path, call by call
CITY = "Big city life suits me."
TRIP = [
    "We spent the weekend in Chicago.",
    "Next spring we fly to Lisbon.",
    "My sister adopted a puppy.",
]
EXTRACTED = {  # what the model copies from each message (surface forms, as written)
    CITY: ["city", "life"],
    TRIP[0]: ["weekend", "Chicago"],
    TRIP[1]: ["spring", "Lisbon"],
    TRIP[2]: ["sister", "adopted", "puppy"],
}


class CountingLLM:
    """sgmem's LLM protocol with scripted answers, counting calls by prompt."""

    def __init__(self, group_cities: bool) -> None:
        self.group_cities = group_cities
        self.calls: list[str] = []

    def complete(self, prompt: str) -> str:
        text = prompt.split('"""')[1] if '"""' in prompt else ""
        if prompt.startswith("You index a conversation memory"):
            self.calls.append("extract")
            return json.dumps(EXTRACTED[text])
        if prompt.startswith("You file a conversation memory"):
            self.calls.append("group")
            own = EXTRACTED[text]
            shown = [ln[2:] for ln in prompt.split("database_keywords")[1].splitlines() if ln.startswith("- ")]
            city = self.group_cities and ("Chicago" in own or "Lisbon" in own) and "city" in shown
            return json.dumps({"total": own + (["city"] if city else [])})
        self.calls.append("other")
        return "[]"

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def _paper_write_path(embedder: sgmem.Embedder, group_cities: bool) -> tuple[CountingLLM, sgmem.Memory]:
    llm = CountingLLM(group_cities)
    cfg = sgmem.Config(
        pyramid=sgmem.PyramidConfig(llm_keywords=True),  # group_cosine left at None: grouping is on with an LLM
        derived=sgmem.DerivedConfig(llm_tasks=()),
        min_relevance=0.0,  # what the pyramid finds is shown, however far from the query its words are
    )
    mem = sgmem.Memory(embedder=embedder, llm=llm, config=cfg)
    first = mem.add([{"role": "user", "content": CITY, "id": "city"}], scope="s", thread="t", at=T0)
    assert llm.calls == ["extract"] and first.llm_calls == 1  # nothing to group under yet
    r = mem.add(
        [{"role": "user", "content": t, "id": f"m{i}"} for i, t in enumerate(TRIP)],
        scope="s",
        thread="t",
        at=T0 + timedelta(days=1),
    )
    # exactly two calls per memory: extraction, then grouping; no synonym-matching call
    assert llm.calls[1:] == ["extract"] * 3 + ["group"] * 3 and r.llm_calls == 6
    return llm, mem


def test_the_paper_write_path_makes_two_calls_per_memory_and_its_answers_reach_rows_and_ranking(
    embedder: sgmem.Embedder,
) -> None:
    _, mem = _paper_write_path(embedder, group_cities=True)
    with mem:
        conn = mem._store.conn
        stored = {k for (k,) in conn.execute("SELECT keyword FROM vocabulary")}
        assert {"Chicago", "Lisbon", "adopted"} <= stored  # copied as written, not a base form
        under_city = {
            m
            for (m,) in conn.execute(
                "SELECT m.ext_id FROM keyword_postings p JOIN vocabulary v ON v.id = p.keyword_id "
                "JOIN messages m ON m.id = p.message_id WHERE v.lemma = 'city'"
            )
        }
        assert under_city == {"city", "m0", "m1"}
        hits = mem.search("city", scope="s", k=4, mode="pyramid")
        found = [h.message_ids[0] for h in hits if h.why["tier"] != "vector"]
        assert set(found) == {"city", "m0", "m1"}


def test_without_the_models_grouping_the_cities_are_not_filed_under_city(embedder: sgmem.Embedder) -> None:
    _, mem = _paper_write_path(embedder, group_cities=False)
    with mem:
        hits = mem.search("city", scope="s", k=4, mode="pyramid")
        assert [h.message_ids[0] for h in hits if h.why["tier"] != "vector"] == ["city"]


def test_with_just_an_llm_and_the_defaults_grouping_makes_two_calls_per_memory(embedder: sgmem.Embedder) -> None:
    """``Memory(llm=...)`` as shipped: the paper's keyword path is on (``llm_keywords=None``), two calls per memory."""
    llm = CountingLLM(group_cities=True)
    with sgmem.Memory(embedder=embedder, llm=llm) as mem:
        first = mem.add([{"role": "user", "content": CITY, "id": "city"}], scope="s", thread="t", at=T0)
        keyword_calls = [c for c in llm.calls if c != "other"]  # the derived memory's calls are "other"
        assert keyword_calls == ["extract"]  # nothing to group under yet
        mem.add(
            [{"role": "user", "content": t, "id": f"m{i}"} for i, t in enumerate(TRIP)],
            scope="s",
            thread="t",
            at=T0 + timedelta(days=1),
        )
        keyword_calls = [c for c in llm.calls if c != "other"]
        # exactly two per memory: extraction, then grouping (no synonym-matching call)
        assert keyword_calls[1:] == ["extract"] * len(TRIP) + ["group"] * len(TRIP)
        assert first.llm_calls >= 1
        under_city = {
            m
            for (m,) in mem._store.conn.execute(
                "SELECT m.ext_id FROM keyword_postings p JOIN vocabulary v ON v.id = p.keyword_id "
                "JOIN messages m ON m.id = p.message_id WHERE v.lemma = 'city'"
            )
        }
    assert under_city == {"city", "m0", "m1"}  # the model's grouping reached the index


def test_llm_keywords_false_keeps_the_lexical_rule_and_none_without_an_llm_calls_nothing(
    embedder: sgmem.Embedder,
) -> None:
    llm = CountingLLM(group_cities=True)
    off = sgmem.Config(pyramid=sgmem.PyramidConfig(llm_keywords=False))
    with sgmem.Memory(embedder=embedder, llm=llm, config=off) as mem:
        mem.add([{"role": "user", "content": CITY, "id": "city"}], scope="s", thread="t", at=T0)
        mem.add([{"role": "user", "content": TRIP[0], "id": "m0"}], scope="s", thread="t", at=T0)
    assert [c for c in llm.calls if c != "other"] == []
    with pytest.raises(sgmem.ConfigError, match="llm_keywords"):
        sgmem.PyramidConfig(llm_keywords="yes")  # type: ignore[arg-type]
    with sgmem.Memory(embedder=embedder) as mem:  # the default without an LLM: the lexical rule, as before
        r = mem.add([{"role": "user", "content": CITY, "id": "city"}], scope="s", thread="t", at=T0)
        assert r.llm_calls == 0 and "city" in {k for (k,) in mem._store.conn.execute("SELECT lemma FROM vocabulary")}
