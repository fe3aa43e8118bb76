"""LightGMEM community summaries (seed §3.2.4, E.3): with an LLM, each entity community gets a name and description."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import sgmem

T0 = datetime(2024, 3, 1, 18, tzinfo=timezone.utc)
TALK = [
    "We saw Anna and Ben hiking near Denver.",
    "Then Ben and Anna cooked dinner in Denver.",
    "So Anna met Carla at the Louvre in Paris.",
    "Both Carla and Anna loved Paris and the Louvre.",
]
REPLY = {"name": "Anna's trips with friends", "description": "Anna hiked with Ben near Denver and met Carla in Paris."}


def _config(summaries: bool = True, first: int = 2, batch: int = 2) -> sgmem.Config:
    return sgmem.Config(
        min_relevance=0.0,
        entities=sgmem.EntityConfig(
            enabled=True,
            community_summaries=summaries,
            community_min_episodes=first,
            community_batch=batch,
            relations=False,  # one call per add of its own (tests/unit/entities/test_relations.py)
        ),
        pyramid=sgmem.PyramidConfig(llm_keywords=False),
        derived=sgmem.DerivedConfig(llm_tasks=()),  # the model answers the entity layer's calls only
    )


def _llm(*replies: dict[str, str]) -> Any:
    """sgmem's LangChain wrapper around LangChain's fake chat model (it answers calls with ``replies`` in turn)."""
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    adapters = pytest.importorskip("langchain_sgmem")
    return adapters.LangChainLLM(fake.FakeListChatModel(responses=[json.dumps(r) for r in replies or (REPLY,)]))


def _fill(mem: sgmem.Memory, scope: str = "s", talk: list[str] = TALK) -> list[sgmem.AddResult]:
    return [
        mem.add(
            [{"role": "user", "name": "Zoe", "content": t, "id": f"{scope}{i}"}],
            scope=scope,
            thread="t",
            at=T0 + timedelta(days=i),
        )
        for i, t in enumerate(talk)
    ]


def _summaries(mem: sgmem.Memory, scope: str = "s") -> list[tuple[str, str, list[str]]]:
    """(name, summary, source message ids) of the scope's stored community summaries."""
    sid = mem._store.scope_id(scope)
    if sid is None:
        return []
    out = []
    for cid, name, text in mem._store.conn.execute(
        "SELECT id, name, summary FROM entity_communities WHERE scope_id = ? ORDER BY id", (sid,)
    ).fetchall():
        src = [
            r[0]
            for r in mem._store.conn.execute(
                "SELECT m.ext_id FROM entity_community_sources s JOIN messages m ON m.id = s.message_id "
                "WHERE s.community_id = ? ORDER BY m.id",
                (cid,),
            )
        ]
        out.append((name, text, src))
    return out


def _community_whys(hits: list[sgmem.Hit]) -> dict[str, dict[str, Any]]:
    return {
        m: h.why["entity"]["community"] for h in hits if "community" in h.why.get("entity", {}) for m in h.message_ids
    }


def test_a_community_summary_is_written_stored_counted_and_found(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, llm=_llm(), config=_config()) as mem:
        results = _fill(mem)
        stored = _summaries(mem)
        hits = mem.search("Where did Anna and Carla go together?", scope="s", k=4, mode="entity")
        stats = mem.stats("s").scopes[0]
    assert stored and all((name, text) == (REPLY["name"], REPLY["description"]) for name, text, _ in stored)
    assert all(len(src) >= 2 for _, _, src in stored)  # written from the turns where its entities meet
    calls = sum(r.llm_calls for r in results)
    # deferred: at most one call per add here, and every call is counted in the adds and the scope's stats
    assert 1 <= calls <= len(TALK) and stats.llm_calls == calls
    whys = _community_whys(hits)
    assert whys and all(w["summary"] == REPLY["description"] for w in whys.values())


@pytest.mark.both_backends
def test_summaries_persist_across_reopening(embedder: sgmem.Embedder, store_path: Any) -> None:
    with sgmem.Memory(store_path, embedder=embedder, llm=_llm(), config=_config()) as mem:
        _fill(mem)
        before = _summaries(mem)
    with sgmem.Memory(store_path, embedder=embedder, config=_config()) as mem:  # no LLM now: read only
        assert _summaries(mem) == before and before
        hits = mem.search("Where did Anna and Carla go together?", scope="s", k=4, mode="entity")
    assert _community_whys(hits)


def test_switched_off_or_without_an_llm_nothing_is_summarised(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, llm=_llm(), config=_config(summaries=False)) as mem:
        results = _fill(mem)
        assert _summaries(mem) == [] and sum(r.llm_calls for r in results) == 0
        hits = mem.search("Where did Anna and Carla go together?", scope="s", k=4, mode="entity")
    assert _community_whys(hits) == {}
    with sgmem.Memory(embedder=embedder, config=_config()) as mem:
        _fill(mem)
        assert _summaries(mem) == []


def test_summaries_are_deferred_until_a_community_has_enough_episodes(embedder: sgmem.Embedder) -> None:
    def add(mem: sgmem.Memory, i: int, text: str) -> sgmem.AddResult:
        at = T0 + timedelta(days=i)
        return mem.add([{"role": "user", "name": "Zoe", "content": text, "id": f"s{i}"}], scope="s", thread="t", at=at)

    with sgmem.Memory(embedder=embedder, llm=_llm(), config=_config(first=3, batch=2)) as mem:
        calls = [add(mem, i, t).llm_calls for i, t in enumerate(TALK[:2])]  # two turns: below the first summary's 3
        assert _summaries(mem) == [] and calls == [0, 0]
        assert add(mem, 2, "Ben said Denver and Anna were great.").llm_calls == 1
        assert [src for _, _, src in _summaries(mem)] == [["s0", "s1", "s2"]]
        # one more supporting turn is below the batch of 2: no call; a second one re-summarises, replacing it
        assert add(mem, 3, "Anna and Ben drove out of Denver.").llm_calls == 0
        assert add(mem, 4, "Denver was where Ben taught Anna to ski.").llm_calls == 1
        assert [src for _, _, src in _summaries(mem)] == [["s0", "s1", "s2", "s3", "s4"]]


@pytest.mark.both_backends
def test_deleting_a_source_message_removes_its_summary(embedder: sgmem.Embedder, store_path: Any) -> None:
    q = "Where did Anna and Ben go hiking?"
    first = {"name": "Hiking near Denver", "description": "Anna and Ben hiked and cooked near Denver."}
    second = {"name": "Paris and the Louvre", "description": "Anna and Carla loved Paris and the Louvre."}
    with sgmem.Memory(store_path, embedder=embedder, llm=_llm(first, second), config=_config()) as mem:
        _fill(mem)
        stored = _summaries(mem)
        assert [name for name, _, _ in stored] == [first["name"], second["name"]]
        assert stored[0][2] == ["s0", "s1"]
        shown = {w["name"] for w in _community_whys(mem.search(q, scope="s", k=4, mode="entity")).values()}
        assert first["name"] in shown
        mem.delete(scope="s", message_ids=["s0"])
        left = _summaries(mem)
        shown = {w["name"] for w in _community_whys(mem.search(q, scope="s", k=4, mode="entity")).values()}
        n_rows = mem._store.conn.execute("SELECT COUNT(*) FROM entity_communities").fetchone()[0]
        n_src = mem._store.conn.execute("SELECT COUNT(*) FROM entity_community_sources").fetchone()[0]
    assert [name for name, _, _ in left] == [second["name"]] and n_rows == 1 and n_src == 2
    assert first["name"] not in shown


def test_another_scope_never_sees_a_scopes_summaries(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, llm=_llm(), config=_config()) as mem:
        _fill(mem, scope="a")
        mem.add(
            [{"role": "user", "name": "Zoe", "content": "Anna and Carla like Paris.", "id": "b0"}],
            scope="b",
            thread="t",
            at=T0,
        )
        assert _summaries(mem, "a") and _summaries(mem, "b") == []
        hits = mem.search("Where did Anna and Carla go together?", scope="b", k=4, mode="entity")
    assert _community_whys(hits) == {} and {i for h in hits for i in h.message_ids} <= {"b0"}
