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
    text = quality.render(run)
    for name in names:
        assert f"| {name} | 5 |" in text
    # every ratio names its baseline; sgmem's own BM25 mode competes as the BM25 reference
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
    assert "| sgmem, no LLM | 0 | **0.00** |" in write_cost.render(wc)


def test_one_command_writes_results_and_plots(locomo_file: Path, tmp_path: Path, cache_dir: Path) -> None:
    from benchmarks.__main__ import main

    results = tmp_path / "RESULTS.md"
    plots = tmp_path / "plots"
    argv = [
        "--smoke",
        "--locomo",
        str(locomo_file),
        "--results",
        str(results),
        "--plots",
        str(plots),
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
    text = results.read_text(encoding="utf-8")
    headings = (
        "## Summary",
        "## Quality",
        "## Quality inside a chat",
        "## Speed and scale",
        "## Write cost",
        "## Novelty gate",
        "## PostgreSQL",
        "## Many scopes",
    )
    for heading in headings:
        assert heading in text
    assert "sgmem default (no LLM: binary" in text and "trace plot:" not in text
    assert "Command: `python -m benchmarks --smoke" in text and "Machine:" in text
    assert (tmp_path / "out" / "results-smoke.json").exists()
    for png in ("quality_recall.png", "quality_context.png", "speed_scale.png", "write_cost.png", "gate_trace.png"):
        assert (plots / png).read_bytes().startswith(PNG)
        assert re.search(rf"\]\(plots/{png}\)", text)


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
    assert rows[1]["estimated_build_s"] > 0  # extrapolated from the first size
    text = scale.render(rows)
    assert "HNSW kNN edge recall" in text and "Growth exponents" in text and "by stage of an add" in text


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
    assert "| hybrid |" in text and "| vector |" in text and "| flat_1t |" in text, text
    assert "| hnsw |" not in text, text  # no HNSW baseline built
    res = json.loads((tmp_path / "q.json").read_text())
    assert res["sentences"] >= 300 and res["queries"] == 3 and res["hybrid_p50"] > 0
    assert "vector_ann_p50" not in res and "edge_recall" not in res


def test_bulk_ingest_is_compared_with_one_embed_call(embedder: Any, tmp_path: Path) -> None:
    from benchmarks import bulk

    res = bulk.measure(60, embedder=getattr(embedder, "base", embedder), workdir=tmp_path)
    assert res["sentences"] >= 60 and res["texts"] <= res["sentences"]
    # ratios of times are for the report, not asserted (a timed test would fail on a busy machine)
    assert res["add_many_ratio"] > 0 and res["per_add_ratio"] > 0
    assert "÷ floor" in bulk.render(res)


def test_write_path_reports_the_engine_cost_of_an_add_by_stage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks import write_path

    args = ["--workload", "synth", "--size", "300", "--adds", "4", "--repeats", "2", "--workdir", str(tmp_path)]
    assert write_path.main(args) == 0
    out = capsys.readouterr().out
    m = re.search(r"engine CPU µs/sentence \(per-add minimum; every thread of the process\): (\d+)", out)
    assert m is not None and int(m.group(1)) > 0, out
    w = re.search(r"engine wall µs/sentence \(per-add minimum; what an add waits for\): (\d+)", out)
    assert w is not None and int(w.group(1)) > 0, out
    assert all(f"{stage} " in out for stage in ("segment", "plan", "derived", "graph", "store")), out
    built = json.loads((tmp_path / "synth-300" / "adds.json").read_text())
    assert built["sentences"] >= 300
    # an accelerator's latency stood in by a sleep per text: the embedder's share of the adds' wall time
    assert write_path.main([*args, "--embed-us", "200"]) == 0
    out = capsys.readouterr().out
    r = re.search(r"of which embedding (\d+); ingest ÷ per-add embedding ([\d.]+)", out)
    assert r is not None, out
    assert int(r.group(1)) > 0 and 0 < float(r.group(2)) <= 1, out


def test_write_path_times_the_write_behind_bound_next_to_the_sequential_adds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--behind: the caller segments and embeds, one worker plans and writes in order; the adds all land,
    and the embedding's sleep overlaps the engine's work, which sequential adds cannot do."""
    from benchmarks import write_path

    args = ["--workload", "synth", "--size", "300", "--adds", "8", "--repeats", "2", "--workdir", str(tmp_path)]
    with pytest.raises(SystemExit):  # the bound is the embedding's overlap: it needs an embedding latency
        write_path.main([*args, "--behind"])
    capsys.readouterr()
    assert write_path.main([*args, "--embed-us", "5000", "--behind"]) == 0
    out = capsys.readouterr().out
    wb = re.search(
        r"write-behind bound .*ingest ÷ per-add embedding ([\d.]+); per add, the caller ([\d.]+) ms and the "
        r"worker ([\d.]+) ms .*; (\d+) adds in (\d+) ms, (\d+) ms of them the caller's embedding",
        out,
    )
    assert wb is not None, out
    ratio, caller, worker, adds, wall, embedding = (float(x) for x in wb.groups())
    assert 0 < ratio <= 1 and adds == 7 and caller > 0 and worker > 0, out
    assert embedding <= wall, out


def test_the_write_behind_bound_writes_on_a_worker_while_the_caller_embeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overlap the bound measures: each add is written on another thread while the caller embeds the
    next one. Shown by causality, not by clocks (a busy machine stretches every span): the write of add
    k waits until the caller has started embedding add k + 1, and that embedding waits until the write of
    add k has started. Only a write that runs on another thread while the caller goes on passes both
    waits; a write on the caller's thread, or one the caller waits for, times the waits out."""
    import itertools
    import threading

    import sgmem.ingest
    import sgmem.write
    from benchmarks import write_path
    from benchmarks.scale import _Timed

    wait_s = 120.0  # generous: only a broken write-behind ever reaches it
    todo = write_path._workload("synth", "", 300)[:5]
    n = len(todo)
    write_started = [threading.Event() for _ in range(n)]
    embed_started = [threading.Event() for _ in range(n)]
    waited: list[tuple[str, int, bool]] = []
    write_threads: list[int] = []
    embeds, writes = itertools.count(1), itertools.count(1)  # adds 1.. go through the write-behind
    embed_texts, commit = sgmem.ingest.embed_texts, sgmem.write.commit_add

    def embedding(*args: Any, **kwargs: Any) -> Any:  # the caller's embedding of add k (as _behind calls it)
        k = next(embeds)
        embed_started[k].set()
        if k >= 2:
            waited.append(("embed", k, write_started[k - 1].wait(wait_s)))
        return embed_texts(*args, **kwargs)

    def writing(mem: Any, p: Any) -> Any:  # the write of add k, wherever _behind runs it
        k = next(writes)
        write_threads.append(threading.get_ident())
        write_started[k].set()
        if k + 1 < n:
            waited.append(("write", k, embed_started[k + 1].wait(wait_s)))
        return commit(mem, p)

    # the first add, a plain Memory.add alone, calls sgmem.write's own imports of both (not patched)
    monkeypatch.setattr(sgmem.ingest, "embed_texts", embedding)
    monkeypatch.setattr(sgmem.write, "commit_add", writing)
    with sgmem.Memory(tmp_path / "m", embedder=_Timed()) as mem:
        write_path._behind(mem, mem.embedder, todo)
    caller = threading.get_ident()
    assert len(write_threads) == n - 1 and caller not in write_threads
    assert sorted((what, k) for what, k, _ in waited) == sorted(
        [("embed", k) for k in range(2, n)] + [("write", k) for k in range(1, n - 1)]
    )
    assert all(ok for *_, ok in waited), waited


def test_the_write_behind_bound_stores_what_sequential_adds_store(tmp_path: Path) -> None:
    """The bound's adds are real adds: every message stored in order, and the same search results as the
    same adds made one Memory.add at a time."""
    from benchmarks import write_path
    from benchmarks.scale import _Timed

    todo = write_path._workload("synth", "", 400)[:6]
    with (
        sgmem.Memory(tmp_path / "behind", embedder=_Timed()) as wb,
        sgmem.Memory(tmp_path / "seq", embedder=_Timed()) as sq,
    ):
        got = write_path._behind(wb, wb.embedder, todo)
        for thread, msgs in todo:
            sq.add(msgs, scope="s", thread=thread)
        assert got["adds"] == len(todo) - 1 and got["sentences"] > 0
        replay = [(m.thread, m.content) for m in wb.messages(scope="s")]
        assert replay == [(m.thread, m.content) for m in sq.messages(scope="s")]
        assert replay == [(t, m["content"]) for t, msgs in todo for m in msgs]
        query = todo[-1][1][0]["content"]
        assert [h.text for h in wb.search(query, scope="s", k=5)] == [h.text for h in sq.search(query, scope="s", k=5)]


def test_host_probe_times_queries_by_scan_threads_and_adds_by_write_setting(tmp_path: Path, locomo_file: Path) -> None:
    from benchmarks import host_probe

    pytest.importorskip("torch")
    out = "\n".join(host_probe.run(200, str(locomo_file), tmp_path / "probe", queries=3, adds=2, dense_device="cpu"))
    assert "FAISS flat, 1 thread(s)" in out and "hybrid, 1 scan thread(s)" in out, out
    assert "hybrid, dense_device=cpu" in out and "dense scan with turn reductions, dense_device=cpu" in out, out
    walls = re.findall(r"round \d, (.+?)\s+(\d+)  \(stage ms/add", out)
    assert {name for name, _ in walls} == {
        "default",
        "knn_early=False, wal_checkpoint_background=False",
        "knn_early_threads=1",
        "dense_scan_threads=1",
        "dense_scan_threads=1, knn_background=False",
    }, out
    assert all(int(us) > 0 for _, us in walls), out


def test_ann_overlap_compares_the_approximate_index_with_the_exact_scan_on_real_vectors(
    tmp_path: Path, locomo_file: Path, embedder: Any
) -> None:
    from benchmarks import ann_overlap

    res = ann_overlap.run(120, tmp_path / "ann", str(locomo_file), queries=5, embedder=embedder)
    assert res["sentences"] >= 120 and res["distinct_texts"] > 0
    assert set(res["overlap"]) == {"vector", "hybrid"}
    assert all(0.0 <= v <= 1.0 for v in res["overlap"].values())
    assert {"flat_1t", "exact hybrid", "hnsw hybrid"} <= set(res["latency_ms"])
    # the embeddings are cached: a second run embeds nothing new and reuses the store
    again = ann_overlap.run(120, tmp_path / "ann", str(locomo_file), queries=5, embedder=embedder)
    assert "build_s" not in again and again["sentences"] == res["sentences"]


def test_the_gpu_benchmark_times_the_adds_main_steps_apart(tmp_path: Path) -> None:
    """benchmarks.gpu's sub-stages: each step of an add is timed on the calling thread (the embed call holds
    the embedder's time), and the wrappers are gone afterwards (the queries are timed unwrapped)."""
    import time

    import sgmem.write
    from benchmarks import gpu
    from benchmarks.soak import HashingEmbedder
    from sgmem.derived.engine import DerivedEngine

    class Slow(HashingEmbedder):
        def embed(self, texts: Any) -> np.ndarray:
            time.sleep(0.02)
            return super().embed(texts)

    before = (sgmem.write.apply_add, DerivedEngine.plan)
    acc: dict[str, float] = {}
    restore = gpu._substage_timers(acc)
    try:
        with sgmem.Memory(tmp_path / "m", embedder=Slow(16)) as mem:
            mem.add(
                [{"role": "user", "content": f"My cat Tom likes tuna number {i}. He sleeps a lot."} for i in range(6)],
                scope="u",
                thread="t",
            )
    finally:
        restore()
    assert set(acc) == {name for *_, name in gpu.SUBSTAGES}
    assert acc["sub: embed call"] >= 20.0  # the embedder's 20 ms
    assert all(v > 0 for v in acc.values())
    assert (sgmem.write.apply_add, DerivedEngine.plan) == before


def test_the_gpu_benchmark_pairs_each_add_with_its_texts_embedded_raw(tmp_path: Path, locomo_file: Path) -> None:
    """benchmarks.gpu on this CPU at a toy size: each add is compared with its own texts embedded raw right
    before it, and that raw embedding is not counted as ingest time."""
    from benchmarks import gpu
    from sgmem.embed.minilm import _bundled_model_path

    model = _bundled_model_path()
    assert model is not None, "the offline extra bundles MiniLM"
    out = tmp_path / "gpu.json"
    args = ["run", "--model", model, "--data", str(locomo_file), "--device", "cpu", "--sentences", "150"]
    assert gpu.main([*args, "--queries", "0", "--bulk", "0", "--no-ann", "--json", str(out)]) == 0
    ing = json.loads(out.read_text(encoding="utf-8"))["ingest"]
    pr = ing["paired"]
    assert pr["raw_s"] > 0 and pr["add_s"] > 0
    assert pr["ratio"] == pytest.approx(pr["raw_s"] / pr["add_s"])
    assert 0.0 < pr["ratio_first10"] and 0.0 < pr["ratio_last10"]
    # the wall time of the ingest leaves the paired raw embedding out
    assert ing["seconds"] < pr["add_s"] + 0.5 * pr["raw_s"]
    assert ing["seconds"] >= pr["add_s"]


def test_the_overlap_benchmark_runs_the_engine_beside_the_embedding_in_a_thread_and_in_a_process(
    tmp_path: Path, locomo_file: Path
) -> None:
    """benchmarks.overlap on this CPU at a toy size: the engine stores every add in each setting, runs on a
    thread of this process or in a child process as labelled, and runs while this process embeds."""
    from benchmarks import overlap
    from benchmarks.gpu import _adds
    from sgmem.embed.minilm import _bundled_model_path

    model = _bundled_model_path()
    assert model is not None, "the offline extra bundles MiniLM"
    out = tmp_path / "overlap.json"
    args = ["--model", model, "--data", str(locomo_file), "--device", "cpu", "--sentences", "300"]
    assert overlap.main([*args, "--raw-adds", "3", "--python-thread-adds", "1", "--json", str(out)]) == 0
    r = json.loads(out.read_text(encoding="utf-8"))
    _, texts, _ = _adds(str(locomo_file), 300)
    assert r["engine_sentences"] == sum(map(len, texts[1:])) > 0
    for key in ("engine_alone", "thread", "process"):  # every add stored, with no embedding call
        assert r[key]["engine_sentences"] == r["engine_sentences"]
    assert r["engine_alone"]["pid"] != r["parent_pid"]
    assert r["thread"]["pid"] == r["parent_pid"]
    assert r["process"]["pid"] != r["parent_pid"]
    for key in ("thread", "process"):  # the embedding ran while the engine did, and until it was done
        v = r[key]
        assert v["embed"]["start"] < v["end"] <= v["embed"]["end"]
        assert v["bound"] == pytest.approx(min(v["embed"]["per_s"], v["engine_per_s"]) / r["raw_per_s"])
    assert r["raw_per_s"] == max(r["raw_before"]["per_s"], r["raw_after"]["per_s"])
    raw, eng = r["raw_per_s"], r["engine_alone"]["engine_per_s"]
    assert r["sequential_bound"] == pytest.approx(eng / (raw + eng))
    assert r["embed_next_to_python_thread"]["adds"] == 1


def test_the_overlap_benchmark_refuses_a_workload_it_cannot_time(locomo_file: Path) -> None:
    from benchmarks import overlap

    with pytest.raises(SystemExit):
        overlap.main(["--model", "x", "--data", str(locomo_file), "--sentences", "0"])
