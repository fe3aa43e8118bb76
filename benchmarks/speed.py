"""Speed benchmark: ingest vs raw embedding, query latency vs dense FAISS search.

Every figure is measured against a baseline in the same run and reported as a
ratio:

* ingest throughput (sentences/s through ``Memory.add``, everything included:
  segmenting, embedding, kNN edges, SQLite transaction) ÷ raw embedding
  throughput of the same texts (``embedder.embed`` in batches of 64);
* query latency p50/p95 per mode (``Memory.search``, query embedding included)
  ÷ the same for a dense-only search: embed the query, FAISS ``IndexFlatIP``
  top-10 over the same sentence vectors.

Usage::

    python -m benchmarks.speed --sizes 1000 10000 100000 --out benchmarks/out/speed.md
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.synth import PEOPLE, PLACES, conversation

MODES = ("hybrid", "vector", "graph", "bm25")
QUESTIONS = [
    "Where did I go with {p}?",
    "What did {p} give me for my birthday?",
    "Who moved to {pl}?",
    "When am I going to {pl}?",
    "What hobby did {p} start?",
    "How do I feel about my hobbies lately?",
]


def _queries(n: int, seed: int = 1) -> list[str]:
    import random

    rng = random.Random(seed)
    return [rng.choice(QUESTIONS).format(p=rng.choice(PEOPLE), pl=rng.choice(PLACES)) for _ in range(n)]


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run_size(n: int, embedder: Any, n_queries: int, workdir: Path) -> dict[str, Any]:
    import faiss

    import sgmem
    from sgmem.ingest import prepare
    from sgmem.validate import normalise_messages

    adds = list(conversation(n, seed=n))
    cfg = sgmem.Config()
    # the exact texts ingest embeds (speaker-prefixed sentences), for the raw baseline
    texts: list[str] = []
    for thread, msgs in adds:
        norm = normalise_messages(msgs, msgs[0]["at"], cfg.limits)
        prep = prepare(norm, cfg, [thread] * len(norm), [f"x{i}" for i in range(len(norm))])
        texts += prep.sentence_texts
    distinct = len(set(texts))

    t0 = time.perf_counter()
    for i in range(0, len(texts), 64):
        embedder.embed(texts[i : i + 64])
    raw_s = time.perf_counter() - t0

    path = workdir / f"store-{n}"
    t0 = time.perf_counter()
    n_sent = 0
    with sgmem.Memory(path, embedder=embedder) as mem:
        for thread, msgs in adds:
            n_sent += mem.add(msgs, scope="bench", thread=thread).sentences
    ingest_s = time.perf_counter() - t0

    queries = _queries(n_queries)
    out: dict[str, Any] = {
        "sentences": n_sent,
        "distinct_texts": distinct,
        "raw_embed_per_s": len(texts) / raw_s,
        "ingest_per_s": n_sent / ingest_s,
    }
    out["ingest_ratio"] = out["ingest_per_s"] / out["raw_embed_per_s"]
    with sgmem.Memory(path, embedder=embedder) as mem:
        mem.search("warm up", scope="bench", k=10)  # loads the scope index once, as a long-lived app would
        idx = next(iter(mem._indexes.values()))
        vecs = np.ascontiguousarray(idx.sentence_vectors())
        flat = faiss.IndexFlatIP(vecs.shape[1])
        flat.add(vecs)
        dense = []
        for q in queries:
            t = time.perf_counter()
            qv = embedder.embed([q])
            flat.search(qv, 10)
            dense.append((time.perf_counter() - t) * 1e3)
        out["dense_p50"], out["dense_p95"] = _pct(dense, 0.5), _pct(dense, 0.95)
        for mode in MODES:
            lat = []
            for q in queries:
                t = time.perf_counter()
                mem.search(q, scope="bench", k=10, mode=mode)
                lat.append((time.perf_counter() - t) * 1e3)
            out[f"{mode}_p50"], out[f"{mode}_p95"] = _pct(lat, 0.5), _pct(lat, 0.95)
    disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    out["disk_bytes_per_sentence"] = disk / max(n_sent, 1)
    return out


def render(results: dict[int, dict[str, Any]], embedder_name: str) -> str:
    import sgmem

    lines = [
        "# sgmem speed benchmark",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"sgmem {sgmem.__version__}, embedder {embedder_name}.",
        f"Command: `{' '.join(['python -m benchmarks.speed', *sys.argv[1:]])}`",
        "",
        "## Ingest (everything included) vs raw embedding of the same texts",
        "",
        "| sentences | distinct texts | raw embed sent/s | ingest sent/s | **ratio** (target ≥ 0.8) | disk bytes/sentence |",
        "|---|---|---|---|---|---|",
    ]
    for n, r in results.items():
        lines.append(
            f"| {r['sentences']:,} | {r['distinct_texts']:,} | {r['raw_embed_per_s']:.0f} | {r['ingest_per_s']:.0f} | "
            f"**{r['ingest_ratio']:.2f}** | {r['disk_bytes_per_sentence']:.0f} |"
        )
    lines += [
        "",
        "## Query latency (query embedding included) vs dense-only FAISS search",
        "",
        "| sentences | dense p50 / p95 ms | " + " | ".join(f"{m} p50 / p95 ms (ratio)" for m in MODES) + " |",
        "|---|---|" + "---|" * len(MODES),
    ]
    for n, r in results.items():
        cells = [
            f"{r[f'{m}_p50']:.1f} / {r[f'{m}_p95']:.1f} (**{r[f'{m}_p50'] / r['dense_p50']:.2f}** / "
            f"{r[f'{m}_p95'] / r['dense_p95']:.2f})"
            for m in MODES
        ]
        lines.append(f"| {r['sentences']:,} | {r['dense_p50']:.1f} / {r['dense_p95']:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--out", default=None, help="write the Markdown report here too")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sgmem.embed import default_embedder

    embedder = default_embedder()
    embedder.embed(["load the model before timing"])
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            print(f"size {n} ...", file=sys.stderr, flush=True)
            results[n] = run_size(n, embedder, args.queries, Path(tmp))
    report = render(results, embedder.name)
    print(report)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
