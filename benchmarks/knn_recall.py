"""kNN edge recall of the write path against a global kNN of the stored vectors, per ``GraphConfig.knn_rule``.

SGMem's paper links each sentence to its ``k`` nearest sentences of the
whole haystack (a global kNN graph, ALGORITHMS §1.2 step 4). A memory
grows an add at a time; ``knn_rule="knn"`` keeps every sentence's list equal
to its ``k`` nearest among the sentences present (:mod:`sgmem.retrieval.knn`),
``knn_rule="earlier"`` links a new sentence to its ``k`` most similar earlier
ones only. This benchmark ingests the same vectors under each rule through
``Memory.add`` (one sentence per message, 24 messages per add, the default
configuration otherwise: exact neighbours below ``knn_ann_min_sentences``,
HNSW above), then compares the stored lists with the exact kNN computed from
the vectors read back from the store (a seeded sample of sentences at large
sizes; tie-aware: a stored neighbour counts when its cosine reaches the
sentence's exact ``k``-th).

Vectors: real MiniLM vectors of LoCoMo sentences (an
:class:`sgmem.eval.CachingEmbedder` ``.npz``, e.g. the one ``sgmem eval
locomo --cache`` writes); sizes beyond them are "LoCoMo-like": a stored
vector plus Gaussian noise of norm ``--noise`` (0.5 by default), normalised.
Costs are the engine's milliseconds per add (``AddResult.timings_ms``, the
lookup embedder costs nothing), per sentence, over the whole ingest and its
last 10 %, both rules in the same run, their adds interleaved.

The ``knn`` part of ``python -m benchmarks`` (the ``--direct`` form, at 10,000 and 100,000 sentences:
``python -m benchmarks --only knn``); alone:
``python -m benchmarks.knn_recall --npz benchmarks/out/cache/embeddings-*.npz --sizes 10000 100000 [--direct]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "TITLE",
    "LookupEmbedder",
    "direct",
    "lookup_vectors",
    "main",
    "measure",
    "render",
    "render_part",
    "run_part",
    "stored_recall",
]

PER_ADD = 24


class LookupEmbedder:
    """Embeds ``"v<i>"`` (speaker-prefixed or not) as row ``i`` of a fixed matrix."""

    def __init__(self, vecs: np.ndarray) -> None:
        self.vecs = vecs
        self.dim = int(vecs.shape[1])
        self.name = f"lookup-{len(vecs)}x{self.dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.vecs[[int(t.rsplit("v", 1)[1]) for t in texts]]


def lookup_vectors(base: np.ndarray, n: int, noise: float = 0.5, seed: int = 0) -> np.ndarray:
    """``n`` unit vectors: ``base``'s rows, then noisy copies of random rows (norm-``noise`` Gaussian noise)."""
    rng = np.random.default_rng(seed)
    base = base / np.linalg.norm(base, axis=1, keepdims=True)
    out = [base[:n]]
    if n > len(base):
        m = n - len(base)
        src = base[rng.integers(0, len(base), m)]
        g = rng.normal(size=src.shape) * (noise / np.sqrt(base.shape[1]))
        extra = src + g
        out.append(extra / np.linalg.norm(extra, axis=1, keepdims=True))
    perm = rng.permutation(n)  # conversations interleaved, copies far from their source in time
    return np.ascontiguousarray(np.concatenate(out)[perm], dtype=np.float32)


def stored_recall(conn: Any, k: int, sample: int, seed: int = 0) -> float:
    """Tie-aware recall of the stored out-lists against the exact kNN over every stored vector."""
    rows = conn.execute("SELECT id, vec FROM sentences ORDER BY id").fetchall()
    ids = np.array([int(r[0]) for r in rows], dtype=np.int64)
    vecs = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32).reshape(len(ids), -1)
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(ids), min(sample, len(ids)), replace=False))
    pos = {int(s): j for j, s in enumerate(ids)}
    lists: dict[int, list[int]] = {}
    for a, b in conn.execute("SELECT src, dst FROM sentence_edges").fetchall():
        lists.setdefault(pos[int(a)], []).append(pos[int(b)])
    good = 0
    for lo in range(0, len(pick), 512):
        q = pick[lo : lo + 512]
        sims = vecs[q] @ vecs.T
        sims[np.arange(len(q)), q] = -np.inf
        kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1]
        for a, r in enumerate(q.tolist()):
            good += sum(1 for t in lists.get(r, []) if sims[a, t] >= kth[a] - 1e-6)
    return good / (k * len(pick))


def _ingest(vecs: np.ndarray, rules: Sequence[str], root: Path) -> list[dict[str, Any]]:
    """Ingest ``vecs`` once per rule, the rules' adds interleaved (so load on the machine falls on each alike)."""
    import sgmem

    base = sgmem.Config()
    mems: list[Any] = []
    per: list[list[float]] = []
    for rule in rules:
        cfg = base.with_(graph=dataclasses.replace(base.graph, knn_rule=rule))  # type: ignore[arg-type]
        mems.append(sgmem.Memory(root / rule, embedder=LookupEmbedder(vecs), config=cfg))
        per.append([])
    build = [0.0] * len(rules)
    try:
        for a in range(0, len(vecs), PER_ADD):
            msgs = [{"role": "user", "content": f"v{i}"} for i in range(a, min(a + PER_ADD, len(vecs)))]
            for j, mem in enumerate(mems):
                t0 = time.perf_counter()
                res = mem.add(msgs, scope="u", thread=f"t{(a // PER_ADD) % 7}")
                build[j] += time.perf_counter() - t0
                per[j].append(res.timings_ms["total"] / max(res.sentences, 1))
        out = []
        for j, (rule, mem) in enumerate(zip(rules, mems, strict=True)):
            k = mem.config.graph.knn_k
            n_edges = int(mem._store.conn.execute("SELECT COUNT(*) FROM sentence_edges").fetchone()[0])
            tail = per[j][int(0.9 * len(per[j])) :]
            out.append(
                {
                    "rule": rule,
                    "recall": stored_recall(mem._store.conn, k, sample=2000),
                    "edges": n_edges,
                    "us_per_sentence": float(np.mean(per[j])) * 1e3,
                    "us_per_sentence_last10": float(np.mean(tail)) * 1e3,
                    "build_s": build[j],
                }
            )
        return out
    finally:
        for mem in mems:
            mem.close()


def measure(base: np.ndarray, sizes: Sequence[int], noise: float = 0.5) -> list[dict[str, Any]]:
    """Both rules at each size, the same vectors; temporary stores (removed after)."""
    out = []
    for n in sizes:
        vecs = lookup_vectors(base, n, noise)
        tmp = Path(tempfile.mkdtemp(prefix="knn-recall-"))
        try:
            rows = _ingest(vecs, ("earlier", "knn"), tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for row in rows:
            row["sentences"] = n
            print(row, file=sys.stderr)
        out += rows
    return out


def direct(vecs: np.ndarray, rules: Sequence[str] = ("earlier", "knn"), sample: int = 2000) -> list[dict[str, Any]]:
    """The engine's kNN step alone, add by add, on a scope index per rule (no store; the rules' adds interleaved):
    what ``Memory.add`` runs for the similarity edges (:func:`sgmem.ingest.knn_edges` or
    :func:`sgmem.retrieval.knn.knn_update`, exact below ``knn_ann_min_sentences``, HNSW above) and how the
    cached lists and adjacency follow; then the lists' recall vs the exact kNN of every vector."""
    import sgmem
    from sgmem.ingest import knn_edges
    from sgmem.retrieval.ann import ensure_ann
    from sgmem.retrieval.index import ScopeIndex
    from sgmem.retrieval.knn import KnnUpdate, knn_update

    g = sgmem.Config().graph
    idxs = {rule: ScopeIndex(1, int(vecs.shape[1])) for rule in rules}
    spent = dict.fromkeys(rules, 0.0)
    spent_last = dict.fromkeys(rules, 0.0)
    n_last = 0
    for a in range(0, len(vecs), PER_ADD):
        new = np.ascontiguousarray(vecs[a : a + PER_ADD])
        last = a >= 0.9 * len(vecs)
        n_last += len(new) if last else 0
        for rule in rules:
            idx = idxs[rule]
            n0 = idx.n_sentences
            t0 = time.perf_counter()
            ann = ensure_ann(idx, g)
            res = (knn_update if rule == "knn" else knn_edges)(idx, new, g.knn_k, g.knn_min_cosine, ann=ann)
            upd = res if isinstance(res, KnnUpdate) else KnnUpdate(pairs=res)
            rows = list(range(n0, n0 + len(new)))
            idx._sent_ids.extend(np.arange(n0, n0 + len(new)))  # sentence id = row
            idx._sent_msg.extend(np.zeros(len(new), dtype=np.int32))
            idx._sent_idx.extend(np.zeros(len(new), dtype=np.int32))
            idx.adjacency.grow(idx.n_sentences)
            idx.knn.grow(idx.n_sentences)
            if ann is not None:
                ann.add_rows(new)
            else:
                idx.sent_index.add(new)
            idx._changed()
            edges = [(rows[i], rows[-t - 1] if t < 0 else t, w) for i, t, w in upd.pairs]
            edges += [(r, rows[i], w) for r, i, w in upd.back]
            for x, y, _ in edges:
                idx.adjacency.add(x, y)
            if upd.evicted:
                idx.adjacency.remove(upd.evicted)
            idx.knn.apply(edges, upd.evicted)
            dt = time.perf_counter() - t0
            spent[rule] += dt
            spent_last[rule] += dt if last else 0.0
    rng = np.random.default_rng(0)
    pick = np.sort(rng.choice(len(vecs), min(sample, len(vecs)), replace=False))
    k = g.knn_k
    good = dict.fromkeys(rules, 0)
    for lo in range(0, len(pick), 512):
        q = pick[lo : lo + 512]
        sims = vecs[q] @ vecs.T
        sims[np.arange(len(q)), q] = -np.inf
        kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1]
        for j, r in enumerate(q.tolist()):
            for rule in rules:
                good[rule] += sum(1 for t, _ in idxs[rule].knn.row(r) if sims[j, t] >= kth[j] - 1e-6)
    return [
        {
            "rule": rule,
            "recall": good[rule] / (k * len(pick)),
            "edges": int(sum(len(idxs[rule].knn.row(r)) for r in range(idxs[rule].n_sentences))),
            "us_per_sentence": spent[rule] / len(vecs) * 1e6,
            "us_per_sentence_last10": spent_last[rule] / max(n_last, 1) * 1e6,
            "build_s": spent[rule],
            "sentences": len(vecs),
        }
        for rule in rules
    ]


def render(rows: list[dict[str, Any]], command: str = "", cost: str = "engine µs/sentence") -> str:
    lines = [
        f"| sentences | search | knn_rule | edge recall vs global kNN (k=3, tie-aware) | edges | {cost} "
        "(all adds · last 10 %) | s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['sentences']:,} | {r.get('search', '–')} | {r['rule']} | {r['recall']:.3f} | {r['edges']:,} | "
            f"{r['us_per_sentence']:.0f} · {r['us_per_sentence_last10']:.0f} | {r['build_s']:.0f} |"
        )
    if command:
        lines.append(f"\n`{command}`")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.knn_recall", description=__doc__.split("\n")[0])
    p.add_argument("--npz", help="an sgmem.eval.CachingEmbedder .npz of real sentence vectors")
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--noise", type=float, default=0.5)
    p.add_argument("--out", help="also write the Markdown table here")
    p.add_argument(
        "--direct",
        action="store_true",
        help="the engine's kNN step alone on a scope index (no store, no other write work): fast at 100k",
    )
    args = p.parse_args(argv)
    command = "python -m benchmarks.knn_recall " + " ".join(argv if argv is not None else sys.argv[1:])
    if not args.npz:
        p.error("--npz (vectors for the edge recall) is required")
    base = np.load(args.npz)["vecs"].astype(np.float32)
    if args.direct:
        rows = []
        for n in args.sizes:
            vecs = lookup_vectors(base, n, args.noise)
            rows += direct(vecs)
            print(rows[-2:], file=sys.stderr)
    else:
        rows = measure(base, args.sizes, args.noise)
    report = render(rows, command, "kNN step µs/sentence" if args.direct else "engine µs/sentence")
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 0


# ------------------------------------------------------------------ the part
TITLE = "Similarity edges: recall against an exact kNN graph"

KNN_HOW = (
    "Each sentence's `k` nearest sentences (`GraphConfig.knn_k`) kept by the write path, add by add (24 "
    "sentences each), against the exact kNN of all the vectors at the end (tie-aware, a seeded sample of 2,000 "
    'sentences): `knn_rule="knn"` (SGMem\'s kNN graph: lists stay the k nearest of all sentences present) '
    'and `"earlier"` (the default: a new sentence links only to earlier ones; the nested cross-validation '
    "chooses it for the hybrid in every fold). Neighbours are found exactly below "
    "`GraphConfig.knn_ann_min_sentences` sentences and with HNSW above (the *search* column). Vectors: real "
    "MiniLM vectors of LoCoMo sentences from the embedding cache, and beyond their number a stored vector plus "
    "Gaussian noise of norm 0.5. The engine's kNN step alone, no store. Targets: ≥ 0.95 on the exact path, "
    "≥ 0.90 on the HNSW path, for `knn`."
)


def run_part(ctx: Any) -> dict[str, Any]:
    """Both rules at 10,000 and 100,000 sentences (toy size in a smoke run)."""
    import sgmem

    npz = sorted(Path(ctx.args.cache).glob("embeddings-*.npz"))
    if not npz:
        return {
            "skipped": f"no embedding cache (embeddings-*.npz) in {Path(ctx.args.cache).name}/ to draw vectors from"
        }
    base = np.load(npz[0])["vecs"].astype(np.float32)
    sizes = [300] if ctx.args.smoke else [10_000, 100_000]
    ann_min = sgmem.Config().graph.knn_ann_min_sentences
    rows: list[dict[str, Any]] = []
    for n in sizes:
        ctx.progress(f"kNN edge recall at {n:,} sentences")
        for row in direct(lookup_vectors(base, n)):
            row["search"] = "exact" if n < ann_min else "HNSW"
            rows.append(row)
    return {"rows": rows, "real_vectors": int(len(base)), "ann_min_sentences": ann_min}


def render_part(raw: dict[str, Any]) -> str:
    if "skipped" in raw:
        return f"Not run: {raw['skipped']}."
    return KNN_HOW + "\n\n" + render(raw["rows"], cost="kNN step µs/sentence")


if __name__ == "__main__":
    raise SystemExit(main())
