"""The exchange memory unit (``Config.memory_unit``): MGRetrieval's one exchange, both speakers, per hit.

Uses the realistic two-friends conversation of ``test_ranking_channels``. With
the default turn unit a hit is one message; with ``"exchange"`` it is the
message and the reply to it, so the question Maya asked comes back with Theo's
answer. Setting the unit back to ``"turn"`` (or dropping the grouping step in
``sgmem.retrieval.search``) makes these fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import sgmem

from .test_ranking_channels import SCOPE, add_all


@pytest.fixture(scope="module")
def store(embedder: sgmem.Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("friends_unit")
    with sgmem.Memory(path, embedder=embedder) as mem:
        add_all(mem)
    yield path


def open_with(path: Path, embedder: sgmem.Embedder, unit: str) -> sgmem.Memory:
    return sgmem.Memory(path, embedder=embedder, config=sgmem.Config(min_relevance=0.0, memory_unit=unit))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "pyramid"])
def test_an_exchange_hit_holds_the_question_and_its_answer(store: Path, embedder: sgmem.Embedder, mode: str) -> None:
    with open_with(store, embedder, "exchange") as mem:
        hits = mem.search("Who is Theo's music teacher?", scope=SCOPE, k=3, mode=mode)
    assert len(hits) == 3 and all(h.kind == "round" for h in hits)
    top = next(h for h in hits if "s2:10" in h.message_ids)  # the answer (rank 1 of the hybrid's turns)
    # Maya's question and Theo's answer naming the teacher, in conversation order, both speakers
    assert top.message_ids == ("s2:9", "s2:10")
    assert "Maya: Please do! How were the cello lessons?" in top.text and "Ms. Varga" in top.text
    assert top.why["unit"] == {"unit": "exchange", "turns": 2, "ranked_by": 1}
    assert len({m for h in hits for m in h.message_ids}) == 6  # k counts exchanges, none repeated


def test_the_turn_unit_returns_single_messages(store: Path, embedder: sgmem.Embedder) -> None:
    with open_with(store, embedder, "turn") as mem:
        hits = mem.search("Who is Theo's music teacher?", scope=SCOPE, k=3)
    assert [h.kind for h in hits] == ["turn"] * 3
    assert hits[0].message_ids == ("s2:10",) and "unit" not in hits[0].why


def test_filters_hold_inside_an_exchange(store: Path, embedder: sgmem.Embedder) -> None:
    with open_with(store, embedder, "exchange") as mem:
        hits = mem.search("Who is Theo's music teacher?", scope=SCOPE, k=2, exclude_message_ids=["s2:9"])
        ctx = mem.context("Who is Theo's music teacher?", scope=SCOPE, budget_tokens=120, min_score=0)
    assert "s2:9" not in {m for h in hits for m in h.message_ids}
    assert hits[0].message_ids == ("s2:10",)
    # the context block carries the whole exchange: the question before the answer
    assert ctx.index("How were the cello lessons?") < ctx.index("Ms. Varga")


def test_graph_and_sgrm_keep_their_own_chunks(store: Path, embedder: sgmem.Embedder) -> None:
    with open_with(store, embedder, "exchange") as mem:
        assert {h.kind for h in mem.search("cello lessons", scope=SCOPE, k=2, mode="vector")} == {"round"}
        assert {h.kind for h in mem.search("cello lessons", scope=SCOPE, k=2, mode="graph")} == {"turn"}
        assert {h.kind for h in mem.search("cello lessons", scope=SCOPE, k=2, mode="sgrm")} == {"segment"}


def test_an_unknown_unit_is_refused() -> None:
    with pytest.raises(sgmem.ConfigError, match="memory_unit"):
        sgmem.Config(memory_unit="session")  # type: ignore[arg-type]
