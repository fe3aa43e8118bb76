"""Speed and scale: ingest vs raw embedding, query latency vs dense FAISS, gate cost, memory and disk.

Synthetic conversations (:mod:`benchmarks.synth`) of N = 1k, 10k, 100k and
1M sentences. Every figure is measured against a baseline in the same run:

* ingest throughput (sentences/s through ``Memory.add``, everything included:
  segmenting, embedding, kNN edges, keywords, the SQLite transaction) ÷ raw
  embedding throughput of the same texts (``embedder.embed``, batches of 64);
* query latency p50/p95 per mode (``Memory.search``, query embedding
  included) ÷ the same for dense-only search: embed the query, FAISS
  ``IndexFlatIP`` top-10 over the same sentence vectors;
* one novelty-gate decision against N memories ÷ one flat top-1 search of them
  (:mod:`benchmarks.gate_cost`);
* resident memory of a loaded scope (RSS of a fresh process after every mode
  has answered once, minus the process with the model loaded) and bytes on
  disk, per sentence.

Sizes above ``--real-embed-max`` (default 10k) are built with precomputed
vectors (:class:`benchmarks.vectors.SkeletonEmbedder`): their ingest figures
exclude embedding and their raw-embedding rate is measured on a sample of
``--raw-sample`` texts. Each size is built and then queried in fresh child
processes, so resident memory is measured cleanly.

The ``speed`` part of ``python -m benchmarks`` (:func:`run_part`) adds the engine alone at scale
(:mod:`benchmarks.scale`, a stand-in embedder), bulk ingest against the embedding floor
(:mod:`benchmarks.bulk`); the similarity edges' recall is the ``knn`` part
(:mod:`benchmarks.knn_recall`)::

    python -m benchmarks --only speed --sizes 1000 10000 100000
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.env import dir_bytes, rss_bytes
from benchmarks.synth import PEOPLE, PLACES, conversation, sentences

__all__ = ["QUESTIONS", "build_store", "measure", "modes", "query_store", "run_size"]

# the entity layer is opt-in (Config.entities) and not part of this comparison
def _modes() -> tuple[str, ...]:
    import sgmem

    return tuple(m for m in sgmem.MODES if m != "entity")


QUESTIONS = [
    "Where did I go with {p}?",
    "What did {p} give me for my birthday?",
    "Who moved to {pl}?",
    "When am I going to {pl}?",
    "What hobby did {p} start?",
    "How do I feel about my hobbies lately?",
]
SCOPE = "bench"


def modes() -> tuple[str, ...]:
    """Every retrieval mode this sgmem has (the opt-in entity layer's aside)."""
    return _modes()


def _queries(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(QUESTIONS).format(p=rng.choice(PEOPLE), pl=rng.choice(PLACES)) for _ in range(n)]


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def _texts(adds: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """The exact texts ingest embeds (speaker-prefixed sentences), for the raw baseline."""
    import sgmem
    from sgmem.ingest import prepare
    from sgmem.validate import normalise_messages

    cfg = sgmem.Config()
    texts: list[str] = []
    for thread, msgs in adds:
        norm = normalise_messages(msgs, msgs[0]["at"], cfg.limits)
        prep = prepare(norm, cfg, [thread] * len(norm), [f"x{i}" for i in range(len(norm))])
        texts += prep.sentence_texts
    return texts


def _raw_rate(embedder: Any, texts: list[str], batch: int = 64) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder.embed(texts[i : i + batch])
    return len(texts) / max(time.perf_counter() - t0, 1e-9)


class _Timed:
    """An embedder proxy that adds up the time spent inside ``embed``."""

    def __init__(self, base: Any) -> None:
        self.base, self.name, self.dim, self.seconds = base, base.name, base.dim, 0.0
        self.device = getattr(base, "device", None)  # Config.dense_device="auto" follows the model's device

    def embed(self, texts: Any) -> Any:
        t = time.perf_counter()
        try:
            return self.base.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t


def build_store(
    n: int, path: Path, embedder: Any, *, raw_embedder: Any, real: bool, raw_sample: int = 2000
) -> dict[str, Any]:
    """Ingest ``n`` synthetic sentences into a store at ``path``; the ingest-side figures."""
    import sgmem

    adds = list(conversation(n, seed=n))
    texts = _texts(adds)
    out: dict[str, Any] = {"size": n, "texts": len(texts), "distinct_texts": len(set(texts)), "real_vectors": real}
    if real:
        out["raw_embed_per_s"] = _raw_rate(raw_embedder, texts)
    else:
        step = max(1, len(texts) // raw_sample)
        out["raw_embed_per_s"] = _raw_rate(raw_embedder, texts[::step][:raw_sample])
        out["raw_sampled"] = min(raw_sample, len(texts[::step]))
    out["load_at_build"] = os.getloadavg()[0]
    n_sent = 0
    timed = _Timed(embedder)
    t0 = time.perf_counter()
    with sgmem.Memory(path, embedder=timed) as mem:
        for thread, msgs in adds:
            n_sent += mem.add(msgs, scope=SCOPE, thread=thread).sentences
    out["ingest_s"] = time.perf_counter() - t0
    out["sentences"] = n_sent
    out["turns"] = sum(len(m) for _, m in adds)
    out["ingest_per_s"] = n_sent / max(out["ingest_s"], 1e-9)
    out["ingest_ratio"] = out["ingest_per_s"] / out["raw_embed_per_s"] if real else None
    # everything but the time inside the embedder (sentences and keywords): µs per sentence
    out["embedder_s"] = timed.seconds
    out["non_embed_us_per_sentence"] = (out["ingest_s"] - timed.seconds) * 1e6 / max(n_sent, 1)
    out["peak_rss_build"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["disk_bytes"] = dir_bytes(path)
    out["disk_bytes_per_sentence"] = out["disk_bytes"] / max(n_sent, 1)
    save = getattr(embedder, "save", None)
    if callable(save):
        save()
    return out


def query_store(
    path: Path, embedder: Any, *, n_queries: int, gate_candidates: int, seed: int
) -> dict[str, Any]:
    """Latency per mode vs dense FAISS, resident memory, gate decision cost, over a built store."""
    import faiss

    import sgmem
    from benchmarks.gate_cost import gate_decision_cost

    embedder.embed(["warm the model up"])
    gc.collect()
    rss0 = rss_bytes()
    out: dict[str, Any] = {"load_at_query": os.getloadavg()[0]}
    queries = _queries(n_queries)
    with sgmem.Memory(path, embedder=embedder) as mem:
        for mode in modes():  # loads the index, the BM25 model and keywords once, as a long-lived app would
            mem.search("warm up", scope=SCOPE, k=10, mode=mode)
        gc.collect()
        out["rss_loaded"] = rss_bytes() - rss0
        idx = next(iter(mem._indexes.values()))
        out["rss_bytes_per_sentence"] = out["rss_loaded"] / max(idx.n_sentences, 1)
        vecs = np.ascontiguousarray(idx.sentence_vectors())
        flat = faiss.IndexFlatIP(vecs.shape[1])
        flat.add(vecs)
        # like for like: the baseline scans on as many threads as sgmem's dense scan of this scope
        # (sgmem.retrieval.dense.scan_threads: one below Config.dense_scan_min_sentences, the cores above);
        # round robin over the systems per query, so load drifting during the run hits all alike
        from sgmem.retrieval.dense import scan_threads

        threads = scan_threads(mem.config, idx.n_sentences)
        omp = faiss.omp_get_max_threads()
        lat: dict[str, list[float]] = {m: [] for m in ("dense", *modes())}
        for q in queries:
            faiss.omp_set_num_threads(threads)
            t = time.perf_counter()
            flat.search(np.asarray(embedder.embed([q]), dtype=np.float32), 10)
            lat["dense"].append((time.perf_counter() - t) * 1e3)
            faiss.omp_set_num_threads(omp)
            for mode in modes():
                t = time.perf_counter()
                mem.search(q, scope=SCOPE, k=10, mode=mode)
                lat[mode].append((time.perf_counter() - t) * 1e3)
        for name, xs in lat.items():
            out[f"{name}_p50"], out[f"{name}_p95"] = _pct(xs, 0.5), _pct(xs, 0.95)
        out["scan_threads"] = threads
        out["dense_config"] = f"{threads} thread{'s' if threads > 1 else ''}, as sgmem's scan"
        del flat
    cands = np.asarray(embedder.embed([f"Sam: {s}" for s in sentences(gate_candidates, seed=seed + 7)]), np.float32)
    out["gate"] = gate_decision_cost(vecs, cands)
    return out


def _embedders(real: bool, cache_dir: str | None) -> tuple[Any, Any]:
    """(build/query embedder, raw-embedding embedder) for one size."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sgmem.embed import default_embedder

    base = default_embedder()
    base.embed(["load the model before timing"])
    if real:
        return base, base
    from benchmarks.vectors import SkeletonEmbedder
    from sgmem.eval import CachingEmbedder

    cache = CachingEmbedder(base, cache_dir) if cache_dir else None
    return SkeletonEmbedder(base, cache), base


def run_size(
    n: int,
    workdir: Path,
    *,
    real: bool = True,
    n_queries: int = 200,
    gate_candidates: int = 200,
    raw_sample: int = 2000,
    cache_dir: str | None = None,
    isolate: bool = True,
    keep: bool = False,
) -> dict[str, Any]:
    """Build and query one size; with ``isolate``, each phase runs in a fresh process."""
    workdir = Path(workdir).resolve()
    cache_dir = str(Path(cache_dir).resolve()) if cache_dir else None
    path = workdir / f"store-{n}"
    if path.exists():
        shutil.rmtree(path)
    try:
        if not isolate:
            emb, raw = _embedders(real, cache_dir)
            built = build_store(n, path, emb, raw_embedder=raw, real=real, raw_sample=raw_sample)
            queried = query_store(path, emb, n_queries=n_queries, gate_candidates=gate_candidates, seed=n)
            return {**built, **queried, "isolated": False}
        common = ["--size", str(n), "--workdir", str(workdir), "--queries", str(n_queries),
                  "--gate-candidates", str(gate_candidates), "--raw-sample", str(raw_sample)]
        if cache_dir:
            common += ["--cache", cache_dir]
        if not real:
            common.append("--skeleton")
        res: dict[str, Any] = {"isolated": True}
        for phase in ("build", "query"):
            result = workdir / f"{phase}-{n}.json"
            cmd = [sys.executable, "-m", "benchmarks.speed", "--child", phase, "--result", str(result), *common]
            subprocess.run(cmd, check=True, cwd=Path(__file__).resolve().parents[1])
            res.update(json.loads(result.read_text(encoding="utf-8")))
        return res
    finally:
        if not keep and path.exists():
            shutil.rmtree(path, ignore_errors=True)


def _build_hours(n: int, done: dict[int, dict[str, Any]]) -> float | None:
    """Expected hours to ingest ``n`` sentences, from the per-sentence ingest cost (excluding
    embedding) of the sizes measured so far, extrapolated along its log–log growth."""
    pts = sorted((r["sentences"], r["non_embed_us_per_sentence"]) for r in done.values() if r.get("sentences"))
    if not pts:
        return None
    (n1, c1), (n0, c0) = pts[-1], pts[-2] if len(pts) > 1 else pts[-1]
    slope = math.log(c1 / c0) / math.log(n1 / n0) if n1 != n0 and c0 > 0 and c1 > 0 else 0.0
    per_us = c1 * (n / n1) ** max(slope, 0.0)
    return n * per_us / 1e6 / 3600


def _fits(n: int, done: dict[int, dict[str, Any]], max_build_hours: float | None = None) -> tuple[bool, str]:
    """Whether a size is expected to fit in RAM, disk and the time allowed, from the sizes measured."""
    if not done:
        return True, ""
    if max_build_hours is not None:
        hours = _build_hours(n, done)
        if hours is not None and hours > max_build_hours:
            return False, f"its ingest would take ≈{hours:.1f} h (limit --max-build-hours {max_build_hours:g})"
    try:
        import psutil
    except ImportError:
        return True, ""
    sizes = sorted(done.values(), key=lambda r: r["sentences"])
    last = sizes[-1]
    # marginal peak RSS per sentence between the two largest sizes (the model's fixed share cancels out)
    per = last.get("rss_bytes_per_sentence", 0.0)
    if len(sizes) > 1 and last["sentences"] > sizes[-2]["sentences"]:
        growth = (last["peak_rss_build"] - sizes[-2]["peak_rss_build"]) / (last["sentences"] - sizes[-2]["sentences"])
        per = max(per, growth)
    need_ram = 1.5 * (last["peak_rss_build"] + per * (n - last["sentences"]))
    need_disk = 1.2 * last["disk_bytes_per_sentence"] * n
    ram = psutil.virtual_memory().available
    disk = shutil.disk_usage(tempfile.gettempdir()).free
    if need_ram > ram or need_disk > disk:
        return False, (f"needs ≈{need_ram / 2**30:.1f} GiB RAM and {need_disk / 2**30:.1f} GiB disk; "
                       f"the machine has {ram / 2**30:.1f} GiB and {disk / 2**30:.1f} GiB free")
    return True, ""


def measure(
    sizes: list[int],
    *,
    real_embed_max: int = 10_000,
    n_queries: int = 200,
    gate_candidates: int = 200,
    raw_sample: int = 2000,
    cache_dir: str | None = None,
    workdir: Path | None = None,
    isolate: bool = True,
    max_build_hours: float | None = None,
    progress: Any = None,
) -> dict[int, dict[str, Any]]:
    """Every size, smallest first; sizes that would not fit are recorded as skipped."""
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for n in sorted(sizes):
            ok, why = _fits(n, {k: v for k, v in results.items() if "skipped" not in v}, max_build_hours)
            if not ok:
                results[n] = {"size": n, "skipped": why}
                if progress:
                    progress(f"size {n:,}: skipped ({why})")
                continue
            if progress:
                progress(f"size {n:,} ({'real' if n <= real_embed_max else 'precomputed'} vectors) ...")
            results[n] = run_size(
                n, Path(tmp), real=n <= real_embed_max, n_queries=n_queries, gate_candidates=gate_candidates,
                raw_sample=raw_sample, cache_dir=cache_dir, isolate=isolate,
            )
    return results


def _child(args: argparse.Namespace) -> int:
    real = not args.skeleton
    emb, raw = _embedders(real, args.cache)
    path = Path(args.workdir) / f"store-{args.size}"
    if args.child == "build":
        out = build_store(args.size, path, emb, raw_embedder=raw, real=real, raw_sample=args.raw_sample)
    else:
        out = query_store(path, emb, n_queries=args.queries, gate_candidates=args.gate_candidates, seed=args.size)
    Path(args.result).write_text(json.dumps(out), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    from benchmarks.env import command_line, environment, render_environment
    from benchmarks.speed_report import plot, render

    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--gate-candidates", type=int, default=200)
    p.add_argument("--real-embed-max", type=int, default=10_000,
                   help="largest size embedded for real (larger ones use precomputed vectors)")
    p.add_argument("--raw-sample", type=int, default=2000, help="texts timed for the raw rate at larger sizes")
    p.add_argument("--cache", default="benchmarks/out/cache", help="cache of skeleton vectors")
    p.add_argument("--max-build-hours", type=float, default=None,
                   help="skip a size whose ingest is expected to take longer (extrapolated from smaller sizes)")
    p.add_argument("--out", default=None, help="write the Markdown report here too")
    p.add_argument("--plots", default=None, help="write speed_scale.png into this directory")
    p.add_argument("--in-process", action="store_true", help="no child processes (RSS is then approximate)")
    p.add_argument("--child", choices=["build", "query"], help=argparse.SUPPRESS)
    p.add_argument("--size", type=int, help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--skeleton", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    results = measure(
        args.sizes, real_embed_max=args.real_embed_max, n_queries=args.queries, gate_candidates=args.gate_candidates,
        raw_sample=args.raw_sample, cache_dir=args.cache, isolate=not args.in_process,
        max_build_hours=args.max_build_hours, progress=lambda s: print(s, file=sys.stderr, flush=True),
    )
    report = "\n".join([
        "# sgmem speed and scale", "",
        render_environment(environment(), command_line("benchmarks.speed", argv)), "", render(results),
    ])
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    if args.plots:
        plot(results, Path(args.plots))
    return 0


# ------------------------------------------------------------------ the part
TITLE = "Speed and scale"

ENGINE_HOW = (
    "The engine alone: one scope built a session at a time with a stand-in hashing embedder (384 dimensions, "
    "no model), so the figures are sgmem's own cost per sentence; resident memory with the libraries loaded "
    "first (the cold figure beside it); query latency per mode against FAISS flat and HNSW over the same "
    "vectors; the similarity edges' recall against an exact kNN of every vector. Also "
    "`python -m benchmarks.scale --sizes N ...` alone."
)
BULK_HOW = (
    "`Memory.add` of many sessions in one call (the bulk path) against one `embedder.embed` call over the "
    "same texts: the floor no ingest can beat."
)
def run_part(ctx: Any) -> dict[str, Any]:
    """Ingest, query, memory and gate cost at every size; the engine at scale; bulk ingest; kNN edge recall."""
    from benchmarks import bulk, scale, speed_report

    a = ctx.args
    ctx.progress(f"speed: sizes {a.sizes}")
    speed = measure(a.sizes, real_embed_max=a.real_embed_max, n_queries=a.queries, gate_candidates=a.gate_candidates,
                    cache_dir=a.cache, max_build_hours=a.max_build_hours, isolate=not a.in_process,
                    progress=ctx.progress)
    speed_report.plot(speed, ctx.plots)
    big = getattr(a, "engine_sizes", None) or [n for n in a.sizes if n >= 10_000] or [max(a.sizes)]
    ctx.progress(f"engine scale: sizes {big}")
    engine = scale.measure(big, n_queries=min(a.queries, 100), progress=ctx.progress,
                           hnsw_max=getattr(a, "hnsw_max", None),
                           max_build_s=a.max_build_hours * 3600 if a.max_build_hours else None)
    ctx.progress("bulk ingest vs the embedding floor")
    bulk_res = bulk.measure(min(2000, max(a.sizes)), embedder=ctx.embedder().base)
    return {"speed": {str(n): r for n, r in sorted(speed.items())}, "engine": engine, "bulk": bulk_res}


def render_part(raw: dict[str, Any]) -> str:
    from benchmarks import bulk, scale, speed_report

    speed = {int(n): r for n, r in raw["speed"].items()}
    out = [speed_report.render(speed), "![scale](plots/speed_scale.png)",
           "### The engine at scale (stand-in embedder)", ENGINE_HOW, scale.render(raw["engine"]),
           "### Bulk ingest vs the embedding floor", BULK_HOW, bulk.render(raw["bulk"])]
    return "\n\n".join(out)


def summary_lines(raw: dict[str, Any]) -> list[str]:
    speed = {int(n): r for n, r in raw["speed"].items()}
    rows = [r for _, r in sorted(speed.items()) if "skipped" not in r]
    out: list[str] = []
    real = [r for r in rows if r.get("ingest_ratio")]
    if real:
        r = real[-1]
        out.append(f"- Ingest at {r['sentences']:,} sentences runs at **{r['ingest_ratio']:.2f}×** the raw "
                   "embedding throughput of the same texts.")
    if rows:
        r = rows[-1]
        out.append(f"- Query p50 at {r['sentences']:,} sentences: hybrid {r['hybrid_p50']:.1f} ms = "
                   f"**{r['hybrid_p50'] / r['dense_p50']:.2f}×** dense FAISS ({r['dense_p50']:.1f} ms), same run.")
        g = r.get("gate") or {}
        if g.get("exact_p50_us") and g.get("flat_p50_us"):
            out.append(f"- One novelty-gate decision against {g['memories']:,} memories: {g['exact_p50_us']:.0f} µs "
                       f"exact = **{g['exact_p50_us'] / g['flat_p50_us']:.1f}×** a flat top-1 search.")
    return out


if __name__ == "__main__":
    sys.exit(main())
