"""LightGMEM entity layer: mentions, types, resolution, the entity mode and the hybrid's entity channel."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone

import pytest

import sgmem
from sgmem.entities import find_spans, norm_name

T0 = datetime(2024, 3, 1, 18, tzinfo=timezone.utc)

# John's travel turns never say "city"; the distractors do, and talk about travel and visits.
CHAT = [
    ("John", "I spent a long weekend in Chicago with my brother, the locals were so friendly."),
    ("Tim", "The city council here wants to build more parking, which is boring news."),
    ("John", "After that I flew on to Seattle, and the coffee there blew me away."),
    ("Tim", "I have never been much of a traveller, cities make me tired."),
    ("John", "My basketball practice ran late again yesterday."),
    ("Tim", "Have you been anywhere fun lately? I want to visit somewhere new someday."),
    ("Tim", "My favourite city park has a lovely pond with ducks."),
    ("John", "We have been practising free throws every single morning."),
]
QUESTION = "Which cities has John been to?"

# the entity layer is opt-in: these tests switch it on, with the hybrid's entity channel
ON = sgmem.Config(
    min_relevance=0.0, entities=sgmem.EntityConfig(enabled=True), hybrid=sgmem.HybridConfig(w_entity=0.3)
)


def _fill(mem: sgmem.Memory, scope: str = "s") -> None:
    for i, (name, text) in enumerate(CHAT):
        role = "user" if name == "John" else "assistant"
        mem.add(
            [{"role": role, "name": name, "content": text, "id": f"m{i}"}],
            scope=scope,
            thread="t",
            at=T0 + timedelta(days=i),
        )


def _ids(hits: list[sgmem.Hit]) -> list[str]:
    return [i for h in hits for i in h.message_ids]


def test_rule_spans_find_names_titles_and_skip_sentence_openers() -> None:
    spans = [(m.surface, m.kind) for m in find_spans('Wow! I was in New York and played "Street Fighter" with Sara.')]
    assert ("New York", "name") in spans and ("Street Fighter", "title") in spans and ("Sara", "name") in spans
    assert not any(s == "Wow" or s == "I" for s, _ in spans)
    assert [m.surface for m in find_spans("Valorant rocks.", {"valorant"})] == ["Valorant"]
    assert find_spans("Valorant rocks.") == []
    assert norm_name("The John's") == "john"


def test_entities_are_stored_typed_and_resolved_across_turns(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=ON) as mem:
        _fill(mem)
        rows = mem._store.conn.execute("SELECT name, type FROM entities ORDER BY id").fetchall()
        n_john = mem._store.conn.execute(
            "SELECT COUNT(*) FROM entity_mentions x JOIN entities e ON e.id = x.entity_id WHERE e.norm = 'john'"
        ).fetchone()[0]
    types = dict(rows)
    assert types["Chicago"] == "place" and types["Seattle"] == "place" and types["John"] == "person"
    assert [n for n, _ in rows].count("John") == 1  # one canonical entity, four mentions
    assert n_john == 4


def test_a_category_question_reaches_its_instances_only_through_the_entity_channel(embedder: sgmem.Embedder) -> None:
    off = ON.with_(hybrid=dataclasses.replace(ON.hybrid, w_entity=0.0))
    with sgmem.Memory(embedder=embedder, config=ON) as mem:
        _fill(mem)
        on_hits = mem.search(QUESTION, scope="s", k=2)
        mem._retriever = type(mem._retriever)(off)
        off_hits = mem.search(QUESTION, scope="s", k=2)
    assert set(_ids(on_hits)) == {"m0", "m2"}
    assert set(_ids(off_hits)) != {"m0", "m2"}
    why = on_hits[0].why["entity"]
    assert why["matched"][0]["type"] == "place" and why["matched"][0]["category"] == "cities"
    assert why["anchors"] == ["John"] and on_hits[0].why["channels"]["entity"] > 0


def test_entity_mode_anchors_on_the_query_entities_and_explains_hits(embedder: sgmem.Embedder, tmp_path) -> None:
    with sgmem.Memory(embedder=embedder, config=ON) as mem:
        _fill(mem)
        hits = mem.search(QUESTION, scope="s", k=2, mode="entity")
    # the same mode over a store written without entities (then opened with them): semantic + lexical only
    with sgmem.Memory(tmp_path / "bare", embedder=embedder, config=sgmem.Config(min_relevance=0.0)) as bare:
        _fill(bare)
    with sgmem.Memory(tmp_path / "bare", embedder=embedder, config=ON) as bare:
        off = bare.search(QUESTION, scope="s", k=2, mode="entity")
    assert set(_ids(hits)) == {"m0", "m2"} and set(_ids(off)) != {"m0", "m2"}
    assert hits[0].why["mode"] == "entity" and hits[0].why["query_entities"] == ["John"]
    assert hits[0].why["query_types"] == {"place": "cities"}
    assert hits[0].why["scores"]["graph"] > 0


def test_the_entity_layer_is_off_by_default_and_then_does_no_entity_work(embedder: sgmem.Embedder) -> None:
    # even with the hybrid's channel weighted, a Memory without the layer types, embeds and loads no entity
    cfg = sgmem.Config(min_relevance=0.0, hybrid=sgmem.HybridConfig(w_entity=0.3))
    assert not sgmem.Config().entities.enabled and sgmem.Config().hybrid.w_entity == 0.0
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        _fill(mem)
        n = mem._store.conn.execute("SELECT COUNT(*) FROM entities").fetchone()[0]
        hits = mem.search(QUESTION, scope="s", k=2)
        typed, loaded = mem._types._mat is not None, len(mem._entities)
        with pytest.raises(sgmem.ConfigError, match=r"EntityConfig\(enabled=True\)"):
            mem.search(QUESTION, scope="s", k=2, mode="entity")
    assert n == 0 and "entity" not in hits[0].why and not typed and not loaded
    with pytest.raises(sgmem.ConfigError, match="entity"):
        sgmem.Config(default_mode="entity")
    assert sgmem.Config(default_mode="entity", entities=sgmem.EntityConfig(enabled=True)).default_mode == "entity"


def test_replace_swaps_the_entities_of_the_replaced_turn(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=ON) as mem:
        _fill(mem)
        r = mem.replace(
            [{"role": "user", "name": "John", "content": "I spent a long weekend in Denver with my brother.", "id": "m0"}],
            scope="s",
            thread="t",
            message_ids=["m0"],
            at=T0,
        )
        names = {x[0] for x in mem._store.conn.execute("SELECT name FROM entities")}
        n_john = mem._store.conn.execute(
            "SELECT COUNT(*) FROM entity_mentions x JOIN entities e ON e.id = x.entity_id WHERE e.norm = 'john'"
        ).fetchone()[0]
        hits = mem.search("Who went to Denver with his brother?", scope="s", k=1, mode="entity")
    assert r.replaced is not None and r.replaced.messages == 1
    assert "Chicago" not in names and {"Denver", "Seattle", "John"} <= names
    assert n_john == 4  # the new turn's John joins the same canonical entity
    assert _ids(hits) == ["m0"] and hits[0].why["query_entities"] == ["Denver"]


def test_deleting_a_turn_removes_its_mentions_and_orphaned_entities(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=ON) as mem:
        _fill(mem)
        mem.delete(scope="s", message_ids=["m0"])
        names = {r[0] for r in mem._store.conn.execute("SELECT name FROM entities")}
        hits = mem.search(QUESTION, scope="s", k=2, mode="entity")
    assert "Chicago" not in names and "Seattle" in names and "John" in names
    assert "m0" not in _ids(hits)


def test_communities_overlap_and_group_co_mentioned_entities(embedder: sgmem.Embedder) -> None:
    talk = [
        "We saw Anna and Ben hiking near Denver.",
        "Then Ben and Anna cooked dinner in Denver.",
        "So Anna met Carla at the Louvre in Paris.",
        "Both Carla and Anna loved Paris and the Louvre.",
    ]
    with sgmem.Memory(embedder=embedder, config=ON) as mem:
        for i, t in enumerate(talk):
            mem.add([{"role": "user", "name": "Zoe", "content": t}], scope="s", thread="t", at=T0 + timedelta(days=i))
        ei = mem._entities.get(mem._store, mem._store.scope_id("s"))
        comms, member = ei.communities()
        name = {e: r.name for e, r in ei.entities.items()}
    groups = [{name[e] for e in c} for c in comms]
    assert any({"Ben", "Denver"} <= g for g in groups) and any({"Carla", "Paris"} <= g for g in groups)
    anna = next(e for e, n in name.items() if n == "Anna")
    assert len(member[anna]) >= 2  # Anna belongs to both contexts (Ego-Splitting's overlap)


class _Disambiguator:
    """A scripted model: the entity prompts get JSON answers, everything else an empty reply."""

    def __init__(self, duplicate: bool) -> None:
        self.duplicate = duplicate
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if "refers to an entity" in prompt:
            cid = int(prompt.split('"candidate_id": ')[1].split(",")[0])
            return json.dumps({"duplicate_id": cid if self.duplicate else -1, "name": "x"})
        if prompt.startswith("You maintain a short profile"):
            return json.dumps({"description": "A city John visits."})
        return ""

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


@pytest.mark.parametrize("duplicate", [True, False])
def test_with_an_llm_uncertain_mentions_are_disambiguated_and_counted(
    embedder: sgmem.Embedder, duplicate: bool
) -> None:
    llm = _Disambiguator(duplicate)
    cfg = ON.with_(
        pyramid=sgmem.PyramidConfig(llm_keywords=False),
        derived=dataclasses.replace(sgmem.DerivedConfig(), facts=False, summaries=False, insights="off"),
    )
    with sgmem.Memory(embedder=embedder, llm=llm, config=cfg) as mem:
        mem.add([{"role": "user", "name": "John", "content": "I loved Chicago."}], scope="s", thread="t", at=T0)
        r = mem.add(
            [{"role": "user", "name": "John", "content": "Back in Chicagoo again."}], scope="s", thread="t", at=T0
        )
        names = [x[0] for x in mem._store.conn.execute("SELECT name FROM entities ORDER BY id")]
    asked = [p for p in llm.prompts if "refers to an entity" in p]
    assert len(asked) == 1 and '"name": "Chicagoo"' in asked[0] and r.llm_calls >= 1
    assert ("Chicagoo" in names) is (not duplicate)
