"""The portable gate's τ_noop calibration (ALGORITHMS §2.7) and ``sgmem calibrate``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sgmem.gate import calibrate, estimate_kappa, stream_scores, vmf_score


def test_stream_scores_each_candidate_against_everything_before_it() -> None:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(6, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    got = stream_scores(v)
    assert np.isnan(got[0])
    for i in range(1, 6):
        kappa = estimate_kappa(v[:i].astype(np.float64).sum(axis=0), i, 8)
        assert got[i] == pytest.approx(vmf_score(v[i], v[:i], kappa).score)


def test_tau_noop_is_the_quantile_and_skips_the_top_share() -> None:
    scores = np.concatenate([[np.nan], np.linspace(0.0, 1.0, 101)])
    cal = calibrate(scores, 0.8)
    assert cal.tau_noop == pytest.approx(0.8)
    assert cal.skip_rate == pytest.approx(20 / 101)
    assert cal.candidates == 102
    with pytest.raises(ValueError, match="quantile"):
        calibrate(scores, 1.5)
    with pytest.raises(ValueError, match="two candidates"):
        calibrate(np.array([np.nan]))


def test_cli_calibrate_prints_the_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sgmem.embed
    from sgmem import cli

    from ..derived.helpers import BagEmbedder

    monkeypatch.setattr(sgmem.embed, "default_embedder", lambda: BagEmbedder())
    corpus = tmp_path / "diary.txt"
    corpus.write_text("\n".join(f"Today I walked the dog in the park, day {i % 7}." for i in range(40)))
    assert cli.main(["calibrate", str(corpus), "--quantile", "0.8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["candidates"] == 40 and out["quantile"] == 0.8 and -1 <= out["tau_noop"] <= 1
    assert cli.main(["calibrate", str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt" in capsys.readouterr().err


def test_message_corpora_give_the_llm_free_fact_candidates(tmp_path: Path) -> None:
    from sgmem.eval.corpus import corpus_streams

    path = tmp_path / "chat.json"
    path.write_text(json.dumps([
        {"role": "user", "name": "Ana", "content": "I moved to Lisbon in May. Ok."},
        {"role": "assistant", "content": "Lisbon is a beautiful city to live in."},
    ]))
    assert corpus_streams(str(path), ("user",)) == [["Ana: I moved to Lisbon in May."]]
    assert corpus_streams(str(path), ("user", "assistant"))[0][1] == "assistant: Lisbon is a beautiful city to live in."
