"""Engine scale: cost per sentence, memory, disk and query latency at 10k / 100k / 1M sentences in one scope.

The embedder is taken away so the engine itself is measured: a stand-in
hashing embedder (:class:`benchmarks.soak.HashingEmbedder`, 384 dimensions
like MiniLM) gives every text a deterministic vector and the time spent
inside it is subtracted; query vectors are computed before the clock starts.
Synthetic conversations (:mod:`benchmarks.synth`) are added one session
(20 turns, ≈50 sentences) at a time, as an application would. Per size:

* engine µs per sentence over the whole ingest, its first 10 % and its last
  10 % (a cost that grows with the store shows as last/first > 1);
* resident memory of the loaded scope per sentence (RSS of a fresh process
  after every mode answered once, minus the process after every mode answered
  once on a tiny scope, i.e. with the libraries a first search loads already
  loaded; the former figure, minus the process before anything, is kept as
  ``rss_cold_bytes_per_sentence``), ``ScopeIndex.nbytes()`` per sentence, and
  bytes on disk per sentence;
* query p50/p95 per mode (``Memory.search``, query embedding excluded)
  against FAISS ``IndexFlatIP`` and ``IndexHNSWFlat`` top-10 over the same
  sentence vectors, in the same process, round robin per query;
* kNN edge recall of the HNSW path (:mod:`sgmem.retrieval.ann`) against
  exact kNN for 500 later sentences over the first 90 % of the store;
* growth exponents between consecutive sizes (cost ∝ N^e), and for sizes not
  run, the build time they are expected to take.

Usage::

    python -m benchmarks.scale --sizes 10000 100000 [1000000] --out benchmarks/out/scale.md

To time the queries again on a store built before (``--out``'s workdir keeps
none; a store built by this module's build loop, e.g. a 1M scope), without
the FAISS HNSW baseline, the approximate-index pass and the edge recall,
whose index builds take most of the time at 1M::

    python -m benchmarks.scale --store DIR --queries 40 --no-hnsw [--modes hybrid vector ...]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.env import dir_bytes, rss_bytes
from benchmarks.soak import HashingEmbedder
from benchmarks.speed import SCOPE, _pct, _queries
from benchmarks.synth import conversation

__all__ = ["STAGES", "build", "edge_recall", "measure", "query", "render"]


# the entity layer is opt-in (Config.entities) and not part of this comparison
def _modes() -> tuple[str, ...]:
    import sgmem

    return tuple(m for m in sgmem.MODES if m != "entity")


DIM = 384


class _Timed:
    """The stand-in embedder, with the seconds spent inside it added up (and query vectors precomputed)."""

    def __init__(self, dim: int = DIM) -> None:
        self.base = HashingEmbedder(dim)
        self.name, self.dim, self.seconds = self.base.name, dim, 0.0
        self.fixed: dict[str, np.ndarray] = {}

    def embed(self, texts: Any) -> np.ndarray:
        texts = list(texts)
        if texts and all(t in self.fixed for t in texts):
            return np.stack([self.fixed[t] for t in texts])
        t0 = time.perf_counter()
        try:
            return self.base.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t0


def _config(knn_index: str) -> Any:
    import dataclasses

    import sgmem

    base = sgmem.Config()
    return base.with_(graph=dataclasses.replace(base.graph, knn_index=knn_index))  # type: ignore[arg-type]


def build(n: int, path: Path, knn_index: str = "auto") -> dict[str, Any]:
    """Ingest ``n`` synthetic sentences one session per add; engine cost per sentence."""
    import sgmem

    emb = _Timed()
    adds = list(conversation(n, seed=n))
    per: list[tuple[int, float]] = []  # (sentences, engine seconds) per add
    stages: list[list[float]] = []  # per add: engine ms of each of STAGES
    t_start = time.perf_counter()
    with sgmem.Memory(path, embedder=emb, config=_config(knn_index)) as mem:
        for thread, msgs in adds:
            e0, t0 = emb.seconds, time.perf_counter()
            res = mem.add(msgs, scope=SCOPE, thread=thread)
            emb_ms = (emb.seconds - e0) * 1e3
            per.append((res.sentences, time.perf_counter() - t0 - emb_ms / 1e3))
            stages.append(_stages(res.timings_ms, emb_ms))
    total_s = time.perf_counter() - t_start
    sents = np.array([p[0] for p in per], dtype=np.float64)
    secs = np.array([p[1] for p in per])
    cum = np.cumsum(sents)
    first = (cum - sents) < 0.1 * cum[-1]  # adds that start in the first 10 %
    last = cum > 0.9 * cum[-1]
    st = np.array(stages)
    breakdown = {
        f"stage_{name}_us_{part}": float(st[mask, i].sum() / max(sents[mask].sum(), 1) * 1e3)
        for i, name in enumerate(STAGES)
        for part, mask in (("first10", first), ("last10", last))
    }
    return {
        **breakdown,
        "size": n,
        "sentences": int(cum[-1]),
        "adds": len(per),
        "build_s": total_s,
        "embedder_s": emb.seconds,
        "engine_us_per_sentence": secs.sum() / cum[-1] * 1e6,
        "engine_us_first10": secs[first].sum() / max(sents[first].sum(), 1) * 1e6,
        "engine_us_last10": secs[last].sum() / max(sents[last].sum(), 1) * 1e6,
        "disk_bytes_per_sentence": dir_bytes(path) / cum[-1],
        "load_at_build": os.getloadavg()[0],
    }


#: engine stages of an add (``AddResult.timings_ms``, the embedder's own time taken out of "plan")
STAGES = ("segment", "plan", "derived", "graph", "store")


def _stages(t: dict[str, float], embedder_ms: float) -> list[float]:
    """Engine ms of each of :data:`STAGES` for one add.

    ``segment``: validation and sentence splitting; ``plan``: the embed stage
    without the embedder (stored-vector lookup, keyword and derived-memory
    planning); ``derived``: derived memory's share of ``plan`` and ``store``
    (the gate's routing and its writes); ``graph``: kNN edges; ``store``: the transaction, the commit and
    the caches following it.
    """
    return [t["segment"], t["embed"] - embedder_ms, t.get("derived", 0.0), t["graph"], t["store"]]


def edge_recall(vecs: np.ndarray, k: int = 3, n_new: int = 500) -> dict[str, float]:
    """Recall of HNSW kNN edges vs exact kNN: 500 later sentences against the first 90 % of the store."""
    from sgmem.config import GraphConfig
    from sgmem.ingest import _top_k_inner
    from sgmem.retrieval.ann import AnnIndex

    cfg = GraphConfig()
    m = int(0.9 * len(vecs))
    new = np.ascontiguousarray(vecs[m : m + n_new])
    ann = AnnIndex(vecs.shape[1], cfg.knn_hnsw_m, cfg.knn_hnsw_ef_construction, cfg.knn_hnsw_ef_search)
    t0 = time.perf_counter()
    ann.extend(vecs[:m])
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    exact_cos, exact = _top_k_inner(new, vecs[:m], k)
    exact_ms = (time.perf_counter() - t0) * 1e3 / len(new)
    t0 = time.perf_counter()
    approx_cos, approx = ann.top_k(new, vecs[:m], k)
    ann_ms = (time.perf_counter() - t0) * 1e3 / len(new)
    hit = sum(len(set(a.tolist()) & set(e.tolist())) for a, e in zip(approx, exact, strict=True))
    # tie-aware: an approximate neighbour counts when its cosine reaches the k-th exact one (bag-of-words
    # vectors tie often, and exact kNN then picks arbitrarily among equals)
    kth = exact_cos.min(axis=1, keepdims=True)
    tied = int((approx_cos >= kth - 1e-6).sum())
    return {
        "edge_recall": tied / exact.size,
        "edge_recall_ids": hit / exact.size,
        "ann_build_s": build_s,
        "exact_ms_per_sentence": exact_ms,
        "ann_ms_per_sentence": ann_ms,
    }


def warm_libraries(embedder: Any) -> None:
    """Run every mode once on a tiny in-memory scope: loads the libraries a first search imports (bm25s, tiktoken,
    scipy, the stemmer…), so resident memory divided by the stored sentences counts only what they cost."""
    import gc
    from datetime import datetime, timedelta, timezone

    import sgmem

    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(min_relevance=0.0)) as mem:
        for i, text in enumerate(["I baked rye bread on Sunday.", "The kitten sleeps on the radiator."]):
            mem.add([{"role": "user", "content": text}], scope="warm-up", thread="t", at=t0 + timedelta(hours=i))
        for mode in _modes():
            mem.search("warm up", scope="warm-up", k=3, mode=mode)
    gc.collect()


def query(path: Path, n_queries: int = 100, modes: list[str] | None = None, hnsw: bool = True) -> dict[str, Any]:
    """Resident memory of the loaded scope, query latency per mode vs FAISS flat and HNSW.

    ``modes``: the modes timed (default every mode but entity, pyramid and sgrm included).
    ``hnsw=False`` skips FAISS's HNSW baseline, the ``dense_index="hnsw"`` pass and the edge recall.
    """
    import faiss

    import sgmem

    emb = _Timed()
    queries = _queries(n_queries)
    timed = tuple(modes or _modes())
    for q in queries:
        emb.fixed[q] = emb.base.embed([q])[0]
    emb.fixed["warm up"] = emb.base.embed(["warm up"])[0]
    gc.collect()
    rss0 = rss_bytes()  # cold: libraries a first search loads (~55-80 MB) would count as per-sentence

    warm_libraries(emb)  # so the reported figure divides only what the stored sentences cost
    rss_warm = rss_bytes()
    out: dict[str, Any] = {"load_at_query": os.getloadavg()[0], "modes": list(timed), "queries": len(queries)}
    with sgmem.Memory(path, embedder=emb) as mem:
        t0 = time.perf_counter()
        # the first query after reopening (loading the index, and whatever else it pays once per process),
        # against the same query later, everything loaded
        mem.search(queries[0], scope=SCOPE, k=10, mode="hybrid")
        out["first_query_ms"] = (time.perf_counter() - t0) * 1e3
        for mode in timed:  # loads the index, BM25 and keywords once, as a long-lived app would
            mem.search("warm up", scope=SCOPE, k=10, mode=mode)
        out["load_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        mem.search(queries[0], scope=SCOPE, k=10, mode="hybrid")
        out["later_query_ms"] = (time.perf_counter() - t1) * 1e3
        gc.collect()
        idx = next(iter(mem._indexes.values()))
        n = out["sentences"] = idx.n_sentences
        out["rss_bytes_per_sentence"] = (rss_bytes() - rss_warm) / n
        out["rss_cold_bytes_per_sentence"] = (rss_bytes() - rss0) / n  # the figure reported before
        out["nbytes_per_sentence"] = idx.nbytes() / n
        out["nbytes_parts_per_sentence"] = {part: b / n for part, b in idx.nbytes_parts().items()}
        from sgmem.retrieval.dense import scan_threads

        out["scan_threads"] = scan_threads(mem.config, n)  # Config.dense_scan_threads at this size
        vecs = np.ascontiguousarray(idx.sentence_vectors())
        flat = faiss.IndexFlatIP(vecs.shape[1])
        flat.add(vecs)
        # like for like: FAISS's flat scan on as many threads as sgmem's dense scan of this scope (one below
        # Config.dense_scan_min_sentences, the cores above); HNSW answers one query on one thread
        threads = out["scan_threads"]
        baselines: list[tuple[str, Any, int]] = [("flat", flat, threads)]
        if hnsw:
            graph = faiss.IndexHNSWFlat(vecs.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            graph.hnsw.efConstruction = 40
            t0 = time.perf_counter()
            graph.add(vecs)
            out["hnsw_build_s"] = time.perf_counter() - t0
            graph.hnsw.efSearch = 64
            baselines.append(("hnsw", graph, 1))
        omp = faiss.omp_get_max_threads()
        systems = [*(name for name, _, _ in baselines), *timed]
        lat: dict[str, list[float]] = {s: [] for s in systems}
        for q in queries:  # round robin per query: load drifting during the run hits every system alike
            qv = emb.fixed[q].reshape(1, -1)
            for name, index, n_threads in baselines:
                faiss.omp_set_num_threads(n_threads)
                t = time.perf_counter()
                index.search(qv, 10)
                lat[name].append((time.perf_counter() - t) * 1e3)
            faiss.omp_set_num_threads(omp)
            for mode in timed:
                t = time.perf_counter()
                mem.search(q, scope=SCOPE, k=10, mode=mode)
                lat[mode].append((time.perf_counter() - t) * 1e3)
        for name, xs in lat.items():
            out[f"{name}_p50"], out[f"{name}_p95"] = _pct(xs, 0.5), _pct(xs, 0.95)
        for mode in timed:  # median of per-query ratios: both timed back to back, so load spikes cancel
            out[f"{mode}_paired"] = float(np.median(np.array(lat[mode]) / np.array(lat["flat"])))
        out["flat_config"] = f"{threads} thread{'s' if threads > 1 else ''}, as sgmem's scan"
        del flat, baselines
        if not hnsw:
            return out
        exact_hits = {m: [mem.search(q, scope=SCOPE, k=10, mode=m) for q in queries] for m in ("vector", "hybrid")}
    # the approximate dense index option (Config.dense_index="hnsw", forced on at every size)
    cfg = sgmem.Config(dense_index="hnsw", dense_ann_min_sentences=0)
    with sgmem.Memory(path, embedder=emb, config=cfg) as mem:
        t0 = time.perf_counter()
        mem.search("warm up", scope=SCOPE, k=10, mode="vector")  # loads the HNSW cache or builds it
        out["dense_hnsw_ready_s"] = time.perf_counter() - t0
        for m in ("vector", "hybrid"):
            xs, overlap, tied = [], [], []
            for q, want in zip(queries, exact_hits[m], strict=True):
                t = time.perf_counter()
                hits = mem.search(q, scope=SCOPE, k=10, mode=m)
                xs.append((time.perf_counter() - t) * 1e3)
                got, ids = _ids(hits), set(_ids(want))
                overlap.append(len(set(got) & ids) / max(len(ids), 1))
                # tie-aware: a hit also counts when its score reaches the exact 10th score (the stand-in
                # vectors tie often, and the exact search then picks arbitrarily among equals); approximate
                # scores never exceed the exact ones (unscored sentences count as cosine -1)
                kth = min((h.score for h in want), default=float("inf"))
                tied.append(
                    sum(1 for h in hits if set(h.message_ids) & ids or h.score >= kth - 1e-6) / max(len(want), 1)
                )
            out[f"{m}_ann_p50"], out[f"{m}_ann_p95"] = _pct(xs, 0.5), _pct(xs, 0.95)
            out[f"{m}_ann_overlap"] = float(np.mean(overlap))
            out[f"{m}_ann_overlap_tied"] = float(np.mean(tied))
    out.update(edge_recall(vecs))
    return out


def render_query(res: dict[str, Any], command: str = "") -> str:
    """A :func:`query` result as a table: p50/p95 per system, ratios to the faster FAISS flat."""
    systems = [k[: -len("_p50")] for k in res if k.endswith("_p50")]
    lines = [
        f"query latency on {res['sentences']:,} sentences, {res['queries']} queries{command and ' (' + command + ')'}, "
        f"engine only, ms; baseline FAISS flat on {res['flat_config']}; load {res['load_at_query']:.1f}",
        "",
        "| system | p50 | p95 | ÷ flat p50 | median per-query ratio |",
        "|---|---|---|---|---|",
    ]
    for name in systems:
        paired = res.get(f"{name}_paired")
        lines.append(
            f"| {name} | {res[name + '_p50']:.2f} | {res[name + '_p95']:.2f} | "
            f"{res[name + '_p50'] / res['flat_p50']:.2f}× | {'' if paired is None else f'{paired:.2f}×'} |"
        )
    lines += ["", f"resident memory {res['rss_bytes_per_sentence']:,.0f} B/sentence (libraries loaded first)"]
    return "\n".join(lines)


def _ids(hits: list[Any]) -> list[str]:
    return [i for h in hits for i in h.message_ids]


def _child(
    phase: str,
    n: int,
    workdir: Path,
    knn_index: str,
    n_queries: int,
    modes: list[str] | None = None,
    hnsw: bool = True,
) -> dict[str, Any]:
    result = workdir / f"scale-{phase}-{n}.json"
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.scale",
        "--child",
        phase,
        "--size",
        str(n),
        "--workdir",
        str(workdir),
        "--result",
        str(result),
        "--knn-index",
        knn_index,
        "--queries",
        str(n_queries),
        *(["--modes", *modes] if modes else []),
        *([] if hnsw else ["--no-hnsw"]),
    ]
    subprocess.run(cmd, check=True, cwd=Path(__file__).resolve().parents[1])
    return dict(json.loads(result.read_text(encoding="utf-8")))


def _exponent(rows: list[dict[str, Any]], key: str) -> float | None:
    if len(rows) < 2 or not rows[-2].get(key) or not rows[-1].get(key):
        return None
    a, b = rows[-2], rows[-1]
    return math.log(b[key] / a[key]) / math.log(b["sentences"] / a["sentences"])


def estimate_build_s(n: int, done: list[dict[str, Any]]) -> float | None:
    """Expected ingest seconds for ``n`` sentences, extrapolated along the measured growth."""
    if not done:
        return None
    last = done[-1]
    e = _exponent(done, "engine_us_per_sentence") or 0.0
    per_us = last["engine_us_per_sentence"] * (n / last["sentences"]) ** max(e, 0.0)
    embed_us = last["embedder_s"] / last["sentences"] * 1e6
    return n * (per_us + embed_us) / 1e6


def measure(
    sizes: list[int],
    *,
    workdir: Path | None = None,
    knn_index: str = "auto",
    n_queries: int = 100,
    modes: list[str] | None = None,
    max_build_s: float | None = None,
    progress: Any = None,
    hnsw_max: int | None = None,
) -> list[dict[str, Any]]:
    """Build and query every size, smallest first, in fresh child processes.

    ``hnsw_max``: above this size FAISS's HNSW baseline, the approximate-index pass and the edge recall are
    not measured (their index builds take most of the time at 1M sentences on a small machine)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for n in sorted(sizes):
            est = estimate_build_s(n, rows)
            if progress:
                progress(f"scale {n:,}: expected build ≈ {est / 60:.1f} min" if est else f"scale {n:,} ...")
            if est is not None and max_build_s is not None and est > max_build_s:
                rows.append(
                    {
                        "size": n,
                        "skipped": f"expected build ≈ {est / 60:.0f} min > limit {max_build_s / 60:.0f} min",
                        "estimated_build_s": est,
                    }
                )
                continue
            row = {"estimated_build_s": est, **_child("build", n, Path(tmp), knn_index, n_queries)}
            hnsw = hnsw_max is None or n <= hnsw_max
            row.update(_child("query", n, Path(tmp), knn_index, n_queries, modes, hnsw))
            shutil.rmtree(Path(tmp) / f"store-{n}", ignore_errors=True)
            rows.append(row)
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    """Markdown tables of a :func:`measure` run."""

    done = [r for r in rows if "skipped" not in r]
    lines = [
        "| sentences | engine µs/sentence (all · first 10 % · last 10 %) | RSS B/sentence (libraries loaded first "
        "· cold) | nbytes B/sentence | disk B/sentence | build s | load at build |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['size']:,} | skipped: {r['skipped']} | | | | | |")
            continue
        cold = r.get("rss_cold_bytes_per_sentence")
        lines.append(
            f"| {r['sentences']:,} | {r['engine_us_per_sentence']:.0f} · {r['engine_us_first10']:.0f} · "
            f"{r['engine_us_last10']:.0f} | {r['rss_bytes_per_sentence']:.0f} · "
            f"{cold if cold is None else round(cold)} | {r['nbytes_per_sentence']:.0f} | "
            f"{r['disk_bytes_per_sentence']:.0f} | {r['build_s']:.0f} | {r['load_at_build']:.1f} |"
        )
    parts = [r for r in done if r.get("nbytes_parts_per_sentence")]
    if parts:
        names = list(parts[0]["nbytes_parts_per_sentence"])
        lines += [
            "",
            "What the loaded index holds per sentence, part by part (``ScopeIndex.nbytes_parts``, B/sentence):",
            "",
            "| sentences | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names),
        ]
        for r in parts:
            p = r["nbytes_parts_per_sentence"]
            lines.append(f"| {r['sentences']:,} | " + " | ".join(f"{p.get(x, 0):.0f}" for x in names) + " |")
    firsts = [r for r in done if r.get("first_query_ms") and r.get("later_query_ms")]
    if firsts:
        lines += [
            "",
            "First hybrid query after reopening the store (the index's load included) vs the same query later:",
            "",
        ]
        lines += [
            f"- {r['sentences']:,} sentences: {r['first_query_ms']:.0f} ms vs {r['later_query_ms']:.1f} ms = "
            f"**{r['first_query_ms'] / r['later_query_ms']:.1f}×**"
            for r in firsts
        ]
    if any("stage_store_us_first10" in r for r in done):
        lines += [
            "",
            "Engine µs per sentence by stage of an add, first 10 % · last 10 % of the ingest (embedder excluded; "
            "derived = derived memory's share of plan and store):",
            "",
            "| sentences | " + " | ".join(STAGES) + " |",
            "|---|" + "---|" * len(STAGES),
        ]
        for r in done:
            if "stage_store_us_first10" in r:
                cells = [f"{r[f'stage_{s}_us_first10']:.0f} · {r[f'stage_{s}_us_last10']:.0f}" for s in STAGES]
                lines.append(f"| {r['sentences']:,} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Query latency, ms (query embedding excluded); ratio = mode p50 ÷ FAISS flat p50, the flat scan on as many "
        "threads as sgmem's dense scan of the scope (one below 50,000 sentences, the cores above):",
        "",
        "| sentences | system | p50 | p95 | ÷ flat p50 | ÷ flat p95 | median per-query ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in done:
        for s in ("flat", "hnsw", *r.get("modes", _modes())):
            if f"{s}_p50" not in r:  # no HNSW baseline at this size (--hnsw-max)
                continue
            paired = f"{r[f'{s}_paired']:.2f}×" if f"{s}_paired" in r else ""
            lines.append(
                f"| {r['sentences']:,} | {s if s != 'flat' else 'FAISS flat (' + r['flat_config'] + ')'} | "
                f"{r[f'{s}_p50']:.2f} | {r[f'{s}_p95']:.2f} | {r[f'{s}_p50'] / r['flat_p50']:.2f}× | "
                f"{r[f'{s}_p95'] / r['flat_p95']:.2f}× | {paired} |"
            )
    lines += [
        "",
        'Approximate dense index (`Config(dense_index="hnsw")`, forced on): p50 / p95 ms and the share of the '
        "exact search's top-10 it returns:",
        "",
        "| sentences | mode | p50 | p95 | ÷ flat p50 | top-10 overlap (same ids · tie-aware) |",
        "|---|---|---|---|---|---|",
    ]
    for r in done:
        for m in ("vector", "hybrid"):
            if f"{m}_ann_p50" in r:
                lines.append(
                    f"| {r['sentences']:,} | {m} | {r[f'{m}_ann_p50']:.2f} | {r[f'{m}_ann_p95']:.2f} | "
                    f"{r[f'{m}_ann_p50'] / r['flat_p50']:.2f}× | {r[f'{m}_ann_overlap']:.3f} · "
                    f"{r.get(f'{m}_ann_overlap_tied', float('nan')):.3f} |"
                )
    lines += [
        "",
        "| sentences | HNSW kNN edge recall vs exact, k=3 (tie-aware · same ids) | exact ms/sentence "
        "| HNSW ms/sentence | load at query |",
        "|---|---|---|---|---|",
    ]
    for r in done:
        if "edge_recall" not in r:
            lines.append(f"| {r['sentences']:,} | not measured at this size | | | {r['load_at_query']:.1f} |")
            continue
        lines.append(
            f"| {r['sentences']:,} | {r['edge_recall']:.3f} · {r['edge_recall_ids']:.3f} | "
            f"{r['exact_ms_per_sentence']:.2f} | "
            f"{r['ann_ms_per_sentence']:.2f} | {r['load_at_query']:.1f} |"
        )
    if len(done) >= 2:
        lines += ["", "Growth exponents between the two largest sizes (cost ∝ N^e; 0 = flat per sentence):", ""]
        for key, label in (
            ("engine_us_per_sentence", "engine µs/sentence"),
            ("rss_bytes_per_sentence", "RSS/sentence"),
            ("hybrid_p50", "hybrid p50"),
            ("flat_p50", "FAISS flat p50"),
            ("hnsw_p50", "HNSW p50"),
        ):
            e = _exponent(done, key)
            lines.append(f"- {label}: e = {e:.2f}" if e is not None else f"- {label}: n/a")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.env import command_line, environment, render_environment

    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--modes", nargs="+", default=None, help="query modes to time (default: every mode but entity)")
    p.add_argument("--knn-index", choices=["auto", "exact", "hnsw"], default="auto")
    p.add_argument("--max-build-minutes", type=float, default=None, help="skip a size expected to take longer")
    p.add_argument(
        "--recall-npz",
        default=None,
        help="also measure HNSW edge recall on these real vectors (an sgmem.eval.CachingEmbedder .npz)",
    )
    p.add_argument("--out", default=None)
    p.add_argument("--store", default=None, help="time the queries on this store (built by this module) and stop")
    p.add_argument(
        "--no-hnsw",
        dest="hnsw",
        action="store_false",
        help="with --store: skip FAISS's HNSW baseline, the dense_index='hnsw' pass and the edge recall",
    )
    p.add_argument("--child", choices=["build", "query"], help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.store:
        res = query(Path(args.store), args.queries, args.modes, hnsw=args.hnsw)
        print(render_query(res, command_line("benchmarks.scale", argv)))
        if args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(res, indent=1), encoding="utf-8")
        return 0
    if args.child:
        path = Path(args.workdir) / f"store-{args.size}"
        res = (
            build(args.size, path, args.knn_index)
            if args.child == "build"
            else query(path, args.queries, args.modes, hnsw=args.hnsw)
        )
        Path(args.result).write_text(json.dumps(res), encoding="utf-8")
        return 0
    rows = measure(
        args.sizes,
        knn_index=args.knn_index,
        n_queries=args.queries,
        modes=args.modes,
        max_build_s=args.max_build_minutes * 60 if args.max_build_minutes else None,
        progress=lambda s: print(s, file=sys.stderr, flush=True),
    )
    report = "\n".join(
        [
            "# sgmem engine scale",
            "",
            render_environment(environment(), command_line("benchmarks.scale", argv)),
            "",
            render(rows),
        ]
    )
    if args.recall_npz:
        vecs = np.load(args.recall_npz)["vecs"].astype(np.float32)
        r = edge_recall(vecs, n_new=min(500, len(vecs) // 10))
        report += (
            f"\n\nHNSW kNN edge recall on {len(vecs):,} real MiniLM vectors ({Path(args.recall_npz).name}): "
            f"{r['edge_recall']:.3f} tie-aware, {r['edge_recall_ids']:.3f} same ids."
        )
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report + "\n", encoding="utf-8")
        Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
