"""The hybrid's dialogue-act weights come from a table kept per index version: the same ranking as weighing
every sentence anew, and never a table left over from before an add."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import sgmem
from sgmem.retrieval.dense import TurnDense, scan
from sgmem.retrieval.search import _Acts

FIRST = [
    {"role": "user", "content": "I adopted a cat named Miso. I work as a nurse in Lyon."},
    {"role": "assistant", "content": "What does Miso like to eat?"},
    {"role": "user", "content": "Tuna, mostly. Thanks!"},
]
LATER = [
    {"role": "user", "content": "What is my cat called?"},
    {"role": "assistant", "content": "I'm not sure, I don't remember."},
    {"role": "user", "content": "Her name is Miso, she is a tabby."},
    {"role": "tool", "content": "lookup(cat) -> Miso, tabby, born 2021"},
    {"role": "assistant", "content": "Where do you work?"},
    {"role": "user", "content": "At the hospital in Lyon."},
]
QUERIES = ["What is my cat called?", "Where does the user work?", "What does the cat eat?"]


def _hits(mem: sgmem.Memory, mode: str) -> list[tuple[tuple[str, ...], float, float]]:
    return [
        (tuple(h.message_ids), h.score, h.relevance)
        for q in QUERIES
        for h in mem.search(q, scope="s", k=5, mode=mode, min_score=0)
    ]


def test_an_add_after_a_query_ranks_as_a_fresh_process(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    path = tmp_path / "m"
    with sgmem.Memory(path, embedder=embedder) as mem:
        mem.add(FIRST, scope="s", thread="t")
        _hits(mem, "hybrid")  # the act table of the first index version
        mem.add(LATER, scope="s", thread="t")
        warm = {mode: _hits(mem, mode) for mode in ("hybrid", "vector", "graph")}
    with sgmem.Memory(path, embedder=embedder) as mem:  # nothing kept from before: built from the store
        cold = {mode: _hits(mem, mode) for mode in ("hybrid", "vector", "graph")}
    assert warm == cold
    assert any("What is my cat called?" in q for q in QUERIES) and warm["hybrid"]


def test_weighted_reductions_are_those_of_every_sentence_weighed(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(FIRST + LATER, scope="s", thread="t")
        mem.search("warm up", scope="s")
        idx = next(iter(mem._indexes.values()))
        h = mem.config.hybrid
        for query in QUERIES:  # the first one echoes a stored question
            q = embedder.embed([query])[0]
            d = TurnDense(idx, *scan(idx, q))
            acts = _Acts(idx, h, d.cos)
            assert acts.active
            got = acts.weighted(d)
            want = TurnDense(idx, d.cos * acts.sent_w)  # every run reduced again
            assert np.array_equal(got.cos, want.cos)
            assert np.array_equal(got.best(h.rest_weight), want.best(h.rest_weight))
            assert np.array_equal(got.whole(), want.whole())
        echo = _Acts(idx, h, TurnDense(idx, *scan(idx, embedder.embed([QUERIES[0]])[0])).cos)
        plain = _Acts(idx, h, TurnDense(idx, *scan(idx, embedder.embed([QUERIES[1]])[0])).cos)
        assert (echo.sent_w < plain.sent_w).any()  # the echo weighs less than the same question otherwise
