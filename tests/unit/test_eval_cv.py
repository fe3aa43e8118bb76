"""Nested leave-one-conversation-out cross-validation (sgmem.eval.cv): selection never sees the held-out group."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import sgmem
from sgmem.errors import InvalidInputError
from sgmem.eval.cv import (
    Axis,
    Evaluator,
    choose_cutoff,
    coordinate_descent,
    emptied,
    kept,
    modal_choices,
    nested_cv,
    pooled,
    run_cv,
    verdicts,
)
from sgmem.eval.locomo import Question

from .tiny_locomo import CONVS as TWO_CONVS
from .tiny_locomo import make_conv

AXES = (Axis("x", (0, 1, 2), 1), Axis("y", (0, 1), 0))


def test_coordinate_descent_reaches_the_best_cell_from_a_start_that_is_not_it() -> None:
    # a separable score: x=2 and y=1 are best; the start (1, 0) is neither
    def score(s: dict) -> float:  # type: ignore[type-arg]
        return -((s["x"] - 2) ** 2) - (s["y"] - 1) ** 2

    best, value, trace = coordinate_descent(AXES, score, sweeps=2)
    assert best == {"x": 2, "y": 1} and value == 0
    assert [t["axis"] for t in trace][:2] == ["x", "y"]


def test_coordinate_descent_keeps_the_current_value_on_a_tie() -> None:
    best, _, _ = coordinate_descent(AXES, lambda s: 0.0)
    assert best == {"x": 1, "y": 0}  # the start: nothing beat it


# A tiny grid whose answer is known: ``w`` is best at 0 and gates ``g`` (g only matters while w > 0, where g=1
# is better); ``t`` changes nothing; ``u`` is best at 1 and 2 alike (a tie with its start, 1).
GATED = (
    Axis("g", (0, 1), 0, needs="w"),
    Axis("w", (0, 1, 2), 1),
    Axis("t", (0, 1), 0),
    Axis("u", (0, 1, 2), 1),
)


def _gated(s: dict) -> float:  # type: ignore[type-arg]
    return -float(s["w"]) + (0.5 * s["g"] if s["w"] > 0 else 0.0) + (0.0 if s["u"] == 0 else 0.3)


def test_an_axis_gated_off_by_another_is_inert_not_a_verdict() -> None:
    # one sweep: g is visited while w is still 1 and moves to 1; w then moves to 0, which makes g inert
    best, _, trace = coordinate_descent(GATED, _gated, sweeps=1)
    assert best == {"g": 1, "w": 0, "t": 0, "u": 1}
    v = verdicts(GATED, best, trace)
    assert v["g"]["verdict"] == "inert" and v["g"]["inert"] == "w = 0"
    assert v["w"] == {"chosen": 0, "tied": [], "inert": None, "verdict": "chosen"}
    # without the gate declared, g's visit alone reads as a verdict for g=1: the trace cannot see w's later move
    assert verdicts((Axis("g", (0, 1), 0), *GATED[1:]), best, trace)["g"]["verdict"] == "chosen"


def test_an_axis_no_value_of_which_changes_the_score_is_inert() -> None:
    best, _, trace = coordinate_descent(GATED, _gated, sweeps=2)
    v = verdicts(GATED, best, trace)
    assert v["t"]["verdict"] == "inert" and v["t"]["inert"] == "no value changed the score"
    assert v["t"]["tied"] == [1]


def test_a_value_kept_on_a_tie_with_the_start_is_reported_as_a_tie() -> None:
    best, _, trace = coordinate_descent(GATED, _gated, sweeps=2)
    v = verdicts(GATED, best, trace)
    assert v["u"]["chosen"] == 1 and v["u"]["verdict"] == "tie" and v["u"]["tied"] == [2]


def test_nested_folds_carry_their_verdicts() -> None:
    def values(s: dict, group: str) -> np.ndarray:  # type: ignore[type-arg]
        return np.full(4, _gated(s))

    folds = nested_cv(["a", "b"], GATED, values, sweeps=1)
    assert [f.verdicts["g"]["verdict"] for f in folds] == ["inert", "inert"]
    assert [f.verdicts["u"]["verdict"] for f in folds] == ["tie", "tie"]


def test_an_axis_must_start_on_one_of_its_values() -> None:
    with pytest.raises(InvalidInputError, match="x start"):
        Axis("x", (0, 1), 5)


# Groups a, b, c: on a and b, x=0 is best by a little; on c, x=2 is best by far. Pooled over all three, x=2 wins,
# so a fold holding c out chooses x=2 only if c's values leak into its selection.
PREFS = {"a": {0: 0.6, 1: 0.5, 2: 0.4}, "b": {0: 0.6, 1: 0.5, 2: 0.4}, "c": {0: 0.0, 1: 0.1, 2: 1.0}}


def _values(setting: dict, group: str) -> np.ndarray:  # type: ignore[type-arg]
    return np.full(10, PREFS[group][setting["x"]])


def test_a_fold_chooses_on_the_other_groups_only() -> None:
    folds = {f.held_out: f for f in nested_cv(["a", "b", "c"], AXES[:1], _values)}
    # pooled over a, b and c, x=2 is best (mean 0.6 against 0.4): the fold holding c out must not see that
    assert pooled([_values({"x": 2}, g) for g in PREFS]) > pooled([_values({"x": 0}, g) for g in PREFS])
    assert folds["c"].chosen == {"x": 0}
    assert folds["c"].held.tolist() == [0.0] * 10  # measured on c under the choice made without it
    assert folds["c"].train == pytest.approx(0.6)
    # holding a (or b) out, the others pool b and c: x=2 (0.7) beats x=0 (0.3)
    assert folds["a"].chosen == {"x": 2} and folds["b"].chosen == {"x": 2}


def test_the_held_out_group_is_read_once_for_the_chosen_setting() -> None:
    calls: list[tuple[int, str]] = []

    def values(setting: dict, group: str) -> np.ndarray:  # type: ignore[type-arg]
        calls.append((setting["x"], group))
        return _values(setting, group)

    folds = nested_cv(["a", "b", "c"], AXES[:1], values)
    # the calls of each fold end with its held-out read; before that, none of them is its held-out group
    start = 0
    for f in folds:
        end = calls.index((f.chosen["x"], f.held_out), start)
        assert all(g != f.held_out for _, g in calls[start:end])
        start = end + 1
    assert start == len(calls)


def test_pooling_is_question_weighted() -> None:
    assert pooled([np.ones(30), np.zeros(10)]) == pytest.approx(0.75)


def test_leaving_one_out_needs_two_groups() -> None:
    with pytest.raises(InvalidInputError, match="groups"):
        nested_cv(["a"], AXES, _values)


def test_the_cutoff_is_the_lowest_threshold_emptying_the_target() -> None:
    best = [0.1] * 18 + [0.3, 0.4]  # 90 % of unrelated questions peak at 0.1
    assert emptied(best, 0.2) == pytest.approx(0.9)
    assert choose_cutoff(best, (0.2, 0.35, 0.45), target=0.9) == 0.2
    assert choose_cutoff(best, (0.2, 0.35, 0.45), target=0.95) == 0.35  # 0.3 < 0.35: 19 of 20
    assert choose_cutoff(best, (0.2, 0.3), target=1.0) == 0.3  # none reaches it: the highest


def test_the_relative_rule_keeps_a_short_answer_beside_a_close_match() -> None:
    evidence = [[[0.2, 0.5]], [[0.1, 0.15]]]  # (relevance, best hit's relevance) per evidence hit, per question
    assert kept(evidence, 0.275, 0.0) == (0, 2)
    assert kept(evidence, 0.275, 0.3) == (1, 2)  # 0.2 >= 0.3 × 0.5 once the best reaches the threshold
    assert kept(evidence, 0.275, 0.5) == (0, 2)


def test_the_most_frequent_choice_per_setting() -> None:
    modal = modal_choices([{"x": 1, "y": 0}, {"x": 2, "y": 0}, {"x": 2, "y": 1}])
    assert modal == {"x": (2, 2), "y": (0, 2)}
    assert modal_choices([{"x": 1}, {"x": 2}]) == {"x": (1, 1)}  # a tie: the value chosen first


# --------------------------------------------------------------- on LoCoMo-shaped conversations
CONVS = [
    *TWO_CONVS,
    make_conv(
        "c",
        [
            ("Mia", "Morning Leo."),
            ("Leo", "I finally fixed the old bicycle my dad gave me."),
            ("Mia", "I'm reading a novel about a lighthouse keeper in Maine."),
            ("Leo", "Cool."),
        ],
        [
            Question("What did Leo fix?", 4, ["D1:2"], "a bicycle"),
            Question("What is Mia reading about?", 4, ["D1:3"], "a lighthouse keeper"),
        ],
    ),
]
GRID = (Axis("hybrid.w_lexical", (0.0, 1.0), 1.0), Axis("graph.knn_k", (1, 3), 3, ingest=True))


@pytest.fixture(scope="module")
def memo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cv") / "memo.jsonl"


@pytest.fixture(scope="module")
def raw(embedder: sgmem.Embedder, memo: Path) -> dict:  # type: ignore[type-arg]
    return run_cv(CONVS, embedder, memo=memo, grid=GRID, digest_grid=(0, 40), cutoff_grid=(0.2, 0.3))


def test_each_fold_measures_the_held_out_conversation_under_choices_made_on_the_others(
    raw: dict,  # type: ignore[type-arg]
    embedder: sgmem.Embedder,
    memo: Path,
) -> None:
    assert [f["held_out"] for f in raw["folds"]] == ["a", "b", "c"]
    assert raw["questions"] == 8
    ev = Evaluator(CONVS, embedder, memo, ingest_keys=["graph.knn_k"])
    try:
        for f in raw["folds"]:
            others = [g for g in ("a", "b", "c") if g != f["held_out"]]
            # the cutoff: the lowest threshold emptying 95 % of the others' unrelated contexts, not the held-out's
            unrelated = [b for g in others for b in ev.relevance(f["retrieval"], g)["unrelated"]]
            assert f["min_relevance"] == choose_cutoff(unrelated, (0.2, 0.3))
            # the digest: the best whole-turn context on the others
            whole = {
                d: pooled(
                    [
                        ev.context(
                            {**f["retrieval"], "min_relevance": f["min_relevance"], "context_turn_tokens": d}, g
                        )[:, 1]
                        for g in others
                    ]
                )  # fmt: skip
                for d in (0, 40)
            }
            assert whole[f["context_turn_tokens"]] == max(whole.values())
            held = ev.recall(f["retrieval"], f["held_out"])
            assert f["held"]["recall@10"] == held[:, 1].tolist()
        assert ev.evaluated == 0  # everything came from the memo
    finally:
        ev.close()
    n = sum(len(f["held"]["recall@10"]) for f in raw["folds"])
    pooled10 = sum(sum(f["held"]["recall@10"]) for f in raw["folds"]) / n
    assert raw["held_out"]["recall@10"] == pytest.approx(100 * pooled10)


def test_the_baselines_are_measured_on_the_same_questions(raw: dict) -> None:  # type: ignore[type-arg]
    assert set(raw["baselines"]) == {"BM25 turns (sgmem bm25)", "dense sentences", "RRF(BM25, dense), k=60"}
    for vals in raw["baselines"].values():
        assert set(vals) == {"recall@5", "recall@10", "recall@20", "context fragments", "context whole turns"}
    json.dumps(raw)  # JSON-ready


def test_a_rerun_reads_every_evaluation_from_the_memo(
    raw: dict,  # type: ignore[type-arg]
    embedder: sgmem.Embedder,
    memo: Path,
) -> None:
    again = run_cv(CONVS, embedder, memo=memo, grid=GRID, digest_grid=(0, 40), cutoff_grid=(0.2, 0.3))
    assert again["evaluations"]["computed"] == 0
    assert again["held_out"] == raw["held_out"]
    assert [f["retrieval"] for f in again["folds"]] == [f["retrieval"] for f in raw["folds"]]


def test_one_conversation_is_folded_by_its_question_halves(embedder: sgmem.Embedder, memo: Path) -> None:
    res = run_cv(CONVS[:1], embedder, memo=memo, grid=GRID[:1], sweeps=1, digest_grid=(0,))
    assert [f["held_out"] for f in res["folds"]] == ["a[:1]", "a[1:]"]
    assert res["questions"] == 3
