"""Each channel of the hybrid ranking earns its place on a realistic conversation.

``tests/data/two_friends.json`` is six chat sessions between two friends
(89 turns, written for these tests). For every channel of the default
``hybrid`` mode (``sgmem.retrieval.search``: lexical, dense sentence, dense
turn, the chronological and session priors, date grounding, a reply read with
its question, the named speaker) one question ranks its evidence inside the top k
with the defaults and outside it with that channel's weight set to 0. SGMem's graph
expansion and MGRetrieval's pyramid are off the default path (``w_graph``,
``w_pyramid`` 0: they earned nothing there); their modes are tested below. The ranks were
measured with all-MiniLM-L6-v2 and the default dialogue-act weights; k sits between the rank with and without the
channel (noted per case), so a channel that stops contributing fails here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sgmem

DATA = Path(__file__).resolve().parents[1] / "data" / "two_friends.json"
SCOPE = "friends"


def load() -> dict[str, Any]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def add_all(mem: sgmem.Memory) -> None:
    data = load()
    for s in data["sessions"]:
        at = datetime.fromisoformat(s["at"])
        msgs = [
            {
                "role": "user" if t["speaker"] == data["speakers"][0] else "assistant",
                "name": t["speaker"],
                "content": t["text"],
                "id": t["id"],
                "at": at,
            }
            for t in s["turns"]
        ]
        mem.add(msgs, scope=SCOPE, thread=s["id"], at=at)


@pytest.fixture(scope="module")
def store(embedder: sgmem.Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The conversation ingested once into a durable store; each case reopens it with its own config."""
    path = tmp_path_factory.mktemp("friends")
    with sgmem.Memory(path, embedder=embedder) as mem:
        add_all(mem)
    yield path


def rank_of(mem: sgmem.Memory, question: str, evidence: str, mode: str | None = None) -> int:
    """1-based rank of the evidence turn among the distinct turns returned (99 when absent)."""
    seen: list[str] = []
    for h in mem.search(question, scope=SCOPE, k=60, mode=mode, min_score=0):  # ranking, not the cutoff
        for m in h.message_ids:
            if m not in seen:
                seen.append(m)
    return seen.index(evidence) + 1 if evidence in seen else 99


def hybrid(**weights: float) -> sgmem.Config:
    base = sgmem.Config(min_relevance=0.0)  # ranks are read down to 60: no relevance cutoff
    return base.with_(hybrid=dataclasses.replace(base.hybrid, **weights))  # type: ignore[arg-type]


PRIORS_OFF = {"neighbour_weight": 0.0, "neighbour_dense": 0.0, "propagation": 0.0}

# channel, weights that switch it off, question, evidence turn, k   (measured rank: defaults → off)
CASES = [
    ("lexical", {"w_lexical": 0.0}, "What did Theo's doctor recommend?", "s4:14", 5),  # 2 → 20
    (
        "lexical (a name)",
        {"w_lexical": 0.0},
        "What did Maya reply about her brand-new job at Crumb & Co?",
        "s1:7",
        8,
    ),  # 3 → 15
    ("dense sentence", {"w_sentence": 0.0}, "Who started learning a musical instrument?", "s1:10", 7),  # 4 → 11
    ("dense turn", {"w_turn": 0.0}, "How does Theo commute now?", "s3:14", 5),  # 5 → 6
    (
        "both dense channels",
        {"w_sentence": 0.0, "w_turn": 0.0},
        "What time does Maya wake up for work?",
        "s1:7",
        8,
    ),  # 5 → 12
    ("chronological priors", PRIORS_OFF, "What did Theo's doctor recommend?", "s4:14", 6),  # 2 → 12
    ("chronological priors (another)", PRIORS_OFF, "Why is Theo leaving his job?", "s5:7", 4),  # 2 → 6
    ("neighbour words", {"neighbour_weight": 0.0}, "What did Theo's doctor recommend?", "s4:14", 6),  # 2 → 14
    ("session prior", {"session_weight": 0.0}, "Why is Theo leaving his job?", "s5:7", 3),  # 2 → 5
    (
        "date grounding (day)",
        {"date_day_bonus": 0.0, "date_month_bonus": 0.0},
        "What did Maya say about work on 20 April 2024?",
        "s4:6",
        2,
    ),  # 1 → 3
    (
        "date grounding (month)",
        {"date_day_bonus": 0.0, "date_month_bonus": 0.0},
        "What did Theo say about coffee in June 2024?",
        "s6:3",
        4,
    ),  # 3 → 6
    (
        "reply read with its question",
        {"reply_weight": 0.0},
        "Who will look after Biscuit while Maya is away?",
        "s6:11",
        10,
    ),  # 7 → 21
    ("the named speaker", {"speaker_weight": 0.0}, "What time does Maya wake up for work?", "s1:7", 8),  # 5 → 14
]


@pytest.mark.parametrize(("channel", "off", "question", "evidence", "k"), CASES, ids=[c[0] for c in CASES])
def test_channel_is_needed(
    store: Path, embedder: sgmem.Embedder, channel: str, off: dict[str, float], question: str, evidence: str, k: int
) -> None:
    with sgmem.Memory(store, embedder=embedder, config=hybrid()) as mem:
        with_channel = rank_of(mem, question, evidence)
    with sgmem.Memory(store, embedder=embedder, config=hybrid(**off)) as mem:
        without = rank_of(mem, question, evidence)
    assert with_channel <= k, f"{channel}: with defaults the evidence ranks {with_channel}, expected within top {k}"
    assert without > k, f"{channel} off: the evidence still ranks {without}, within top {k}"


def test_fixture_is_a_conversation_not_a_toy() -> None:
    data = load()
    turns = [t for s in data["sessions"] for t in s["turns"]]
    assert 60 <= len(turns) <= 120 and len(data["sessions"]) >= 5
    ids = {t["id"] for t in turns}
    assert len(ids) == len(turns)
    assert all(e in ids for q in data["questions"] for e in q["evidence"])
    assert all(e in ids for *_, e, _ in CASES)


# ------------------------------------------------------------ mode="pyramid" is not cosine order
PYRAMID_CASES = [
    ("What health problem did Theo's doctor find?", "s4:12"),  # pyramid 2; turn cosine 26, vector 20
    ("Who patiently teaches Theo?", "s2:10"),  # pyramid 1; turn cosine 9, vector 12
]


@pytest.mark.parametrize(("question", "evidence"), PYRAMID_CASES)
def test_pyramid_keyword_path_ranks_what_cosine_does_not(
    store: Path, embedder: sgmem.Embedder, question: str, evidence: str
) -> None:
    """The keyword pyramid finds a memory that cosine similarity, by turn or by sentence, ranks far down."""
    k = 3
    data = load()
    turns = [(t["id"], f"{t['speaker']}: {t['text']}") for s in data["sessions"] for t in s["turns"]]
    vecs = embedder.embed([text for _, text in turns])
    q = embedder.embed([question])[0]
    cosine_order = [turns[i][0] for i in np.argsort(-(vecs @ q), kind="stable")]
    assert evidence not in cosine_order[:k]  # plain cosine over whole turns misses it
    with sgmem.Memory(store, embedder=embedder, config=hybrid()) as mem:
        assert rank_of(mem, question, evidence, mode="vector") > k  # and so does the best sentence
        assert rank_of(mem, question, evidence, mode="pyramid") <= k
