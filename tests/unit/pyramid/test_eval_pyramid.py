"""The LoCoMo harness runs the pyramid systems side by side (``sgmem eval locomo --pyramid``)."""

from __future__ import annotations

import dataclasses
import json

import sgmem
from sgmem.cli import build_parser
from sgmem.eval.locomo import evaluate, render_report


def tiny_locomo(path) -> None:  # type: ignore[no-untyped-def]
    conv = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:00 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I signed up for a pottery class in Lisbon."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice! I went camping with my kids."},
        ],
        "session_2_date_time": "2:00 pm on 9 June, 2023",
        "session_2": [
            {"speaker": "Ann", "dia_id": "D2:1", "text": "My pottery bowl came out of the kiln."},
            {"speaker": "Bob", "dia_id": "D2:2", "text": "Camping again next weekend at the lake."},
        ],
    }
    qa = [
        {"question": "What has Ann made in pottery?", "category": 1, "evidence": ["D1:1", "D2:1"]},
        {"question": "Where does Bob go camping?", "category": 4, "evidence": ["D2:2"]},
    ]
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conv, "qa": qa}]))


def test_systems_may_bring_their_own_retrieval_config(embedder: sgmem.Embedder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "locomo.json"
    tiny_locomo(data)
    base = sgmem.Config()
    off = base.with_(hybrid=dataclasses.replace(base.hybrid, w_pyramid=0.0))
    rep = evaluate(
        data,
        systems=[("hybrid", "hybrid"), ("hybrid, no pyramid channel", "hybrid", off), ("pyramid", "pyramid")],
        embedder=embedder,
        ks=(2,),
    )
    assert [s.name for s in rep.systems] == ["hybrid", "hybrid, no pyramid channel", "pyramid"]
    assert rep.recall("pyramid", 2) == 100.0  # both questions' evidence is in the top 2
    assert all(len(s.latency_ms) == 2 for s in rep.systems)
    assert "hybrid, no pyramid channel" in render_report(rep)


def test_the_cli_flag_adds_the_pyramid_systems() -> None:
    args = build_parser().parse_args(["eval", "locomo", "data.json", "--pyramid"])
    assert args.pyramid is True
    assert build_parser().parse_args(["eval", "locomo", "data.json"]).pyramid is False
