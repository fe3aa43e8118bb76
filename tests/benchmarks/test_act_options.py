"""Smoke run of benchmarks.act_options: the MLP option on a small train subset, and the threshold rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from benchmarks import act_options
from sgmem.text.acts import FILLER, FRAGMENT, NON_ANSWER, STATEMENT, labelled_acts, shown

pytestmark = pytest.mark.benchmark


def test_the_threshold_keeps_facts_first_then_recognises_the_most_non_answers() -> None:
    texts = ["I moved to Leeds last year."] * 4 + ["I don't know, sorry about that."] * 4
    truth = np.array([STATEMENT] * 4 + [NON_ANSWER] * 4)
    p = np.zeros((8, 5))
    # one statement looks like a non-answer at 0.9; the non-answers score 0.85 and 0.96
    p[:4, STATEMENT] = 1.0
    p[0] = [0.1, 0, 0.9, 0, 0]
    p[4:6] = [0.15, 0, 0.85, 0, 0]
    p[6:] = [0.04, 0, 0.96, 0, 0]
    sure, r = act_options.choose_threshold(p, truth, texts)
    assert 0.9 < sure <= 0.96  # below, the statement is lost; above, the surest non-answers are missed too
    assert r == {"recall": 0.5, "precision": 1.0, "facts_lost": 0.0}


def test_the_mlp_option_is_fitted_by_cross_validation_and_classifies_sentences(embedder: Any) -> None:
    by_act: dict[int, list[str]] = {}
    for text, act in labelled_acts("train"):
        by_act.setdefault(act, []).append(text)
    texts = [t for act in sorted(by_act) for t in by_act[act][:10]]
    y = np.array([act for act in sorted(by_act) for _ in by_act[act][:10]])
    forms = {p: np.asarray(embedder.embed([shown(p, t) for t in texts])) for p in ("user", "assistant")}
    mlp = act_options.mlp_option(forms, texts, y, k=2, grid=((16, 1e-2),))
    assert (mlp["width"], mlp["alpha"]) == (16, 1e-2) and mlp["sure"] in act_options.THRESHOLDS
    got = mlp["predict"](texts, forms["assistant"])
    r = act_options.rates(y, got)
    assert len(got) == len(texts)
    assert r["recall"] >= 0.5 and r["facts_lost"] <= 0.2  # in-sample: the head has learnt the acts
    assert set(got[y == FILLER].tolist()) & {FILLER, FRAGMENT}  # filler or a reply fragment, not all statements
