"""Ingest cost of the LightGMEM entity layer (``python -m benchmarks.entity_cost``).

Ingests one LoCoMo dev conversation four times in the same run: with the
entity layer off (the baseline), on without an LLM, and on with a fake LLM
without and with the community summaries
(LangChain's ``FakeListChatModel`` through the adapter; derived memory and
LLM keywords off, so every call counted is an entity call). Reports the entity
planning time per sentence (extraction, zero-shot typing — including the
embedding of mention surfaces — and resolution), the add time with and without
the layer, and LLM calls per 1,000 turns.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import sgmem
import sgmem.write as write_module
from sgmem.embed import default_embedder
from sgmem.entities.extract import TypeModel
from sgmem.eval import CachingEmbedder
from sgmem.eval.locomo import load_locomo
from sgmem.pyramid.retrieve import WordVectors

DEV = "../shared/data/locomo/locomo-dev.json"


def _run(conv: Any, embedder: Any, raw: Any, config: sgmem.Config, llm: Any = None) -> dict[str, float]:
    spent = {"plan_ms": 0.0}
    real = write_module.plan_entities

    def timed(*a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return real(*a, **kw)
        finally:
            spent["plan_ms"] += (time.perf_counter() - t0) * 1e3

    write_module.plan_entities = timed  # type: ignore[assignment]
    try:
        with sgmem.Memory(embedder=embedder, llm=llm, config=config) as mem:
            # sentences come from the embedding cache in every run; mention surfaces and type
            # descriptions are embedded fresh, as a first ingest would
            mem._words = WordVectors(raw)
            mem._types = TypeModel(mem._words, config.entities)
            t0 = time.perf_counter()
            sentences = calls = 0
            for key, at, msgs in conv.sessions:
                r = mem.add(msgs, scope="c", thread=key, at=at)
                sentences += r.sentences
                calls += r.llm_calls
            add_s = time.perf_counter() - t0
            n_ent = mem._store.conn.execute("SELECT COUNT(*) FROM entities").fetchone()[0]
            n_men = mem._store.conn.execute("SELECT COUNT(*) FROM entity_mentions").fetchone()[0]
            n_comm = mem._store.conn.execute("SELECT COUNT(*) FROM entity_communities").fetchone()[0]
    finally:
        write_module.plan_entities = real  # type: ignore[assignment]
    return {
        "turns": conv.n_turns,
        "sentences": sentences,
        "add_s": add_s,
        "plan_us_per_sentence": spent["plan_ms"] * 1e3 / max(sentences, 1),
        "llm_calls_per_1000_turns": calls * 1000 / conv.n_turns,
        "entities": n_ent,
        "mentions": n_men,
        "summaries": n_comm,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--file", default=DEV)
    ap.add_argument("--conversation", type=int, default=1, help="index of the dev conversation")
    ap.add_argument("--cache", default=None, help="embedding cache directory for the sentences")
    args = ap.parse_args()
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from langchain_sgmem import LangChainLLM

    conv = load_locomo(args.file)[args.conversation]
    raw = default_embedder()
    raw.embed(["load the model before timing"])
    embedder = CachingEmbedder(raw, args.cache) if args.cache else raw
    off = sgmem.Config(
        pyramid=sgmem.PyramidConfig(llm_keywords=False),
        derived=sgmem.DerivedConfig(facts=False, summaries=False, insights="off"),
    )  # the entity layer is off by default
    quiet = off.with_(entities=sgmem.EntityConfig(enabled=True))
    # one answer fits every entity prompt: "not a duplicate", a profile and a community description
    fake = LangChainLLM(
        FakeListChatModel(
            responses=['{"duplicate_id": -1, "name": "A recurring topic", "description": "A recurring topic."}']
        )
    )
    no_comm = quiet.with_(entities=sgmem.EntityConfig(enabled=True, community_summaries=False))
    rows = [
        ("entity layer off (baseline)", _run(conv, embedder, raw, off)),
        ("entity layer, no LLM", _run(conv, embedder, raw, quiet)),
        ("entity layer, fake LLM, no community summaries", _run(conv, embedder, raw, no_comm, fake)),
        ("entity layer, fake LLM (with community summaries)", _run(conv, embedder, raw, quiet, fake)),
    ]
    base = rows[0][1]["add_s"]
    if isinstance(embedder, CachingEmbedder):
        embedder.save()
    print(f"LoCoMo {conv.sample_id}: {conv.n_turns} turns, {rows[0][1]['sentences']} sentences")
    print(
        "| run | add s | add vs baseline | entity µs / sentence | LLM calls / 1,000 turns | entities | mentions | community summaries |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['add_s']:.1f} | {r['add_s'] / base:.2f}x | {r['plan_us_per_sentence']:.0f} | "
            f"{r['llm_calls_per_1000_turns']:.1f} | {r['entities']} | {r['mentions']} | {r['summaries']} |"
        )


if __name__ == "__main__":
    main()
