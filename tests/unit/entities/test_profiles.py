"""LightGMEM entity profiles are read at query time (seed eq. 15, Table 7), with and without an LLM.

What a user would notice: a question about what an entity *is* ("the golden
retriever") misses the turns about it that never say so, although its profile
does.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import sgmem

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)

ENTITY_ONLY = sgmem.Config(
    min_relevance=0.0,
    # profiles read at query time (Table 7: 5 kept; off by default); a profile from the 2nd episode
    entities=sgmem.EntityConfig(enabled=True, profile_context=5, profile_batch=1, profile_min=1),
    pyramid=sgmem.PyramidConfig(llm_keywords=False),
    derived=dataclasses.replace(sgmem.DerivedConfig(), facts=False, summaries=False, insights="off"),
)

TURNS = [
    "I think Biscuit chewed my sneakers again this morning.",
    "I had to chase Biscuit around the park for an hour.",
    "Biscuit finally learned to sit on command!",
    "My sister's labrador loves swimming in the lake.",
    "The shelter near us has so many kittens.",
]


class ProfileLLM:
    """sgmem's LLM protocol: the profile prompt gets ``description``; everything else an empty reply."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.profile_calls = 0

    def complete(self, prompt: str) -> str:
        if prompt.startswith("You maintain a short profile"):
            self.profile_calls += 1
            name = prompt.split("Entity: ", 1)[1].split("\n", 1)[0]
            return json.dumps({"description": self.description if name == "Biscuit" else f"{name} is a person."})
        return ""

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def _fill(mem: sgmem.Memory) -> None:
    for i, text in enumerate(TURNS):
        mem.add(
            [{"role": "user", "name": "Maria", "content": text, "id": f"t{i}"}],
            scope="s",
            thread="t",
            at=T0 + timedelta(i),
        )


def _profile_hits(mem: sgmem.Memory, query: str) -> list[tuple[str, Any]]:
    hits = mem.search(query, scope="s", k=3, mode="entity")
    return [(h.message_ids[0], h.why.get("entity", {}).get("profile")) for h in hits]


def test_an_llm_profile_is_scored_at_query_time_and_ranks_the_entitys_turns(embedder: sgmem.Embedder) -> None:
    llm = ProfileLLM("Biscuit is Maria's golden retriever puppy.")
    with sgmem.Memory(embedder=embedder, llm=llm, config=ENTITY_ONLY) as mem:
        _fill(mem)
        assert llm.profile_calls >= 1
        stored = mem._store.conn.execute("SELECT profile FROM entities WHERE name = 'Biscuit'").fetchone()[0]
        assert stored == "Biscuit is Maria's golden retriever puppy."
        hits = _profile_hits(mem, "What did the golden retriever puppy do?")
    # the distractors are closer to the question (a labrador, kittens): the profile lifts Biscuit's turns
    assert {m for m, _ in hits} == {"t0", "t1", "t2"}
    assert all(p is not None and p["entity"] == "Biscuit" and p["kind"] == "llm" for _, p in hits)
    assert "golden retriever" in hits[0][1]["text"]


def test_what_the_llm_wrote_decides_which_profile_is_found(embedder: sgmem.Embedder) -> None:
    llm = ProfileLLM("Biscuit is a brand of shortbread cookies Maria bakes.")
    with sgmem.Memory(embedder=embedder, llm=llm, config=ENTITY_ONLY) as mem:
        _fill(mem)
        hits = _profile_hits(mem, "What did the golden retriever puppy do?")
        cookies = _profile_hits(mem, "Which shortbread cookies does Maria bake?")
    assert hits[0][0] == "t3"  # the labrador: a profile about cookies does not lift Biscuit for a dog question
    assert cookies[0][0] in {"t0", "t1", "t2"} and cookies[0][1]["entity"] == "Biscuit"


def test_without_an_llm_the_extractive_profile_is_scored(embedder: sgmem.Embedder) -> None:
    turns = [
        "Our Biscuit is a golden retriever.",
        "Yesterday Biscuit chewed the sofa again.",
        "The sofa cushions need washing.",
    ]
    with sgmem.Memory(embedder=embedder, config=ENTITY_ONLY) as mem:
        for i, text in enumerate(turns):
            mem.add(
                [{"role": "user", "name": "Maria", "content": text, "id": f"x{i}"}],
                scope="s",
                thread="t",
                at=T0 + timedelta(i),
            )
        hits = mem.search("What did the golden retriever chew?", scope="s", k=3, mode="entity")
    why = {h.message_ids[0]: h.why.get("entity", {}).get("profile") for h in hits}
    assert why["x1"] is not None and why["x1"]["kind"] == "extractive" and why["x1"]["entity"] == "Biscuit"
    assert "golden retriever" in why["x1"]["text"]
    assert [h.message_ids[0] for h in hits][:2] in (["x0", "x1"], ["x1", "x0"])  # above the sofa distractor


def test_profiles_can_be_switched_off(embedder: sgmem.Embedder) -> None:
    cfg = ENTITY_ONLY.with_(entities=dataclasses.replace(ENTITY_ONLY.entities, profile_context=0))
    with sgmem.Memory(
        embedder=embedder, llm=ProfileLLM("Biscuit is Maria's golden retriever puppy."), config=cfg
    ) as mem:
        _fill(mem)
        hits = _profile_hits(mem, "What did the golden retriever puppy do?")
    assert all(p is None for _, p in hits)


def test_pending_profiles_are_flushed_explicitly_and_on_close(embedder: sgmem.Embedder, tmp_path: Any) -> None:
    # B = 15 turns before a profile update: three mentions leave Biscuit's evidence pending
    cfg = ENTITY_ONLY.with_(entities=dataclasses.replace(ENTITY_ONLY.entities, profile_batch=15, profile_min=1))
    llm = ProfileLLM("Biscuit is Maria's golden retriever puppy.")

    def profile(mem: sgmem.Memory) -> Any:
        return mem._store.conn.execute("SELECT profile, profiled FROM entities WHERE name = 'Biscuit'").fetchone()

    with sgmem.Memory(embedder=embedder, llm=llm, config=cfg) as mem:
        _fill(mem)
        assert profile(mem) == (None, 0) and llm.profile_calls == 0  # deferred
        assert mem.flush_profiles(scope="s") >= 1
        assert profile(mem) == ("Biscuit is Maria's golden retriever puppy.", 3)
        hits = _profile_hits(mem, "What did the golden retriever puppy do?")
        assert hits[0][1] is not None and hits[0][1]["kind"] == "llm"  # read at query time at once
        calls = llm.profile_calls
        assert mem.flush_profiles(scope="s") == 0 and llm.profile_calls == calls  # nothing pending any more
    with sgmem.Memory(tmp_path / "m", embedder=embedder, llm=llm, config=cfg) as mem:
        _fill(mem)
    with sgmem.Memory(tmp_path / "m", embedder=embedder, config=cfg) as again:
        assert profile(again) == ("Biscuit is Maria's golden retriever puppy.", 3)  # the close flushed it
