"""The evaluation's formulas against hand-computed cases, and the leave-one-conversation-out procedure.

``sgmem eval locomo`` reports recall@k: the share of a question's evidence
turns among the first k *distinct* turns returned. These cases pin it so that a
looser formula ("any evidence anywhere in the results") fails.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import sgmem
from sgmem.errors import InvalidInputError
from sgmem.eval.locomo import context_evidence, evaluate, load_locomo, recall_at_k, turns_of
from sgmem.eval.loo import (
    TUNED_GRID,
    apply_overrides,
    loo,
    prepare,
    recall_metric,
    render_loo,
    settings_of,
)


def hits(*ids: list[str]) -> list[SimpleNamespace]:
    return [SimpleNamespace(message_ids=list(m)) for m in ids]


# ------------------------------------------------------------ recall@k
def test_recall_counts_the_share_of_evidence_in_the_first_k() -> None:
    ranked = ["a", "b", "c", "d"]
    assert recall_at_k(ranked, ["b"], 2) == 1.0
    assert recall_at_k(ranked, ["c"], 2) == 0.0  # found, but below the cut
    assert recall_at_k(ranked, ["c"], 3) == 1.0
    assert recall_at_k(ranked, ["a", "d"], 2) == 0.5  # one of two evidence turns
    assert recall_at_k(ranked, ["a", "d", "z"], 4) == pytest.approx(2 / 3)  # "z" never returned
    assert recall_at_k(ranked, ["z"], 10) == 0.0
    assert recall_at_k([], ["a"], 5) == 0.0


def test_duplicate_turns_count_once_toward_k() -> None:
    # a graph-mode session chunk and a turn hit may name the same turn twice
    ranked = turns_of(hits(["a", "b"], ["b", "a"], ["c"]))
    assert ranked == ["a", "b", "c"]
    assert recall_at_k(ranked, ["c"], 3) == 1.0  # the repeated a, b do not push c out of the top 3
    assert recall_at_k(["a", "a", "a", "c"], ["c"], 2) == 1.0  # distinct turns are what k counts


def test_evidence_repeated_in_the_annotation_counts_once() -> None:
    assert recall_at_k(["a", "b"], ["a", "a", "x"], 2) == 0.5


def test_a_question_without_evidence_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="evidence"):
        recall_at_k(["a"], [], 5)


def test_the_harness_reports_the_formula(embedder: sgmem.Embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Through ``evaluate``: a k=1 cut and two-turn evidence give the hand-computed shares."""
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:00 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I signed up for a pottery class in Lisbon."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice! I went camping with my kids at the lake."},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "My pottery bowl came out of the kiln cracked."},
        ],
    }
    qa = [
        # two evidence turns, only one can be in the top 1: recall@1 is exactly 0.5
        {"question": "What did Ann do in pottery?", "category": 1, "evidence": ["D1:1", "D1:3"]},
        {"question": "Where did Bob go camping with his kids?", "category": 4, "evidence": ["D1:2"]},
    ]
    path = tmp_path / "l.json"
    path.write_text(json.dumps([{"sample_id": "c", "conversation": conv, "qa": qa}]))
    rep = evaluate(path, systems=[("hybrid", "hybrid")], ks=(1, 3), budgets=(), embedder=embedder)
    s = rep.systems[0]
    assert s.by_cat[1][1] == [0.5]
    assert s.by_cat[1][4] == [1.0]
    assert s.by_cat[3][1] == [1.0]  # all three turns are returned at k=3
    assert rep.recall("hybrid", 1) == 75.0


# ------------------------------------------------------------ context: fragments and whole turns
def test_context_counts_fragments_and_whole_turns_apart() -> None:
    turn_text = {"a": "Ann: I adopted a cat. She is called Miso.", "b": "Bob: Hi."}
    block = "Relevant memories (oldest first):\n10:00 Ann: … She is called Miso.\nBob: Hi."
    assert context_evidence(block, ["a", "b"], ["a", "b"], turn_text) == (1.0, 0.5)
    assert context_evidence(block, ["b"], ["a"], turn_text) == (0.0, 0.0)  # not in the block at all
    whole = "10:00 Ann: I adopted a cat. She is called Miso."
    assert context_evidence(whole, ["a"], ["a"], turn_text) == (1.0, 1.0)


# ------------------------------------------------------------ LOO
def test_overrides_apply_by_dotted_path_and_leave_the_preset_alone() -> None:
    base = sgmem.Config()
    cfg = apply_overrides(base, {"hybrid.w_lexical": 0.6, "context_turn_tokens": 0, "graph.hops": 2})
    assert (cfg.hybrid.w_lexical, cfg.context_turn_tokens, cfg.graph.hops) == (0.6, 0, 2)
    assert cfg.hybrid.w_sentence == base.hybrid.w_sentence
    assert base.hybrid.w_lexical == 1.2
    with pytest.raises(InvalidInputError, match="hybrid.w_nothing"):
        apply_overrides(base, {"hybrid.w_nothing": 1.0})
    with pytest.raises(sgmem.ConfigError):
        apply_overrides(base, {"hybrid.w_lexical": -1.0})  # the config's own checks still run


def test_grid_settings_one_at_a_time_or_joint() -> None:
    grid = {"hybrid.w_lexical": [0.6, 2.4], "hybrid.w_graph": [0.0]}
    assert settings_of(grid) == [{}, {"hybrid.w_lexical": 0.6}, {"hybrid.w_lexical": 2.4}, {"hybrid.w_graph": 0.0}]
    joint = settings_of(grid, joint=True)
    assert {} in joint and {"hybrid.w_lexical": 2.4, "hybrid.w_graph": 0.0} in joint and len(joint) == 3
    # every tuned hybrid weight is in the declared grid, off, halved and doubled
    assert TUNED_GRID["hybrid.w_lexical"] == [0.0, 0.6, 2.4]
    assert {f"hybrid.{k}" for k in sgmem.HybridConfig.__dataclass_fields__} <= set(TUNED_GRID)


def three_conversations(path) -> None:  # type: ignore[no-untyped-def]
    """Three conversations whose questions share no words with their evidence but a rare name."""
    samples = []
    for i, (name, place) in enumerate([("Zorvath", "Lisbon"), ("Quillon", "Oslo"), ("Marnetti", "Quito")]):
        turns = [
            {"speaker": "Ann", "dia_id": f"D1:{j + 1}", "text": t}
            for j, t in enumerate(
                [
                    "The weather has been lovely and warm all week, we spent every evening outside.",
                    "I baked two loaves of sourdough bread and both turned out great this time.",
                    "We watched a long film about the ocean and its whales yesterday evening.",
                    f"{name} moved to {place}.",
                ]
            )
        ]
        samples.append(
            {
                "sample_id": f"c{i}",
                "conversation": {
                    "speaker_a": "Ann",
                    "speaker_b": "Bob",
                    "session_1_date_time": "1:00 pm on 8 May, 2023",
                    "session_1": turns,
                },
                "qa": [{"question": f"Which city does {name} live in now?", "category": 4, "evidence": ["D1:4"]}],
            }
        )
    path.write_text(json.dumps(samples))


def test_loo_chooses_on_the_other_conversations(embedder: sgmem.Embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "three.json"
    three_conversations(path)
    # the second setting switches off every channel that reads the question
    off = ("w_lexical", "w_sentence", "w_turn", "w_graph", "w_pyramid", "neighbour_dense")
    grid = [{}, {f"hybrid.{w}": 0.0 for w in off}]
    with prepare(load_locomo(path), embedder) as prep:
        res = loo(prep, grid, recall_metric(ks=(1,)))
    assert [f.held_out for f in res.folds] == ["c0", "c1", "c2"]
    assert all(f.chosen == {} for f in res.folds)  # the ablated setting loses on the others
    assert res.loo() == 100.0 and res.in_sample() == 100.0
    assert res.in_sample(0, grid[1]) < 100.0
    assert "cross-validated (LOO)" in render_loo(res, "t")
    # per category: held-out and in-sample (the figures the issue asks for per category)
    assert res.by_category() == {4: (100.0, 100.0)}
    assert res.by_category(0, grid[1])[4][1] < 100.0
    assert "single-hop (cat 4): LOO / in-sample defaults | 100.0 / 100.0" in render_loo(res, "t")


def test_loo_refuses_a_single_conversation(embedder: sgmem.Embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "three.json"
    three_conversations(path)
    with prepare(load_locomo(path, 1), embedder) as prep, pytest.raises(InvalidInputError, match="two conversations"):
        loo(prep, [{}])
