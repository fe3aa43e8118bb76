"""Smoke run of the gate benchmark at toy size (``pytest -m benchmark``): it runs end to end,
measures against its baselines in the same run, and writes its report and trace plot."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.benchmark

PNG = b"\x89PNG\r\n\x1a\n"

LINES = [
    ("Mia", "Hi Leo! Guess what, I adopted a ginger cat and named her Pickles."),
    ("Leo", "Pickles is a great name. How is she settling in?"),
    ("Mia", "She hides under the sofa all day, but she really loves tuna."),
    ("Leo", "I started learning the cello last week with a strict teacher."),
    ("Mia", "I adopted a ginger cat and named her Pickles, did I tell you?"),
    ("Leo", "You did! My cello teacher says I can play in the autumn recital."),
    ("Mia", "I ran my first half marathon in Porto on Sunday morning."),
    ("Leo", "Congratulations on the half marathon in Porto!"),
    ("Mia", "My time was two hours and four minutes, and my knees survived."),
]


class Bag:
    """Fast deterministic word-sum embedder (no model)."""

    name, dim = "bag-32", 32

    def embed(self, texts: Any) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()) or ["_"]:
                seed = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                out[i] += np.random.default_rng(seed).normal(size=self.dim)
            out[i] /= np.linalg.norm(out[i])
        return out


def _locomo(path: Path) -> Path:
    samples = []
    for s in range(2):
        conv: dict[str, Any] = {"speaker_a": "Mia", "speaker_b": "Leo"}
        for k in range(1, 4):
            conv[f"session_{k}"] = [
                {"speaker": sp, "dia_id": f"D{k}:{i + 1}", "text": f"{text} (take {s})"}
                for i, (sp, text) in enumerate(LINES[(k - 1) * 3 : k * 3] + LINES[:2])
            ]
            conv[f"session_{k}_date_time"] = f"1:56 pm on {k + 1} May, 2023"
        qa = [
            {"question": "What is the name of Mia's cat?", "answer": "Pickles", "evidence": ["D1:1"], "category": 4},
            {"question": "Where did Mia run a half marathon?", "answer": "Porto", "evidence": ["D3:1"], "category": 4},
        ]
        samples.append({"sample_id": f"conv-{s}", "conversation": conv, "qa": qa})
    path.write_text(json.dumps(samples))
    return path


def test_gate_benchmark_reports_routing_llm_calls_latency_context_and_a_trace_plot(tmp_path: Path) -> None:
    from benchmarks import gate

    data = _locomo(tmp_path / "locomo.json")
    out = tmp_path / "out"
    report = gate.main(
        ["--locomo", str(data), "--sizes", "400", "--candidates", "20", "--out", str(out)], embedder=Bag()
    )
    routing = report["routing"]
    for name in ("off", "adaptive", "default", "binary"):
        r = routing[name]
        assert r["add"] + r["update"] + r["noop"] == routing["off"]["add"] > 0
        assert 0 <= r["fact_recall@10"] <= 100
    # the baseline stores every candidate; a gate never stores more
    assert routing["adaptive"]["facts"] <= routing["off"]["facts"]
    assert routing["binary"]["update"] == 0 and routing["off"]["noop"] == 0
    # raw turns are never gated: the default search finds the same evidence with or without the gate
    assert routing["adaptive"]["turn_recall@10"] == routing["off"]["turn_recall@10"]
    assert 0.0 <= routing["approx_agreement"] <= 1.0
    llm = report["llm"]["adaptive gate"]
    assert llm["mem0_style"] > 0 and llm["per_1000"]["facts"] > 0
    (lat,) = report["latency"]
    assert lat["memories"] == 400 and 0 <= lat["agreement_binary"] <= 1 and lat["exact_binary_ms_mean"] > 0
    ctx = report["context"]
    assert ctx[0]["kinds"] == [] and all(r["max_tokens"] <= 1000 for r in ctx)
    assert all(0 <= r["strict"] <= r["with_sources"] <= 100 for r in ctx)
    assert (out / "gate_trace.png").read_bytes()[:8] == PNG
    assert "| gate off (baseline)" in (out / "gate.md").read_text()
    assert json.loads((out / "gate.json").read_text())["routing"]["off"]["facts"] == routing["off"]["facts"]
