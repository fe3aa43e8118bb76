"""LangGraph store search latency: ``SGMemStore`` against ``InMemoryStore(index=...)``, same model.

Both stores hold the same items (one ``text`` field each, sentences of the
synthetic conversations) in ``--namespaces`` namespaces, are indexed on
``["text"]`` with the same MiniLM embedder (``SGMemEmbeddings`` for
``InMemoryStore``, the Memory's own for ``SGMemStore``), and answer the same
queries, alternating store by store so that machine load hits both alike.
Reported: p50 and p95 search latency per store and their ratio
(SGMemStore / InMemoryStore; 1.0 = as fast), plus the latency of single puts (the
first 20 items; the rest are put in batches of 100), and whether the two agree
on the best item.

The ``store`` part of ``python -m benchmarks`` (1,000 items, 100 queries); alone::

    python -m benchmarks.store                       # 1,000 items, 100 queries
    python -m benchmarks.store --items 200 5000 --queries 50
    python -m benchmarks.store --durable             # SGMemStore on disk instead of in RAM
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from typing import Any

from benchmarks.env import command_line, environment, render_environment
from benchmarks.synth import conversation

__all__ = ["TITLE", "main", "measure", "render", "render_part", "run_part"]


def _texts(n: int) -> list[str]:
    out: dict[str, None] = {}
    seed = 0
    while len(out) < n and seed < 50:
        for _, msgs in conversation(2 * n, seed=seed):
            out.update((m["content"], None) for m in msgs)
        seed += 1
    return list(out)[:n]


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def measure(n_items: int, n_queries: int, n_namespaces: int, durable: bool) -> dict[str, Any]:
    """Put ``n_items`` into both stores, time ``n_queries`` searches on each."""
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore

    import sgmem
    from langchain_sgmem import SGMemEmbeddings, SGMemStore
    from sgmem.embed import default_embedder

    embedder = default_embedder()
    embedder.embed(["warm up the model"])
    texts = _texts(n_items + n_queries)
    items, queries = texts[:n_items], texts[n_items:] or texts[:n_queries]
    with tempfile.TemporaryDirectory() as tmp:
        mem = sgmem.Memory(tmp if durable else None, embedder=embedder)
        stores = {
            "InMemoryStore": InMemoryStore(
                index={"dims": embedder.dim, "embed": SGMemEmbeddings(embedder), "fields": ["text"]}
            ),
            "SGMemStore": SGMemStore(mem, index={"fields": ["text"]}),
        }
        put_s: dict[str, float] = {}
        n_put = min(20, len(items))
        for name, store in stores.items():
            fill = [
                PutOp(("users", f"u{i % n_namespaces}"), f"k{i}", {"text": text, "i": i})
                for i, text in enumerate(items[n_put:], start=n_put)
            ]
            for b in range(0, len(fill), 100):
                store.batch(fill[b : b + 100])
            t0 = time.perf_counter()  # single puts, as an agent's tool makes them
            for i, text in enumerate(items[:n_put]):
                store.put(("users", f"u{i % n_namespaces}"), f"k{i}", {"text": text, "i": i})
            put_s[name] = (time.perf_counter() - t0) / max(n_put, 1)
        lat: dict[str, list[float]] = {name: [] for name in stores}
        agree = 0
        for store in stores.values():  # one warm-up search each
            store.search(("users",), query=queries[0], limit=10)
        for q in queries:
            best = {}
            for name, store in stores.items():
                t0 = time.perf_counter()
                found = store.search(("users",), query=q, limit=10)
                lat[name].append(time.perf_counter() - t0)
                best[name] = (found[0].namespace, found[0].key) if found else None
            agree += best["InMemoryStore"] == best["SGMemStore"]
        mem.close()
    out: dict[str, Any] = {"items": n_items, "queries": len(queries), "namespaces": n_namespaces, "agree": agree}
    for name in stores:
        out[name] = {
            "p50_ms": statistics.median(lat[name]) * 1e3,
            "p95_ms": _pct(lat[name], 0.95) * 1e3,
            "put_ms": put_s[name] * 1e3,
        }
    out["ratio_p50"] = out["SGMemStore"]["p50_ms"] / out["InMemoryStore"]["p50_ms"]
    out["ratio_p95"] = out["SGMemStore"]["p95_ms"] / out["InMemoryStore"]["p95_ms"]
    return out


TITLE = "LangGraph store: SGMemStore search vs InMemoryStore"

HOW = (
    "Both LangGraph stores hold the same items (one `text` field each, sentences of synthetic conversations) "
    "in 10 namespaces, indexed on `[\"text\"]` with the same MiniLM (`SGMemEmbeddings` for `InMemoryStore`, "
    "the Memory's own for `SGMemStore`, in RAM), and answer the same queries over the `(\"users\",)` prefix, "
    "`limit=10`, alternating store by store so that machine load hits both alike. Ratio = SGMemStore ÷ "
    "InMemoryStore (below 1: faster)."
)


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| items | namespaces | InMemoryStore p50 / p95 ms | SGMemStore p50 / p95 ms | **ratio p50** | ratio p95 "
        "| single put ms (InMemory / SGMem) | same best item |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        a, b = r["InMemoryStore"], r["SGMemStore"]
        lines.append(
            f"| {r['items']:,} | {r['namespaces']} | {a['p50_ms']:.2f} / {a['p95_ms']:.2f} | {b['p50_ms']:.2f} / "
            f"{b['p95_ms']:.2f} | **{r['ratio_p50']:.2f}×** | {r['ratio_p95']:.2f}× | {a['put_ms']:.1f} / "
            f"{b['put_ms']:.1f} | {r['agree']}/{r['queries']} |"
        )
    return "\n".join(lines)


def run_part(ctx: Any) -> dict[str, Any]:
    try:
        import langgraph.store.memory  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"LangGraph is not installed ({exc})"}
    n, q = (60, 5) if ctx.args.smoke else (1000, 100)
    ctx.progress(f"store: {n} items, {q} queries")
    return {"rows": [measure(n, q, 10, False)]}


def render_part(raw: dict[str, Any]) -> str:
    if "skipped" in raw:
        return f"Not run: {raw['skipped']}."
    return HOW + "\n\n" + render(raw["rows"])


def summary_lines(raw: dict[str, Any]) -> list[str]:
    if "skipped" in raw:
        return []
    r = raw["rows"][-1]
    return [f"- LangGraph store search over {r['items']:,} items, p50: `SGMemStore` {r['SGMemStore']['p50_ms']:.1f} ms vs "
            f"`InMemoryStore(index=...)` {r['InMemoryStore']['p50_ms']:.1f} ms, same model — **{r['ratio_p50']:.2f}×**."]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.store", description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, nargs="+", default=[1000])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--namespaces", type=int, default=10)
    ap.add_argument("--durable", action="store_true", help="SGMemStore on disk (default: in RAM, like InMemoryStore)")
    args = ap.parse_args(argv)
    print(render_environment(environment(), command_line("benchmarks.store", argv)))
    print(
        "| items | namespaces | InMemoryStore p50 / p95 ms | SGMemStore p50 / p95 ms | ratio p50 | ratio p95 "
        "| put ms (InMemory / SGMem) | same best item |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.items:
        r = measure(n, args.queries, args.namespaces, args.durable)
        a, b = r["InMemoryStore"], r["SGMemStore"]
        print(
            f"| {n} | {r['namespaces']} | {a['p50_ms']:.2f} / {a['p95_ms']:.2f} | {b['p50_ms']:.2f} / {b['p95_ms']:.2f} "
            f"| {r['ratio_p50']:.2f}x | {r['ratio_p95']:.2f}x | {a['put_ms']:.1f} / {b['put_ms']:.1f} "
            f"| {r['agree']}/{r['queries']} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
