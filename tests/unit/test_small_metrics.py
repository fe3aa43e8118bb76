"""The small-memory evaluation's per-question metrics and aggregates, on hand-made cases whose values are known.

A stand-in memory returns fixed hits and contexts, so each metric is checked against what it must say:
P@1, the answer inside the context (turn and string), unrelated emptied, and whether ``k=3``'s hits are the
first three of ``k=10``'s. One end-to-end case runs the real ``Memory()`` at its defaults.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

import sgmem
from sgmem.eval.small import score_chat, score_probe
from sgmem.eval.small_base import BASELINES, BM25Variant, TurnBaselines, bm25_ranking, rrf_scores
from sgmem.eval.small_report import bootstrap_mean, bootstrap_ratio, render_small, summarize, worst_failures
from sgmem.eval.suite import Chat, Probe
from sgmem.types import Hit, RecallTrace

NOW = datetime(2025, 3, 1, tzinfo=timezone.utc)
TEXTS = {
    "m1": "Morning!",
    "m2": "We adopted a cat last week, the kids named her Miso.",
    "m3": "What's a good name for a pub quiz team?",
    "m4": "How about 'Quizteama Aguilera'?",
    "m5": "What was my cat's name again?",
    "m6": "I'm not sure, you haven't told me.",
}


def _hit(mid: str) -> Hit:
    return Hit(TEXTS.get(mid, mid), 1.0, "turn", (mid,), "t", NOW, speaker="user", relevance=0.5)


class FakeMemory:
    """``search``/``context_trace`` answering from fixed lists: the default hits, k=3's, the deep ranking, the
    context's turns and block."""

    def __init__(self, k10: list[str], k3: list[str], ctx: list[str], block: str, deep: list[str] | None = None):
        self.k10, self.k3, self.ctx, self.block, self.deep = k10, k3, ctx, block, deep if deep is not None else k10
        self.calls: list[dict[str, Any]] = []

    def search(self, query: str, *, scope: str, k: int = 10, min_score: float | None = None, now: Any = None):
        self.calls.append({"k": k, "min_score": min_score, "now": now})
        ids = self.deep if min_score == 0 else self.k3 if k == 3 else self.k10
        return [_hit(m) for m in ids]

    def context_trace(self, query: str, *, scope: str, budget_tokens: int = 2000, now: Any = None) -> RecallTrace:
        self.calls.append({"budget": budget_tokens, "now": now})
        return RecallTrace(query, scope, self.block, tuple(self.ctx))


class FakeBaselines:
    def __init__(self, rankings: dict[str, list[str]]):
        self._r = rankings

    def rankings(self, query: str) -> dict[str, list[str]]:
        return self._r

    def context(self, ranking: list[str], budget_tokens: int) -> tuple[str, list[str]]:
        top = ranking[:2]
        return "\n".join(TEXTS[t] for t in top), top


CAT = Probe("c/cat", "What's my cat called?", NOW, ("m2",), "Miso", ("form: statement", "about: user"), "pet")
KETTLE = Probe("c/u0", "How do I descale a kettle?", NOW, (), None, ("form: unrelated, general",), "general")


def test_a_right_first_hit_and_the_answer_in_the_context_score_one() -> None:
    mem = FakeMemory(["m2", "m5"], ["m2", "m5"], ["m5", "m2"], "user: " + TEXTS["m2"])
    rec = score_probe(mem, None, CAT)  # type: ignore[arg-type]
    assert rec["p1"] == {"sgmem": True} and rec["ctx"] == {"sgmem": True}
    assert rec["prefix"] and rec["rank"] == 1 and rec["deep_rank"] == 1
    # asked as a user asks: the default k, k=3, the context at the default budget, the deep ranking uncut
    assert {c.get("k") for c in mem.calls} >= {10, 3, 100} and {"budget": 2000, "now": NOW} in mem.calls
    assert all(c["now"] == NOW for c in mem.calls)


def test_a_wrong_first_hit_and_a_broken_prefix_are_flagged() -> None:
    mem = FakeMemory(
        ["m5", "m2", "m3", "m4"], ["m5", "m3", "m2"], ["m5"], "user: " + TEXTS["m5"], deep=["m5", "m6", "m2"]
    )
    rec = score_probe(mem, None, CAT)  # type: ignore[arg-type]
    assert rec["p1"]["sgmem"] is False and rec["ctx"]["sgmem"] is False
    assert rec["prefix"] is False  # k=3 returned m3 second, k=10 m2
    assert rec["rank"] == 2 and rec["deep_rank"] == 3


@pytest.mark.parametrize(
    ("k10", "k3", "prefix"),
    [
        (["m2", "m5", "m3", "m4"], ["m2", "m5", "m3"], True),
        (["m2", "m5"], ["m2", "m5"], True),  # fewer than 3 at both k: fine
        (["m2", "m5", "m3", "m4"], ["m2", "m5"], False),  # k=3 shorter while k=10 is not: the cut depends on k
        (["m2", "m5"], ["m2"], False),
        ([], [], True),
        ([], ["m2"], False),
    ],
)
def test_k3_must_be_the_first_three_of_k10(k10: list[str], k3: list[str], prefix: bool) -> None:
    assert score_probe(FakeMemory(k10, k3, [], ""), None, CAT)["prefix"] is prefix  # type: ignore[arg-type]


def test_the_answer_turn_in_the_context_without_the_answer_string_does_not_count() -> None:
    cut = "user: We adopted a cat last week … "  # a digest that kept the turn but not the name
    assert score_probe(FakeMemory(["m2"], ["m2"], ["m2"], cut), None, CAT)["ctx"]["sgmem"] is False  # type: ignore[arg-type]
    # the string in the block but the answer turn not among its turns: no either
    other = FakeMemory(["m2"], ["m2"], ["m5"], "user: Miso?")
    assert score_probe(other, None, CAT)["ctx"]["sgmem"] is False  # type: ignore[arg-type]
    # the block's own line breaks and indentation do not hide it
    lyon = Probe("c/l", "Which station?", NOW, ("m2",), "Lyon Part-Dieu", ("form: assistant",))
    wrapped = FakeMemory(["m2"], ["m2"], ["m2"], "assistant: take the TER from Lyon\n    Part-Dieu")
    assert score_probe(wrapped, None, lyon)["ctx"]["sgmem"] is True  # type: ignore[arg-type]


def test_an_unrelated_question_is_emptied_only_with_no_hit_and_an_empty_context() -> None:
    assert score_probe(FakeMemory([], [], [], ""), None, KETTLE)["emptied"] is True  # type: ignore[arg-type]
    rec = score_probe(FakeMemory(["m3"], ["m3"], ["m3"], "user: pub quiz"), None, KETTLE)  # type: ignore[arg-type]
    assert rec["emptied"] is False and "p1" not in rec and rec["first"]["id"] == "m3"
    assert score_probe(FakeMemory([], [], ["m3"], "user: pub quiz"), None, KETTLE)["emptied"] is False  # type: ignore[arg-type]


def test_baselines_are_scored_on_the_same_question() -> None:
    base = FakeBaselines(
        {"dense sentences": ["m2", "m5"], "BM25": [], "RRF": ["m5", "m2"], "RRF + role prior": ["m5", "m6"]}
    )
    rec = score_probe(FakeMemory(["m2"], ["m2"], ["m2"], "Miso"), base, CAT)  # type: ignore[arg-type]
    assert rec["p1"] == {"sgmem": True, "dense sentences": True, "BM25": False, "RRF": False, "RRF + role prior": False}
    assert rec["ctx"] == {"sgmem": True, "dense sentences": True, "BM25": False, "RRF": True, "RRF + role prior": False}


def test_rrf_and_bm25_rank_as_defined() -> None:
    fused = rrf_scores([["a", "b"], ["b", "c"]])
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61) and fused["a"] == pytest.approx(1 / 61)
    assert sorted(fused, key=lambda t: -fused[t]) == ["b", "a", "c"]
    ids, texts = ["x", "y", "z"], ["I adopted a cat named Miso.", "The kettle needs descaling.", "Hello!"]
    assert bm25_ranking(texts, ids, "cat Miso", BM25Variant()) == ["x"]  # a turn sharing no term is not ranked
    assert bm25_ranking(texts, ids, "the a", BM25Variant("lucene", True, "en")) == []


def _records(p1: list[list[int]], chats: list[str]) -> list[dict[str, Any]]:
    return [
        {"id": f"q{i}", "chat": c, "fold": 0, "groups": ["form: statement"], "prefix": i != 0,
         "p1": {"sgmem": bool(a), "BM25": bool(b)}, "ctx": {"sgmem": True, "BM25": bool(b)}}
        for i, ((a, b), c) in enumerate(zip(p1, chats, strict=True))
    ]  # fmt: skip


def test_aggregates_and_intervals_on_known_values() -> None:
    recs = _records([[1, 1], [0, 1], [1, 0], [1, 0]], ["a", "a", "b", "c"])
    recs.append({"id": "u", "chat": "c", "fold": 0, "groups": ["form: unrelated, general"], "prefix": True,
                 "emptied": True})  # fmt: skip
    s = summarize(recs, boot=500)
    allc = s["categories"]["all"]
    assert allc["n"] == 4 and allc["p1"]["sgmem"][0] == 0.75 and allc["p1"]["BM25"][0] == 0.5
    lo, hi = allc["p1"]["sgmem"][1:]
    assert 0 <= lo <= 0.75 <= hi <= 1
    assert s["best"] == "BM25" and s["ratio"][0] == pytest.approx(1.5)
    assert s["prefix_broken"] == 1 and s["questions"] == 5
    assert s["categories"]["form: unrelated, general"]["emptied"][0] == 1.0
    # every unit the same: the interval is the point
    assert bootstrap_mean([1.0, 1.0, 0.0, 0.0], ["a", "a", "b", "b"], boot=200)[0] == 0.5
    assert bootstrap_mean([1.0, 1.0], ["a", "b"], boot=200) == (1.0, 1.0, 1.0)
    assert bootstrap_ratio([1.0, 1.0], [1.0, 0.0], ["a", "b"], boot=200)[0] == 2.0
    text = render_small({"defaults": {"k": 10, "budget_tokens": 2000, "assistant_weight": 0.5}, "bm25": "lucene",
                         "suite": {"pool": "build", "source": "p.json", "sha": "abc", "about": "", "chats": 3,
                                   "seed": 0, "turns": [10, 20, 30], "texts": False, "records": recs}})  # fmt: skip
    assert "| P@1 (4 questions) | **75.0 [" in text and "**1.50×**" in text
    assert "| hits of k=3 not the first three of k=10 | **1** of 5 |" in text


def test_the_worst_failures_come_first() -> None:
    recs = [
        {"id": "a", "question": "q", "p1": {"sgmem": False}, "ctx": {"sgmem": True}, "deep_rank": 2},
        {"id": "b", "question": "q", "p1": {"sgmem": False}, "ctx": {"sgmem": False}, "deep_rank": 3},
        {"id": "c", "question": "q", "p1": {"sgmem": False}, "ctx": {"sgmem": False}, "deep_rank": None},
        {"id": "d", "question": "q", "p1": {"sgmem": True}, "ctx": {"sgmem": True}, "deep_rank": 1},
        {"id": "e", "question": "q", "emptied": False},
    ]
    assert [r["id"] for r in worst_failures(recs)] == ["c", "b", "a", "e"]


def test_a_small_chat_at_the_defaults(embedder: sgmem.Embedder) -> None:
    at = datetime(2025, 2, 1, 9, tzinfo=timezone.utc)
    msgs = [{"id": m, "role": "assistant" if m in ("m4", "m6") else "user", "content": t, "at": at}
            for m, t in TEXTS.items()]  # fmt: skip
    chat = Chat("c", [("chat-1", at, msgs)], [CAT, KETTLE])
    recs = {r["id"]: r for r in score_chat(chat, embedder)}
    cat, kettle = recs["c/cat"], recs["c/u0"]
    assert set(cat["p1"]) == {"sgmem", *BASELINES} and cat["chat"] == "c"
    assert cat["p1"]["sgmem"] and cat["ctx"]["sgmem"] and isinstance(cat["prefix"], bool)
    assert cat["expected"] == TEXTS["m2"] and cat["first"]["id"] == "m2"
    assert kettle["emptied"] and kettle["hits"] == 0
    base = TurnBaselines(chat, embedder)
    assert base.dense("What's my cat called?")[0] in {"m2", "m5"}  # raw sentences, best sentence per turn
    block, turns = base.context(base.dense("cat"), 30)  # whole turns, in rank order, within the budget
    assert turns and sgmem.text.count_tokens(block) <= 30
