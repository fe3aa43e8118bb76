"""The LongMemEval evaluation: its metrics against hand-computed cases, its protocols, and a tiny end-to-end run.

The metrics follow LongMemEval's own retrieval code: ``recall_any@K`` (any evidence among the first K),
``recall_all@K`` (every one) and ``ndcg_any@K`` (binary relevance; the first item undiscounted, item i from 2
divided by log2 i), at turn level and at session level after mapping ranked turns to sessions in first-seen order.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

import sgmem
from sgmem.errors import InvalidInputError
from sgmem.eval.locomo import turns_of
from sgmem.eval.longmemeval import (
    SYSTEMS,
    evaluate_longmemeval,
    ingest_haystack,
    load_longmemeval,
    ndcg_any,
    parse_lme_date,
    render_longmemeval,
    report_from_raw,
    report_to_raw,
    retrieval_metrics,
)


def test_recall_any_all_and_the_share_of_evidence_in_the_first_k() -> None:
    m = retrieval_metrics(["a", "x", "b", "y", "c"], {"a", "c"}, n_items=10, ks=(2, 5))
    assert m["recall_any@2"] == 1.0 and m["recall_all@2"] == 0.0 and m["recall@2"] == 0.5
    assert m["recall_any@5"] == 1.0 and m["recall_all@5"] == 1.0 and m["recall@5"] == 1.0
    miss = retrieval_metrics(["x", "y", "a"], {"a"}, n_items=3, ks=(2,))
    assert miss["recall_any@2"] == 0.0 and miss["ndcg_any@2"] == 0.0
    # a repeated item counts once (rankings are of distinct turns)
    assert retrieval_metrics(["x", "x", "a"], {"a"}, n_items=3, ks=(2,))["recall_any@2"] == 1.0
    with pytest.raises(InvalidInputError):
        retrieval_metrics(["a"], set(), n_items=1, ks=(1,))


def test_ndcg_discounts_as_the_benchmark_code_does() -> None:
    # relevant at ranks 1 and 3 of 2 relevant items: (1 + 1/log2 3) / (1 + 1/log2 2)
    assert ndcg_any(["a", "x", "b"], {"a", "b"}, n_items=5, k=3) == pytest.approx((1 + 1 / math.log2(3)) / 2)
    # one relevant item at rank 2: (1/log2 2) / 1 = 1 — the benchmark's dcg leaves rank 2 undiscounted too
    assert ndcg_any(["x", "a"], {"a"}, n_items=5, k=2) == pytest.approx(1.0)
    assert ndcg_any(["x", "y", "a"], {"a"}, n_items=5, k=3) == pytest.approx(1 / math.log2(3))
    assert ndcg_any(["a"], {"a"}, n_items=5, k=1) == 1.0


def test_dates_parse_and_a_bad_one_says_what_was_expected() -> None:
    assert parse_lme_date("2023/05/20 (Sat) 02:21").isoformat() == "2023-05-20T02:21:00+00:00"
    with pytest.raises(InvalidInputError, match="2023/05/20"):
        parse_lme_date("May 20th")


def _record(qid: str, qtype: str, question: str, sessions: list[list[dict]], dates: list[str]) -> dict:
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "answer": "-",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": [f"{qid}_s{i}" for i in range(len(sessions))],
        "haystack_dates": dates,
        "haystack_sessions": sessions,
        "answer_session_ids": [],
    }


def _tiny_file(tmp_path: Path) -> Path:
    d = ["2023/05/01 (Mon) 09:00", "2023/05/08 (Mon) 09:00", "2023/05/15 (Mon) 09:00"]
    filler = [
        {"role": "user", "content": "Can you give me a recipe for banana bread?"},
        {
            "role": "assistant",
            "content": "Mash three ripe bananas, mix with flour, sugar and eggs, and bake for an hour.",
        },
    ]
    recs = [
        _record(
            "q1",
            "single-session-user",
            "What breed is my dog?",
            [
                filler,
                [
                    {
                        "role": "user",
                        "content": "My dog Biscuit is a border collie and loves the park.",
                        "has_answer": True,
                    },
                    {"role": "assistant", "content": "Border collies are very energetic dogs that need exercise."},
                ],
                [
                    {"role": "user", "content": "What is the capital of Peru?"},
                    {"role": "assistant", "content": "Lima."},
                ],
            ],
            d,
        ),
        _record(
            "q2",
            "single-session-assistant",
            "Which paint colour did you recommend for my kitchen?",
            [
                filler,
                [
                    {"role": "user", "content": "Which colour should I paint my kitchen?"},
                    {
                        "role": "assistant",
                        "content": "I recommend a warm sage green for your kitchen.",
                        "has_answer": True,
                    },
                ],
            ],
            d[:2],
        ),
        _record("q3_abs", "single-session-user", "Where did I go skiing?", [filler], d[:1]),
    ]
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(recs, f)
    return path


def test_loading_skips_abstention_questions_and_trims_a_haystack_around_its_evidence(tmp_path: Path) -> None:
    path = _tiny_file(tmp_path)
    qs = load_longmemeval(path)
    assert [q.question_id for q in qs] == ["q1", "q2"]
    assert qs[0].evidence("all") == {"q1_s1#0"} and qs[1].evidence("user") == set()
    trimmed = load_longmemeval(path, max_sessions=1)
    assert [s[0] for s in trimmed[0].sessions] == ["q1_s1"]  # the evidence session is always kept
    assert len(load_longmemeval(path, per_type=1)) == 2
    with pytest.raises(InvalidInputError, match="LongMemEval"):
        load_longmemeval(tmp_path / "missing.json")


def test_both_protocols_end_to_end(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    qs = load_longmemeval(_tiny_file(tmp_path))
    user = evaluate_longmemeval(qs, protocol="user", embedder=embedder, ks=(1, 3))
    # the assistant-evidence question has nothing to find when only the user's turns are stored
    assert user.n_questions == 1 and user.skipped == 1
    full = evaluate_longmemeval(qs, protocol="all", embedder=embedder, ks=(1, 3))
    assert full.n_questions == 2 and full.skipped == 0
    for rep in (user, full):
        for system in SYSTEMS:
            assert rep.mean(system, "session", "recall_any@3") == 100.0, (rep.protocol, system)
    # with the user's turns only, the dog question's evidence is the first turn sgmem returns
    assert user.values[SYSTEMS[0]]["turn"]["single-session-user"]["recall@1"] == [1.0]
    assert full.values[SYSTEMS[0]]["turn"]["single-session-user"]["recall@3"] == [1.0]
    again = report_from_raw(json.loads(json.dumps(report_to_raw(full))))
    assert render_longmemeval(again) == render_longmemeval(full)
    text = render_longmemeval(full)
    assert "2 questions scored" in text and "RRF(BM25, dense)" in text and "single-session-assistant" in text
    with pytest.raises(InvalidInputError, match="protocol"):
        evaluate_longmemeval(qs, protocol="assistant", embedder=embedder)


def test_a_session_drawn_twice_into_a_haystack_is_stored_twice_and_scored_as_one(
    tmp_path: Path, embedder: sgmem.Embedder
) -> None:
    # the official format lists a filler session once per draw: the same id, the same turns, two dates
    filler = [
        {"role": "user", "content": "Can you give me a recipe for banana bread?"},
        {"role": "assistant", "content": "Mash three ripe bananas, mix with flour and eggs, and bake it."},
    ]
    evidence = [
        {"role": "user", "content": "My dog Biscuit is a border collie and loves the park.", "has_answer": True},
        {"role": "assistant", "content": "Border collies are energetic dogs."},
    ]
    rec = _record("q9", "single-session-user", "What breed is my dog?", [filler, evidence, filler, evidence], [])
    rec["haystack_session_ids"] = ["shared_0", "answer_1", "shared_0", "answer_1"]
    rec["haystack_dates"] = [f"2023/05/0{d} (Mon) 09:00" for d in (1, 2, 3, 4)]
    path = tmp_path / "repeat.json"
    path.write_text(json.dumps([rec]), encoding="utf-8")
    (q,) = load_longmemeval(path)
    keys = [key for key, _, _ in q.sessions]
    assert len(set(keys)) == 4 and keys[:2] == ["shared_0", "answer_1"]
    assert [q.session_ids.get(k, k) for k in keys] == ["shared_0", "answer_1", "shared_0", "answer_1"]
    assert [at.day for _, at, _ in q.sessions] == [1, 2, 3, 4]  # each copy at its own date
    assert q.evidence("all") == {"answer_1#0"}  # both copies' evidence turn is the benchmark's one turn
    stored = [t for _, _, turns in q.sessions for t, *_ in turns]
    # both copies ranked first count once: the next distinct turn is the filler's
    assert q.ranked([stored[6], stored[2], stored[0], stored[4]], "all") == (
        ["answer_1#0", "shared_0#0"],
        ["answer_1", "shared_0"],
    )
    with sgmem.Memory(embedder=embedder) as mem:
        ingest_haystack(mem, q, "all")
        hits = mem.search("bread or dogs", scope="q", k=20, mode="vector", min_score=0)
        assert sorted(turns_of(hits)) == sorted(stored)  # every turn of every copy kept
        # each copy a conversation of its own, as the chat held it twice: not its turns in the original's thread
        assert sorted(mem.threads(scope="q")) == sorted(keys)
    rep = evaluate_longmemeval([q], protocol="all", embedder=embedder, ks=(1, 2))
    assert rep.n_questions == 1
    assert rep.mean(SYSTEMS[0], "turn", "recall@2") == 100.0
    assert rep.mean(SYSTEMS[0], "session", "recall_any@1") == 100.0


def test_several_seeds_grow_a_subset_without_redrawing_the_first(tmp_path: Path) -> None:
    turn = [{"role": "user", "content": "I moved to Leeds.", "has_answer": True}]
    recs = [_record(f"q{i}", "single-session-user", "Where do I live?", [turn], ["2023/05/01 (Mon) 09:00"])
            for i in range(12)]  # fmt: skip
    path = tmp_path / "many.json"
    path.write_text(json.dumps(recs), encoding="utf-8")
    ids = [{q.question_id for q in load_longmemeval(path, per_type=3, seed=s)} for s in (0, 1)]
    both = {q.question_id for q in load_longmemeval(path, per_type=3, seed=[0, 1])}
    assert ids[0] != ids[1] and both == ids[0] | ids[1]
