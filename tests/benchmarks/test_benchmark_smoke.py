"""Smoke runs of the benchmark suite at toy sizes, so it cannot rot (``pytest -m benchmark``).

The full suite is ``python -m benchmarks`` (hours, not part of CI); these
runs check that every part still runs end to end, measures what it says
against its baselines, and writes its report and plots.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sgmem

pytestmark = [
    pytest.mark.benchmark,
    # llama-index inspects pydantic models with deprecated attributes: not ours
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

PNG = b"\x89PNG\r\n\x1a\n"
ROOT = Path(__file__).resolve().parents[2]

SESSIONS = [
    (
        "1:56 pm on 8 May, 2023",
        [
            ("Mia", "Hi Leo! Guess what, I adopted a ginger cat and named her Pickles."),
            ("Leo", "Pickles is a great name. How is she settling in?"),
            ("Mia", "She hides under the sofa all day, but she loves tuna."),
            ("Leo", "I started learning the cello last week, my teacher is very strict."),
            ("Mia", "Cello sounds hard. Which piece are you practising?"),
            ("Leo", "A Bach suite, the first prelude."),
        ],
    ),
    (
        "10:02 am on 20 June, 2023",
        [
            ("Mia", "I ran my first half marathon in Porto on Sunday!"),
            ("Leo", "Congratulations! What was your time?"),
            ("Mia", "Two hours and four minutes, and my knees survived."),
            ("Leo", "My cello teacher says I can play in the autumn recital."),
            ("Mia", "Amazing, I will come and listen with Pickles' photo in my bag."),
        ],
    ),
]
QA = [
    ("What did Mia name her cat?", "Pickles", ["D1:1"], 4),
    ("Which city did Mia run a half marathon in?", "Porto", ["D2:1"], 4),
    ("What instrument is Leo learning?", "cello", ["D1:4"], 1),
    ("When did Mia run her first half marathon?", "18 June 2023", ["D2:1"], 2),
    ("What is Leo's dog called?", "no dog", ["D1:4"], 5),
]


def write_locomo(path: Path) -> Path:
    conv: dict[str, object] = {"speaker_a": "Mia", "speaker_b": "Leo"}
    for s, (date, turns) in enumerate(SESSIONS, start=1):
        conv[f"session_{s}_date_time"] = date
        conv[f"session_{s}"] = [
            {"speaker": who, "dia_id": f"D{s}:{i}", "text": text} for i, (who, text) in enumerate(turns, start=1)
        ]
    qa = [{"question": q, "answer": a, "evidence": ev, "category": c} for q, a, ev, c in QA]
    path.write_text(json.dumps([{"sample_id": "tiny-1", "conversation": conv, "qa": qa}]), encoding="utf-8")
    return path


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    """A one-conversation LoCoMo file: 11 turns, 5 questions (categories 1, 2, 4, 5)."""
    return write_locomo(tmp_path / "locomo-tiny.json")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the module: texts repeat across the runs, as in the real suite."""
    return tmp_path_factory.mktemp("embedding-cache")


@pytest.fixture
def cached(embedder: Any, cache_dir: Path) -> Iterator[Any]:
    from sgmem.eval import CachingEmbedder

    emb = CachingEmbedder(embedder, cache_dir)
    yield emb
    emb.save()


def test_quality_scores_every_system_on_the_same_turns(locomo_file: Path, cached: Any) -> None:
    from benchmarks import quality

    run = quality.run_quality(locomo_file, cached, ks=(1, 5), budgets=(60, 500))
    names = [s.name for s in run.systems]
    assert [n for n in names if n.startswith("sgmem ")] == [
        f"sgmem {m}" for m in sgmem.MODES if m != "entity"
    ]  # entity: opt-in
    assert any("BM25" in n for n in names) and any("LangChain" in n for n in names)
    assert any("LlamaIndex" in n for n in names)
    # reciprocal rank fusion of BM25 turns and dense sentences is measured beside them, as a baseline
    assert quality.RRF_NAME in names and run.system(quality.RRF_NAME).is_reference
    assert quality.RRF_NAME not in [
        s.name
        for s in quality.run_quality(
            locomo_file, cached, ks=(1,), budgets=(60,), modes=("bm25",), baselines=(), rrf=False
        ).systems
    ]
    assert (run.conversations, run.questions, run.turns) == (1, 5, 11)
    for s in run.systems:
        # a question whose evidence shares its rare words ("Porto", "half marathon") is found by everyone
        assert s.recall[5][4][1] == 1.0, s.name
        for b in run.budgets:
            assert max(s.ctx_tokens[b]) <= b, s.name  # a prompt block never exceeds its budget
        assert s.ctx_mean(500) >= s.ctx_mean(60), s.name  # a larger budget holds at least as much evidence
        for b in run.budgets:  # a whole turn is also a fragment; baselines pack whole turns
            assert s.ctx_mean(b, whole=True) <= s.ctx_mean(b), s.name
            if s.kind == "baseline" and b >= 500:
                assert s.ctx_mean(b, whole=True) == s.ctx_mean(b), s.name
    raw = json.loads(json.dumps(run.raw()))  # what the part stores: the report is rendered from it alone
    stored = {s["name"]: quality.Scores.of(s) for s in raw["systems"]}
    for s in run.systems:
        assert stored[s.name].mean(5) == pytest.approx(s.mean(5)) and stored[s.name].kind == s.kind
        assert stored[s.name].ctx_mean(500, whole=True) == pytest.approx(s.ctx_mean(500, whole=True))
    text = quality.render(raw)
    for name in names:
        assert f"| {name} | 5 |" in text
    # every ratio divides by the strongest baseline at that k: any baseline, the fusion, or sgmem's own BM25 mode
    name, best = quality.reference(run, lambda s: s.mean(5))
    assert best == max(s.mean(5) for s in run.systems if s.kind == "baseline" or s.name == "sgmem bm25")
    assert f"k = 5: {name} ({best:.1f})" in text
    assert "counting whole turns" in text and "counting fragments" in text


def test_skeleton_vectors_stay_near_minilm_and_queries_stay_real(embedder: Any, tmp_path: Path) -> None:
    from benchmarks.synth import sentences, skeleton
    from benchmarks.vectors import SkeletonEmbedder
    from sgmem.eval import CachingEmbedder

    texts = [f"Sam: {s}" for s in sentences(20, seed=5)]
    fake = SkeletonEmbedder(embedder, CachingEmbedder(embedder, tmp_path))
    got = fake.embed(texts)
    real_skel = embedder.embed([skeleton(t) for t in texts])
    cos = (got * real_skel).sum(axis=1)
    assert 0.85 < float(np.median(cos)) < 0.99
    assert np.allclose(fake.embed(texts), got)  # deterministic
    query = "Where did I go with Ana?"
    assert np.allclose(fake.embed([query]), embedder.embed([query]), atol=1e-5)
    assert fake.real_calls == 1


def test_speed_measures_ingest_latency_memory_and_gate_against_baselines(embedder: Any, tmp_path: Path) -> None:
    from benchmarks import speed, speed_report

    res = speed.run_size(80, tmp_path, real=True, n_queries=3, gate_candidates=4, isolate=False)
    assert 70 <= res["sentences"] <= 90
    assert res["ingest_ratio"] == pytest.approx(res["ingest_per_s"] / res["raw_embed_per_s"])
    assert res["disk_bytes_per_sentence"] > 1536  # at least the float32 vector of each sentence
    for m in (*(m for m in sgmem.MODES if m != "entity"), "dense"):
        assert 0 < res[f"{m}_p50"] <= res[f"{m}_p95"]
    if res["gate"] is not None:
        assert res["gate"]["memories"] == res["sentences"]
        assert sum(res["gate"]["exact_actions"].values()) == 4
    report = speed_report.render({80: res})
    assert f"**{res['ingest_ratio']:.2f}**" in report
    assert speed_report.plot({80: res}, tmp_path).read_bytes().startswith(PNG)


def test_write_cost_counts_every_llm_call(cached: Any) -> None:
    from benchmarks import write_cost

    wc = write_cost.run_write_cost(cached, n_turns=20)
    assert wc.turns == 20 and wc.adds == 3  # one synthetic session of 20 turns, adds of 8
    by = {p.name: p for p in wc.paths}
    mem0 = next(p for n, p in by.items() if n.startswith("Mem0"))
    assert mem0.calls == {"mem0: extract": 3, "mem0: route": 3}
    assert by["sgmem, no LLM"].total == 0
    for p in wc.paths:
        assert "other" not in p.calls, p.calls  # every prompt sgmem sent was recognised and answered
    gate = next(p for n, p in by.items() if "gate" in n)
    assert not any(t.startswith(("keywords", "mem0")) for t in gate.calls)
    # with an LLM, MGRetrieval's keyword path is on by default; llm_keywords=False leaves keywords to the rule
    default = next(p for n, p in by.items() if n.startswith("sgmem default"))
    lexical = next(p for n, p in by.items() if "lexical keywords" in n)
    assert default.calls.get("keywords: extract", 0) > 0
    assert not any(t.startswith("keywords") for t in lexical.calls)
    assert "| sgmem, no LLM | 0 | **0.00** |" in write_cost.render(wc)


def test_one_command_runs_every_part_stores_its_results_and_writes_results_and_plots(
    locomo_file: Path, tmp_path: Path, cache_dir: Path
) -> None:
    from benchmarks.__main__ import main
    from benchmarks.parts import PARTS, module

    committed = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    argv = [
        "--smoke",
        "--locomo",
        str(locomo_file),
        "--dir",
        str(tmp_path),
        "--cache",
        str(cache_dir),
        "--scratch",
        str(tmp_path / "out"),
        "--turns",
        "16",
        "--sizes",
        "60",
        "--queries",
        "2",
    ]
    assert main(argv) == 0
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert "## Summary" in text
    for part in PARTS:
        mod = module(part)
        if mod is None:  # a part another branch adds
            continue
        rec = json.loads((tmp_path / "results" / f"{part}.json").read_text(encoding="utf-8"))
        assert rec["command"].startswith("python -m benchmarks --smoke") and rec["raw"]
        assert rec["environment"]["cores"] and rec["commit"]
        section = text.split(f"## {mod.TITLE}\n", 1)[1].split("\n## ", 1)[0]
        assert f"by `{rec['command']}`" in section and rec["date"] in section, part
    assert "sgmem default (no LLM: binary" in text and "trace plot:" not in text
    assert "RRF(BM25 turns, dense sentences), k = 60" in text  # quality's fused baseline
    assert "LangChain InMemoryVectorStore over turns" in text
    for png in ("quality_recall.png", "quality_context.png", "speed_scale.png", "write_cost.png", "gate_trace.png"):
        assert (tmp_path / "plots" / png).read_bytes().startswith(PNG)
        assert re.search(rf"\]\(plots/{png}\)", text)
    # a smoke run never touches the committed results
    assert (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8") == committed


def test_many_scopes_reports_memory_and_disk_for_every_cache_budget(tmp_path: Path) -> None:
    from benchmarks import scopes

    res = scopes.run_scopes(12, scratch=tmp_path)
    assert set(res["variants"]) == {"default", "unbounded", "small budget"}
    for v in res["variants"].values():
        assert v["write"]["rss_after"] >= v["write"]["rss_before"] > 0
        assert v["search"]["found"] == 12  # every scope found its own user
        assert v["disk"]["store"] > v["disk"]["gate_state_blobs"] > 0
    text = scopes.render(res)
    assert "12 scopes × 5 messages" in text and "| unbounded |" in text and "256 MiB (default)" in text
    assert "FAISS cache files" in text


def test_engine_scale_reports_cost_memory_latency_and_edge_recall(tmp_path: Path) -> None:
    from benchmarks import scale

    rows = scale.measure([400, 800], workdir=tmp_path, n_queries=3)
    assert [r["size"] for r in rows] == [400, 800]
    for r in rows:
        assert r["engine_us_per_sentence"] > 0 and r["rss_bytes_per_sentence"] > 0 and r["disk_bytes_per_sentence"] > 0
        assert 4 * 384 < r["nbytes_per_sentence"]  # the vectors at least
        assert r["flat_p50"] > 0 and r["hybrid_p50"] > 0 and 0.5 <= r["edge_recall"] <= 1.0
        # the engine cost of an add by stage, embedder excluded: every stage costs something
        assert all(r[f"stage_{s}_us_last10"] > 0 for s in scale.STAGES if s != "derived")
        # the index part by part adds up to the whole, and the first query after reopening is timed
        parts = r["nbytes_parts_per_sentence"]
        assert abs(sum(parts.values()) - r["nbytes_per_sentence"]) < 1e-6 and parts["vectors"] == 4 * 384
        assert r["first_query_ms"] > 0 and r["later_query_ms"] > 0
    assert rows[1]["estimated_build_s"] > 0  # extrapolated from the first size
    text = scale.render(rows)
    assert "HNSW kNN edge recall" in text and "Growth exponents" in text and "by stage of an add" in text
    assert "part by part" in text and "First hybrid query after reopening" in text


def test_engine_scale_times_the_queries_of_a_store_built_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--store DIR --no-hnsw``: the query pass alone on an existing store (how the 1M figures are re-taken)."""
    from benchmarks import scale

    scale.build(300, tmp_path / "store", "auto")
    assert (
        scale.main(
            [
                "--store",
                str(tmp_path / "store"),
                "--queries",
                "3",
                "--no-hnsw",
                "--modes",
                "hybrid",
                "vector",
                "--out",
                str(tmp_path / "q.json"),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "| hybrid |" in text and "| vector |" in text and "| flat |" in text, text
    assert "baseline FAISS flat on 1 thread, as sgmem's scan" in text, text  # as many threads as sgmem's scan
    assert "| hnsw |" not in text, text  # no HNSW baseline built
    res = json.loads((tmp_path / "q.json").read_text())
    assert res["sentences"] >= 300 and res["queries"] == 3 and res["hybrid_p50"] > 0
    assert res["scan_threads"] == 1 and res["flat_config"] == "1 thread, as sgmem's scan"
    assert "vector_ann_p50" not in res and "edge_recall" not in res


def test_bulk_ingest_is_compared_with_one_embed_call(embedder: Any, tmp_path: Path) -> None:
    from benchmarks import bulk

    res = bulk.measure(60, embedder=getattr(embedder, "base", embedder), workdir=tmp_path)
    assert res["sentences"] >= 60 and res["texts"] <= res["sentences"]
    # ratios of times are for the report, not asserted (a timed test would fail on a busy machine)
    assert res["add_many_ratio"] > 0 and res["per_add_ratio"] > 0
    assert "÷ floor" in bulk.render(res)
