"""LightGMEM disambiguation: name variants inside a lane and inside an add; MinHash-LSH lane keys (seed §3.2.2)."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone

import sgmem
from sgmem.entities.index import char_grams, jaccard
from sgmem.entities.minhash import band_keys, signature

T0 = datetime(2024, 2, 1, tzinfo=timezone.utc)
ON = sgmem.Config(
    min_relevance=0.0,
    entities=sgmem.EntityConfig(enabled=True),
    pyramid=sgmem.PyramidConfig(llm_keywords=False),
    derived=dataclasses.replace(sgmem.DerivedConfig(), facts=False, summaries=False, insights="off"),
)


class VariantLLM:
    """Disambiguation by script: a mention is the entity shown as candidate ``-2`` (one this lane created), else new."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def complete(self, prompt: str) -> str:
        if "refers to an entity" in prompt:
            self.asked.append(prompt)
            return json.dumps({"duplicate_id": -2 if '"candidate_id": -2' in prompt else -1})
        return ""

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def _entities(mem: sgmem.Memory) -> dict[str, set[str]]:
    """Entity name -> the surfaces of its mentions."""
    out: dict[str, set[str]] = {}
    for name, surface in mem._store.conn.execute(
        "SELECT e.name, m.surface FROM entity_mentions m JOIN entities e ON e.id = m.entity_id"
    ):
        out.setdefault(name, set()).add(surface)
    return out


def test_a_name_variant_joins_the_entity_created_earlier_in_its_lane(embedder: sgmem.Embedder) -> None:
    llm = VariantLLM()
    with sgmem.Memory(embedder=embedder, llm=llm, config=ON) as mem:
        mem.add(
            [{"role": "user", "name": "John", "content": "I grew up in Chicago Heights."}], scope="s", thread="t", at=T0
        )
        mem.add(
            [
                {"role": "user", "name": "John", "content": "I loved Chicago this weekend."},
                {"role": "user", "name": "John", "content": "Back in Chicagoo again, so windy."},
            ],
            scope="s",
            thread="t",
            at=T0,
        )
        ents = _entities(mem)
    assert any('"name": "Chicagoo"' in p and '"candidate_id": -2, "name": "Chicago"' in p for p in llm.asked)
    assert "Chicagoo" not in ents and {"Chicago", "Chicagoo"} <= ents["Chicago"]
    assert "Chicago Heights" in ents  # the model kept the other city apart


def test_without_an_llm_a_variant_joins_an_entity_of_the_same_add(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=ON) as mem:
        mem.add(
            [
                {"role": "user", "name": "Ana", "content": "My friend Jonathan Edwards called."},
                {"role": "user", "name": "Ana", "content": "I told Jonathan Edward about the trip."},
            ],
            scope="s",
            thread="t",
            at=T0,
        )
        ents = _entities(mem)
    assert "Jonathan Edward" not in ents and ents["Jonathan Edwards"] == {"Jonathan Edwards", "Jonathan Edward"}


def test_minhash_estimates_jaccard_and_lsh_keys_collide_for_close_names() -> None:
    for a, b in [("caroline", "caroline smith"), ("chicago", "chicagoo"), ("jon", "john"), ("biscuit", "lisbon")]:
        ga, gb = char_grams(a), char_grams(b)
        agree = float((signature(ga, 64) == signature(gb, 64)).mean())
        assert abs(agree - jaccard(ga, gb)) < 0.2
    same = set(band_keys(char_grams("melanie"), 16, 8))
    assert same == set(band_keys(char_grams("melanie"), 16, 8)) and len(same) == 8  # deterministic
    assert same & set(band_keys(char_grams("melanie s"), 16, 8))
    assert not same & set(band_keys(char_grams("biscuit"), 16, 8))
