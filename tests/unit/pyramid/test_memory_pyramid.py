"""mode="pyramid" through the Memory facade: hits, why, context, storage, delete, LLM."""

from __future__ import annotations

import json

import pytest

import sgmem
from sgmem.text.tokens import count_tokens

from ..helpers import CAT_IDS, RUN_IDS, add_sample
from .helpers import ScriptedLLM, extract_capitalised_and_nouns, reflect_keep_all


@pytest.fixture
def mem(sample_memory: sgmem.Memory) -> sgmem.Memory:
    return sample_memory


def vocabulary(mem: sgmem.Memory) -> set[str]:
    return {r[0] for r in mem._store.conn.execute("SELECT lemma FROM vocabulary")}


def postings(mem: sgmem.Memory) -> int:
    return int(mem._store.conn.execute("SELECT COUNT(*) FROM keyword_postings").fetchone()[0])


def test_pyramid_hits_show_keyword_path_level_and_round(mem: sgmem.Memory) -> None:
    hits = mem.search("Berlin marathon training", scope="alice", k=3, mode="pyramid")
    top = hits[0]
    assert top.message_ids == ("r1",)
    assert top.why["mode"] == "pyramid" and top.why["critical"] is True
    assert set(top.why["keywords"]) == {"berlin", "marathon", "train"}  # lemmas
    assert top.why["level"] == 3 and top.why["round"] == 1
    assert set(top.why["pyramid"]["query_keywords"]) == {"berlin", "marathon", "train"}
    assert top.why["pyramid"]["stop"] in {"sufficient", "exhausted", "rounds"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_query_with_no_vocabulary_word_falls_back_to_similar_turns(mem: sgmem.Memory) -> None:
    hits = mem.search("feline companion", scope="alice", k=2, mode="pyramid")
    assert len(hits) == 2
    assert all(h.why["tier"] == "vector" and "no query keyword" in h.why["fallback"] for h in hits)
    assert hits[0].message_ids[0] in CAT_IDS


def test_k_filters_and_unknown_scopes_are_respected(mem: sgmem.Memory) -> None:
    assert len(mem.search("cat marathon keyboard", scope="alice", k=5, mode="pyramid")) == 5
    only = mem.search("marathon cat", scope="alice", k=8, mode="pyramid", threads=["chat-1"])
    assert only and all(h.message_ids[0] in CAT_IDS for h in only)
    assert mem.search("marathon", scope="nobody", mode="pyramid") == []
    hits = mem.search("marathon", scope="alice", mode="pyramid", exclude_message_ids=["r1", "r4"])
    assert {"r1", "r4"}.isdisjoint(m for h in hits for m in h.message_ids)


def test_context_in_pyramid_mode_fits_the_budget(mem: sgmem.Memory) -> None:
    for budget in (12, 40, 400):
        text = mem.context(
            "How far does Alice run for the marathon?", scope="alice", budget_tokens=budget, mode="pyramid"
        )
        assert count_tokens(text) <= budget
    assert "sixty kilometres" in mem.context("marathon kilometres", scope="alice", budget_tokens=400, mode="pyramid")


def test_hybrid_reports_its_pyramid_channel(mem: sgmem.Memory) -> None:
    # off the default path (w_pyramid 0: it earned nothing there); a user who turns it on sees it in the why
    assert sgmem.HybridConfig().w_pyramid == 0.0
    on = sgmem.Config().with_(hybrid=sgmem.HybridConfig(w_pyramid=0.4))
    mem._retriever = type(mem._retriever)(on)
    top = mem.search("Berlin marathon", scope="alice", k=1)[0]
    assert top.why["channels"]["pyramid"] > 0
    assert set(top.why["pyramid"]["keywords"]) == {"berlin", "marathon"}
    off = sgmem.Config().with_(hybrid=sgmem.HybridConfig(w_pyramid=0.0))
    mem._retriever = type(mem._retriever)(off)
    assert mem.search("Berlin marathon", scope="alice", k=1)[0].why["channels"]["pyramid"] == 0.0


def test_keywords_are_stored_with_the_add_and_pruned_by_delete(mem: sgmem.Memory) -> None:
    vocab = vocabulary(mem)
    assert {"miso", "cat", "tuna", "berlin", "marathon", "alice"} <= vocab
    before = postings(mem)
    mem.delete(scope="alice", thread="chat-2")
    after = vocabulary(mem)
    assert "marathon" not in after and "berlin" not in after  # no posting left: pruned
    assert {"miso", "alice"} <= after  # still used by chat-1
    assert 0 < postings(mem) < before
    assert mem.search("Berlin marathon", scope="alice", mode="pyramid", k=3)[0].why["tier"] == "vector"
    mem.delete(scope="alice")
    assert vocabulary(mem) == set() and postings(mem) == 0


def test_a_failed_add_stores_no_keyword(mem: sgmem.Memory) -> None:
    vocab, n = vocabulary(mem), postings(mem)
    with pytest.raises(sgmem.InvalidInputError):
        mem.add([{"id": "c1", "role": "user", "content": "Zanzibar xylophones everywhere"}], scope="alice", thread="x")
    assert vocabulary(mem) == vocab and postings(mem) == n


def test_keywords_survive_a_reopen(embedder: sgmem.Embedder, store_path) -> None:  # type: ignore[no-untyped-def]
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        add_sample(mem)
        first = [
            (h.message_ids, h.why["keywords"]) for h in mem.search("tuna keyboard", scope="alice", k=2, mode="pyramid")
        ]
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        again = [
            (h.message_ids, h.why["keywords"]) for h in mem.search("tuna keyboard", scope="alice", k=2, mode="pyramid")
        ]
        mem.add([{"role": "user", "content": "Miso now eats tuna with rice."}], scope="alice", thread="chat-3")
        hits = mem.search("Miso tuna rice", scope="alice", k=1, mode="pyramid")
    assert first == again and first[0][0] == ("c3",)
    assert set(hits[0].why["keywords"]) == {"miso", "tuna", "rice"}


async def test_async_search_and_context_in_pyramid_mode(mem: sgmem.Memory) -> None:
    hits = await mem.asearch("Berlin marathon", scope="alice", k=2, mode="pyramid")
    assert hits[0].message_ids[0] in RUN_IDS
    assert "Berlin" in await mem.acontext("Berlin marathon", scope="alice", mode="pyramid", budget_tokens=200)


# ------------------------------------------------------------------- with an LLM
PAPER_WRITES = sgmem.Config(pyramid=sgmem.PyramidConfig(llm_keywords=True))


def llm_memory(embedder: sgmem.Embedder, llm: ScriptedLLM, config: sgmem.Config = PAPER_WRITES) -> sgmem.Memory:
    mem = sgmem.Memory(embedder=embedder, llm=llm, config=config)
    add_sample(mem)
    return mem


def test_with_an_llm_keywords_come_from_it_and_queries_report_its_calls(embedder: sgmem.Embedder) -> None:
    llm = ScriptedLLM(
        extract=lambda p: json.dumps(["feline companion"] if "grey cat" in p else []),
        select='["feline companion"]',
        reflect=reflect_keep_all(True),
    )
    with llm_memory(embedder, llm) as mem:
        assert llm.count("extract") == 8  # one call per added turn (§3.2)
        assert "feline companion" in vocabulary(mem)
        top = mem.search("Which pet?", scope="alice", k=1, mode="pyramid")[0]
        assert top.message_ids == ("c1",) and top.why["keywords"] == ["feline companion"]
        info = top.why["pyramid"]
        assert info["selection"] == "llm" and info["reflection"] == "llm" and info["stop"] == "sufficient"
        assert info["llm"]["calls"] == 2 and info["llm"]["prompt_tokens"] > 0
        assert info["draft_answer"] == "a draft"
        r = mem.add([{"role": "user", "content": "The cat got a new collar."}], scope="alice", thread="chat-3")
        assert r.llm_calls >= 1 and r.llm_prompt_tokens > 0  # the keyword call is accounted in the add


@pytest.mark.parametrize("bad", ["garbage", "{}", '{"critical": 7}', "[1, 2]", RuntimeError("down")])
def test_malformed_llm_output_never_fails_an_add_or_a_query(embedder: sgmem.Embedder, bad: object) -> None:
    llm = ScriptedLLM(extract=bad, group=bad, select=bad, reflect=bad, other=bad)
    with llm_memory(embedder, llm) as mem:
        assert {"miso", "marathon"} <= vocabulary(mem)  # the lexical rule took over
        hits = mem.search("Berlin marathon", scope="alice", k=2, mode="pyramid")
        assert hits[0].message_ids == ("r1",)
        assert hits[0].why["pyramid"]["reflection"] == "rule"
        assert mem.context("Berlin marathon", scope="alice", mode="pyramid", budget_tokens=100)


def test_llm_grouping_files_a_new_memory_under_an_existing_keyword(embedder: sgmem.Embedder) -> None:
    llm = ScriptedLLM(
        extract=extract_capitalised_and_nouns,
        group=lambda p: json.dumps({"total": ["kitty", "miso"] if "- kitty" in p else []}),
    )
    with llm_memory(embedder, llm, PAPER_WRITES.with_(min_relevance=0.0)) as mem:
        new = mem.add([{"role": "user", "content": "My kitty naps a lot."}], scope="alice", thread="chat-3")
        assert llm.count("group") >= 1
        assert not any("same concept (a synonym" in p for _, p in llm.prompts)  # no synonym-matching call
        rows = dict(mem._store.conn.execute("SELECT lemma, canonical_id IS NOT NULL FROM vocabulary").fetchall())
        assert rows["kitty"] == 0  # kept as a keyword of its own, and the memory is also filed under "miso"
        top = mem.search("miso", scope="alice", k=8, mode="pyramid")
        assert new.message_ids[0] in {h.message_ids[0] for h in top if h.why["tier"] != "vector"}


def test_by_default_an_llm_is_asked_for_keywords_at_write_time_unless_switched_off(embedder: sgmem.Embedder) -> None:
    llm = ScriptedLLM(extract=extract_capitalised_and_nouns, select='["Berlin"]', reflect=reflect_keep_all(True))
    with llm_memory(embedder, llm, sgmem.Config()) as mem:  # llm_keywords=None: on wherever there is an LLM
        assert llm.count("extract") == 8 and llm.count("group") >= 1
    llm = ScriptedLLM(select='["Berlin"]', reflect=reflect_keep_all(True))
    off = sgmem.Config(pyramid=sgmem.PyramidConfig(llm_keywords=False))
    with llm_memory(embedder, llm, off) as mem:
        assert llm.count("extract") == 0 and llm.count("group") == 0
        assert {"miso", "marathon"} <= vocabulary(mem)  # the lexical rule wrote the index
        hits = mem.search("Berlin marathon", scope="alice", k=2, mode="pyramid")
        assert hits[0].message_ids[0] in RUN_IDS
        assert hits[0].why["pyramid"]["selection"] == "llm"  # queries still use the model


# backend-neutral: these run on SQLite and on PostgreSQL (tests/conftest.py)
pytestmark = pytest.mark.both_backends
