"""Smoke run of the benchmark part ``cv`` (nested cross-validation): its raw results and the section they render."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks import cv

pytestmark = pytest.mark.benchmark

TURNS = [
    ("Mia", "Hi Leo! Guess what, I adopted a ginger cat and named her Pickles."),
    ("Leo", "Pickles is a great name. How is she settling in?"),
    ("Mia", "She hides under the sofa all day, but she loves tuna."),
    ("Leo", "I started learning the cello last week, my teacher is very strict."),
    ("Mia", "I ran my first half marathon in Porto on Sunday!"),
    ("Leo", "My cello teacher says I can play in the autumn recital."),
]
QA = [
    ("What did Mia name her cat?", "Pickles", ["D1:1"], 4),
    ("Which city did Mia run a half marathon in?", "Porto", ["D1:5"], 4),
    ("What instrument is Leo learning?", "cello", ["D1:4"], 1),
    ("What does Mia's cat love?", "tuna", ["D1:3"], 4),
]


def _locomo(path: Path) -> Path:
    conv: dict[str, Any] = {"speaker_a": "Mia", "speaker_b": "Leo", "session_1_date_time": "1:56 pm on 8 May, 2023"}
    conv["session_1"] = [{"speaker": w, "dia_id": f"D1:{i}", "text": t} for i, (w, t) in enumerate(TURNS, start=1)]
    qa = [{"question": q, "answer": a, "evidence": e, "category": c} for q, a, e, c in QA]
    path.write_text(json.dumps([{"sample_id": "tiny-1", "conversation": conv, "qa": qa}]), encoding="utf-8")
    return path


def test_the_smoke_run_folds_one_conversation_and_renders_every_table(embedder: Any, tmp_path: Path) -> None:
    ctx = SimpleNamespace(
        args=Namespace(smoke=True, limit=None, max_questions=None),
        locomo=_locomo(tmp_path / "locomo.json"),
        embedder=lambda: embedder,
        out=tmp_path / "out",
        plots=tmp_path / "plots",
        progress=lambda s: None,
    )
    raw = cv.run_part(ctx)
    json.dumps(raw)  # stored as JSON by the suite
    assert [f["held_out"] for f in raw["folds"]] == ["tiny-1[:2]", "tiny-1[2:]"]
    assert raw["questions"] == 4
    text = cv.render_part(raw)
    for heading in ("### Held-out figures against the strongest baseline", "### The grid", "### Per-fold choices",
                    "### Relevance cutoff, held out", "### Shipped default vs the folds' most frequent choice"):  # fmt: skip
        assert heading in text
    best = max(raw["baselines"].values(), key=lambda v: v["recall@10"])["recall@10"]
    assert f"| {best:.1f} |" in text  # every ratio is against the strongest baseline
    assert "whole turns" in text and "fragments" in text
    assert any("nested-cross-validated" in line for line in cv.summary_lines(raw))
