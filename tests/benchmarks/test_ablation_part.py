"""The benchmark part ``ablation``: each channel switched off, the joint folds' choices, and its smoke run."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks import ablation
from benchmarks.ablation import ALL_ON, CHANNELS, RRF, decisions, lme_folds, settings_cv, settings_grid
from tests.benchmarks.test_cv_part import _locomo


def _raw(lexical_off: dict[str, list[float]]) -> dict[str, Any]:
    """LoCoMo conversations a and b, LongMemEval questions q1–q3 (one type: folds 0, 1, 2); every channel off
    scores as all on except the lexical channel on LoCoMo."""
    on = {"a": [1.0, 1.0], "b": [0.0, 0.0]}
    loc = {name: {g: list(v) for g, v in on.items()} for name in (ALL_ON, *CHANNELS)}
    loc["lexical"] = lexical_off
    lme_vals = {name: {q: [0.5, 0.5, 1.0] for q in ("q1", "q2", "q3")} for name in (ALL_ON, *CHANNELS)}
    return {
        "channels": CHANNELS,
        "locomo": {"conversations": ["a", "b"], "recall@10": loc, "ms": {}},
        "longmemeval": {
            "types": {"q1": "t", "q2": "t", "q3": "t"},
            "per_type": 3,
            "protocols": {"user": {"values": lme_vals, "ms": {}}},
        },
    }


def test_a_joint_fold_chooses_on_what_it_did_not_hold_out() -> None:
    # switching the lexical channel off: worse on a (0.8 against 1), much better on b (1 against 0)
    raw = _raw({"a": [0.8, 0.8], "b": [1.0, 1.0]})
    d = decisions(raw)["lexical"]
    # fold 0 holds a out and sees b: off; fold 1 holds b out and sees a: on; fold 2 (no conversation held out,
    # question fold 2) sees both: off
    assert d["choices"] == ["off", "on", "off"]
    # held out: a under "off" (0.8), b under "on" (0.0); a choice that had seen b would score b at 1.0
    assert d["held_out"]["LoCoMo"] == pytest.approx(40.0)
    assert d["held_out"]["LongMemEval user"] == pytest.approx(50.0)


def test_a_channel_that_changes_nothing_is_a_tie_kept_on() -> None:
    d = decisions(_raw({"a": [1.0, 1.0], "b": [0.0, 0.0]}))
    assert d["graph expansion (SGMem)"]["choices"] == ["tie", "tie", "tie"]
    assert d["lexical"]["choices"] == ["tie", "tie", "tie"]


def test_question_folds_are_stratified_by_type() -> None:
    qs = [(f"x{i}", "single-session-user") for i in range(4)] + [(f"y{i}", "multi-session") for i in range(3)]
    folds = lme_folds(qs)
    # every fold holds questions of every type (a type with n questions puts n // 3 or n // 3 + 1 in each)
    assert sorted(f for q, f in folds.items() if q.startswith("x")) == [0, 0, 1, 2]
    assert sorted(f for q, f in folds.items() if q.startswith("y")) == [0, 1, 2]


def _lme(path: Path) -> Path:
    def q(qid: str, qtype: str, question: str, fact: str) -> dict[str, Any]:
        return {
            "question_id": qid,
            "question_type": qtype,
            "question": question,
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": ["s1", "s2"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/27 (Sat) 09:00"],
            "haystack_sessions": [
                [
                    {"role": "user", "content": "Can you suggest a pasta recipe?"},
                    {"role": "assistant", "content": "Try a carbonara with eggs and pecorino."},
                ],
                [
                    {"role": "user", "content": fact, "has_answer": True},
                    {"role": "assistant", "content": "That sounds lovely, enjoy it."},
                ],
            ],
        }

    data = [
        q("a1", "single-session-user", "Where did I adopt my dog?", "I adopted my dog from a shelter in Leeds."),
        q("b1", "knowledge-update", "What instrument am I learning?", "I started learning the cello last week."),
    ]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.benchmark
def test_the_smoke_run_measures_every_channel_on_both_benchmarks(embedder: Any, tmp_path: Path) -> None:
    ctx = SimpleNamespace(
        args=Namespace(
            smoke=True, limit=None, max_questions=None, lme_per_type=3, longmemeval=str(_lme(tmp_path / "l.json"))
        ),
        locomo=_locomo(tmp_path / "locomo.json"),
        embedder=lambda: embedder,
        out=tmp_path / "out",
        plots=tmp_path / "plots",
        progress=lambda s: None,
    )
    raw = ablation.run_part(ctx)
    json.dumps(raw)  # stored as JSON by the suite
    assert set(raw["locomo"]["recall@10"]) == {ALL_ON, *CHANNELS, *settings_grid()}
    for protocol in ("user", "all"):
        assert set(raw["longmemeval"]["protocols"][protocol]["values"][ALL_ON]) == {"a1", "b1"}
    text = ablation.render_part(raw)
    for ch in CHANNELS:
        assert text.count(f"| {ch} |") == 2, ch  # in the ablation table and the folds' table
    assert "### Kept or not, cross-validated" in text and "query p50 ms" in text
    assert "### Settings a user–assistant chat adds, cross-validated" in text and "RRF turn recall@10" in text
    assert ablation.summary_lines(raw)


def _settings_raw(n_locomo: int) -> dict[str, Any]:
    """Two LoCoMo conversations of ``n_locomo`` questions each and six LongMemEval questions of one type (two per
    question fold): the point "assistant_weight=1, session_spread=0.1" costs LoCoMo 0.1 on every question and
    gains LongMemEval 0.5 on every question under both protocols; every other point scores as shipped."""
    points = list(settings_grid())
    better = "assistant_weight=1, session_spread=0.1"
    assert better in points and ALL_ON in points
    loc = {n: {g: [0.5] * n_locomo for g in ("a", "b")} for n in (ALL_ON, *CHANNELS, *points)}
    loc[better] = {g: [0.4] * n_locomo for g in ("a", "b")}
    qids = [f"q{i}" for i in range(6)]
    lme = {n: {q: [0.2, 0.4, 1.0] for q in qids} for n in (ALL_ON, *CHANNELS, *points)}
    lme[better] = {q: [0.6, 0.9, 1.0] for q in qids}
    lme[RRF] = {q: [0.3, 0.6, 1.0] for q in qids}
    return {
        "channels": CHANNELS,
        "locomo": {"conversations": ["a", "b"], "recall@10": loc, "ms": {}},
        "longmemeval": {
            "types": dict.fromkeys(qids, "t"),
            "per_type": 6,
            "protocols": {p: {"values": lme, "ms": {}} for p in ("user", "all")},
        },
    }


def test_the_settings_are_chosen_with_each_benchmark_weighing_one_half() -> None:
    # 900 LoCoMo questions against 6: pooled, LoCoMo's -0.1 would outweigh LongMemEval's +0.5; weighed per
    # benchmark, (−0.1 + 0.5) / 2 > 0 moves every fold to the point that helps LongMemEval
    cv = settings_cv(_settings_raw(450))
    assert cv["joint"]["choices"] == ["assistant_weight=1, session_spread=0.1"] * 3
    assert cv["joint"]["held_out"]["LoCoMo"] == pytest.approx(40.0)
    assert cv["joint"]["held_out"]["LongMemEval all"] == pytest.approx(90.0)
    # LongMemEval's own question folds choose it too; held out beside the RRF baseline on the same questions
    q = cv["questions"]
    assert q["choices"] == ["assistant_weight=1, session_spread=0.1"] * 3
    assert q["held_out"]["user"]["sgmem"] == pytest.approx([60.0, 90.0, 100.0])
    assert q["held_out"]["user"][RRF] == pytest.approx([30.0, 60.0, 100.0])


def test_each_question_fold_chooses_without_its_own_questions() -> None:
    """The point helps only the questions of fold 0 (q0, q3: folds go round robin) and costs the others a
    little: fold 0, held out, is chosen for on folds 1 and 2 alone (the shipped point); folds 1 and 2, which
    see fold 0's questions in training, take it."""
    raw = _settings_raw(3)
    better = "assistant_weight=1, session_spread=0.1"
    for data in raw["longmemeval"]["protocols"].values():
        data["values"][better] = {
            q: [0.6, 1.0, 1.0] if q in ("q0", "q3") else [0.2, 0.3, 1.0] for q in data["values"][ALL_ON]
        }
    q = settings_cv(raw)["questions"]
    assert q["choices"] == [ALL_ON, better, better]
    # held out: fold 0's questions under the shipped point (0.4), the others under the point (0.3)
    assert q["held_out"]["user"]["sgmem"][1] == pytest.approx(100 * (2 * 0.4 + 4 * 0.3) / 6)


def test_a_setting_that_changes_nothing_keeps_the_shipped_point() -> None:
    raw = _settings_raw(3)
    for data in raw["longmemeval"]["protocols"].values():
        data["values"]["assistant_weight=1, session_spread=0.1"] = data["values"][ALL_ON]
    raw["locomo"]["recall@10"]["assistant_weight=1, session_spread=0.1"] = raw["locomo"]["recall@10"][ALL_ON]
    cv = settings_cv(raw)
    assert cv["joint"]["choices"] == [ALL_ON] * 3 and cv["questions"]["choices"] == [ALL_ON] * 3
    assert cv["joint"]["held_out"]["LongMemEval user"] == pytest.approx(40.0)


def test_held_out_figures_face_the_strongest_baseline_per_measure_and_per_type() -> None:
    # dense alone beats the fusion here: the ratio is taken against it, not against RRF
    raw = _settings_raw(3)
    types = {"q0": "a", "q1": "a", "q2": "a", "q3": "b", "q4": "b", "q5": "b"}
    raw["longmemeval"]["types"] = types
    for data in raw["longmemeval"]["protocols"].values():
        data["values"]["BM25 turns"] = {q: [0.1, 0.2, 1.0] for q in types}
        data["values"]["dense sentences"] = {
            q: [0.9, 0.95, 1.0] if t == "a" else [0.1, 0.2, 0.0] for q, t in types.items()
        }
    cv = settings_cv(raw)["questions"]
    assert cv["by_type"]["all"]["dense sentences"]["a"] == pytest.approx([90.0, 95.0, 100.0])
    assert cv["by_type"]["all"]["sgmem"]["b"] == pytest.approx([60.0, 90.0, 100.0])
    assert cv["counts"]["user"] == {"a": 3, "b": 3}
    text = "\n".join(ablation.settings_lines(raw))
    # turn recall@5: dense 50.0 > RRF 30.0; sgmem 60.0 → 1.2×; 1.10× of 50 needs 55
    assert "| all | turn recall@5 | 60.0 | dense sentences 50.0 | 1.200× | 1.05× needs 52.5, 1.10× needs 55.0 |" in text
    # turn recall@10: dense 57.5 < RRF 60.0
    assert "| user | turn recall@10 | 90.0 | RRF(BM25, dense) 60.0 | 1.500× |" in text
    # a target past 100 cannot be met on these questions
    assert "1.05× needs 105.0 (past 100)" in text
    assert "| a | 3 | 60.0 / 90.0 | 90.0 / 95.0 | 100.0 / 100.0 |" in text
