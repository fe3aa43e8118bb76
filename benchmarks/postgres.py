"""PostgreSQL store benchmark: against the embedded store and LangGraph's own ``PostgresStore``.

``python -m benchmarks.postgres --url postgresql://... [--vector-url URL]`` (or the
``postgres`` part of ``python -m benchmarks``; skipped with a message when no
server answers). Measures, in one run:

1. agreement: one LoCoMo conversation ingested into PostgreSQL and into the
   embedded SQLite store; the share of questions whose top-10 turns are the
   same (hybrid mode), evidence recall@10 of each, ingest time and query latency;
2. throughput: 1, 2 and 4 writer processes (each its own scope) plus one reader
   process, messages/s written and searches/s read, on PostgreSQL and on SQLite.
   Stand-in embedder (hashed bag of words): this measures the stores, not MiniLM;
3. the peer: LangGraph's ``PostgresStore`` with a pgvector index (exact, ``flat``)
   on the same turns and questions, through its store interface: evidence
   recall@10 and put/search latency (needs ``--vector-url``, a server with pgvector);
4. dense: on the pgvector server, the dense channel's neighbours found by the
   host (FAISS, ``Config(pg_dense="host")``) or by the server (``"server"``,
   exact ``<=>``): query latency of each and the share of same top-10 turns;
5. refresh: a reader host's next search after another host's add (3 messages):
   its cached index extended with the new rows vs rebuilt from the server.

MiniLM vectors come from the embedding cache (``--cache``), so runs are short.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


class StandIn:
    """Hashed bag-of-words embedder (64 dims): the store's cost, not the model's."""

    name = "bench-hash-bow-64"
    dim = 64

    def embed(self, texts: Any) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in re.findall(r"\w+", t.lower()) or [t]:
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-6)
        return out


def reachable(url: str | None) -> str | None:
    """Why ``url`` cannot be used, or None."""
    if not url:
        return "no server URL (pass --pg-url, or set SGMEM_BENCH_PG_URL / SGMEM_TEST_PG_URL)"
    try:
        import psycopg

        psycopg.connect(url, connect_timeout=5).close()
    except Exception as exc:  # noqa: BLE001
        return f"{url!r} does not answer ({str(exc).strip()[:120]})"
    return None


def _schema(url: str) -> tuple[str, Any]:
    import psycopg

    sys.path.insert(0, str(HERE.parent))
    from tests.pg import with_schema

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{name}"')

    def drop() -> None:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f'DROP SCHEMA "{name}" CASCADE')

    return with_schema(url, name), drop


def _turns(hits: Any, k: int = 10) -> list[str]:
    seen: list[str] = []
    for h in hits:
        for m in h.message_ids:
            if m not in seen:
                seen.append(m)
    return seen[:k]


def agreement(url: str, locomo: Path, embedder: Any, conv: int = 0, max_questions: int | None = None) -> dict[str, Any]:
    import sgmem
    from sgmem.eval.locomo import load_locomo

    c = load_locomo(locomo, conv + 1)[conv]
    qs = c.questions[:max_questions]
    out: dict[str, Any] = {"conversation": c.sample_id, "turns": c.n_turns, "questions": len(qs)}
    pg_url, drop = _schema(url)
    runs: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, target in (("sqlite", Path(tmp) / "store"), ("postgres", pg_url)):
                with sgmem.Memory(target, embedder=embedder) as mem:
                    t0 = time.perf_counter()
                    for key, at, msgs in c.sessions:
                        mem.add(msgs, scope=c.sample_id, thread=key, at=at)
                    ingest = time.perf_counter() - t0
                    mem.search("warm up", scope=c.sample_id, k=10)
                    tops, lat = [], []
                    for q in qs:
                        t1 = time.perf_counter()
                        hits = mem.search(q.question, scope=c.sample_id, k=10)
                        lat.append((time.perf_counter() - t1) * 1e3)
                        tops.append(_turns(hits))
                    runs[name] = {"ingest_s": ingest, "lat": lat, "tops": tops}
    finally:
        drop()
    same = [a == b for a, b in zip(runs["sqlite"]["tops"], runs["postgres"]["tops"], strict=True)]
    same_set = [set(a) == set(b) for a, b in zip(runs["sqlite"]["tops"], runs["postgres"]["tops"], strict=True)]
    out["same_top10"] = sum(same) / len(same)
    out["same_top10_set"] = sum(same_set) / len(same_set)
    for name, r in runs.items():
        out[name] = {
            "ingest_s": r["ingest_s"],
            "p50_ms": statistics.median(r["lat"]),
            "p95_ms": float(np.percentile(r["lat"], 95)),
            "recall10": statistics.mean(len(set(q.evidence) & set(t)) / len(q.evidence) for q, t in zip(qs, r["tops"], strict=True)),
        }
    return out


def _start_together(flags: str, who: str) -> None:
    """Say this process is ready, then wait for the parent's go (process start-up is not timed)."""
    Path(flags, f"ready-{who}").touch()
    while not Path(flags, "go").exists():
        time.sleep(0.005)


def _writer(target: str, w: int, adds: int, flags: str) -> float:
    import sgmem

    with sgmem.Memory(target, embedder=StandIn()) as mem:
        _start_together(flags, f"w{w}")
        t0 = time.perf_counter()
        for i in range(adds):
            mem.add(
                [{"role": "user" if j % 2 == 0 else "assistant", "content": f"writer {w} add {i} part {j} tok{w}x{i}"}
                 for j in range(3)],
                scope=f"writer-{w}", thread="t",
            )
        return time.perf_counter() - t0


def _reader(target: str, stop: str, seconds: float) -> int:
    import sgmem

    n = 0
    with sgmem.Memory(target, embedder=StandIn()) as mem:
        _start_together(str(Path(stop).parent), "reader")
        deadline = time.monotonic() + seconds
        while not Path(stop).exists() and time.monotonic() < deadline:
            for w in range(4):
                mem.search(f"tok{w}x1 writer", scope=f"writer-{w}", k=5)
                n += 1
    return n


def throughput(url: str, writers: tuple[int, ...] = (1, 2, 4), adds: int = 15) -> list[dict[str, Any]]:
    import sgmem

    ctx = multiprocessing.get_context("spawn")
    rows = []
    for backend in ("postgres", "sqlite"):
        for n in writers:
            with tempfile.TemporaryDirectory() as tmp:
                if backend == "postgres":
                    target, drop = _schema(url)
                else:
                    target, drop = str(Path(tmp) / "store"), (lambda: None)
                with sgmem.Memory(target, embedder=StandIn()):
                    pass
                stop = Path(tmp) / "stop"
                try:
                    with ProcessPoolExecutor(max_workers=n + 1, mp_context=ctx) as pool:
                        rf = pool.submit(_reader, target, str(stop), 300.0)
                        wf = [pool.submit(_writer, target, w, adds, tmp) for w in range(n)]
                        while len(list(Path(tmp).glob("ready-*"))) < n + 1:
                            time.sleep(0.01)
                        t0 = time.perf_counter()
                        (Path(tmp) / "go").touch()
                        for f in wf:
                            f.result()
                        wall = time.perf_counter() - t0
                        stop.touch()
                        reads = rf.result()
                finally:
                    drop()
                rows.append({"backend": backend, "writers": n, "messages_per_s": n * adds * 3 / wall,
                             "searches_per_s": reads / wall, "wall_s": wall})
    return rows


def langgraph_peer(vector_url: str, locomo: Path, embedder: Any, conv: int = 0, max_questions: int | None = None) -> dict[str, Any]:
    from langgraph.store.postgres import PostgresStore

    from sgmem.eval.locomo import load_locomo

    c = load_locomo(locomo, conv + 1)[conv]
    qs = c.questions[:max_questions]
    url, drop = _schema(vector_url)

    def embed(texts: list[str]) -> list[list[float]]:
        return embedder.embed(list(texts)).tolist()

    index = {"dims": int(embedder.dim), "embed": embed, "fields": ["text"],
             "ann_index_config": {"kind": "flat"}, "distance_type": "cosine"}
    try:
        with PostgresStore.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
            store.setup()
            ns = ("locomo", c.sample_id)
            put, lat, rec = [], [], []
            texts = [f"{m['name']}: {m['content']}" for _, _, msgs in c.sessions for m in msgs]
            for i in range(0, len(texts), 64):  # embed ahead (cached): put latency is the store's
                embedder.embed(texts[i : i + 64])
            embedder.embed([q.question for q in qs])
            for _, _, msgs in c.sessions:
                for m in msgs:
                    t0 = time.perf_counter()
                    store.put(ns, m["id"], {"text": f"{m['name']}: {m['content']}"})
                    put.append((time.perf_counter() - t0) * 1e3)
            for q in qs:
                t0 = time.perf_counter()
                items = store.search(ns, query=q.question, limit=10)
                lat.append((time.perf_counter() - t0) * 1e3)
                rec.append(len(set(q.evidence) & {i.key for i in items}) / len(q.evidence))
    finally:
        drop()
    return {"put_p50_ms": statistics.median(put), "search_p50_ms": statistics.median(lat),
            "search_p95_ms": float(np.percentile(lat, 95)), "recall10": statistics.mean(rec), "questions": len(qs)}


def dense_paths(vector_url: str, locomo: Path, embedder: Any, conv: int = 0, max_questions: int | None = None) -> dict[str, Any]:
    """Dense neighbours by the host's FAISS cache vs by the server (pgvector ``<=>``): latency and agreement."""
    import sgmem
    from sgmem.eval.locomo import load_locomo

    c = load_locomo(locomo, conv + 1)[conv]
    qs = c.questions[:max_questions]
    url, drop = _schema(vector_url)
    out: dict[str, Any] = {"conversation": c.sample_id, "questions": len(qs)}
    try:
        with sgmem.Memory(url, embedder=embedder) as mem:
            for key, at, msgs in c.sessions:
                mem.add(msgs, scope=c.sample_id, thread=key, at=at)
            out["sentences"] = mem._index(mem._store.scope_id(c.sample_id)).n_sentences  # type: ignore[arg-type]
        tops: dict[str, list[list[str]]] = {}
        for dense in ("host", "server"):
            with sgmem.Memory(url, embedder=embedder, config=sgmem.Config(pg_dense=dense)) as mem:
                mem.search("warm up", scope=c.sample_id, k=10)
                lat, tops[dense] = [], []
                for q in qs:
                    t0 = time.perf_counter()
                    hits = mem.search(q.question, scope=c.sample_id, k=10)
                    lat.append((time.perf_counter() - t0) * 1e3)
                    tops[dense].append(_turns(hits))
                out[dense] = {"p50_ms": statistics.median(lat), "p95_ms": float(np.percentile(lat, 95))}
    finally:
        drop()
    out["same_top10"] = statistics.mean(a == b for a, b in zip(tops["host"], tops["server"], strict=True))
    return out


def refresh_cost(url: str, rounds: int = 10) -> dict[str, Any]:
    """A reader's next search after another host's add: incremental refresh vs a rebuilt index (same run)."""
    import sgmem

    target, drop = _schema(url)
    emb = StandIn()
    lines = [f"note {i}: topic {i % 37} with item {i % 11} and place {i % 5}" for i in range(1500)]
    try:
        with sgmem.Memory(target, embedder=emb) as writer, sgmem.Memory(target, embedder=emb) as reader:
            for i in range(0, len(lines), 50):
                writer.add([{"role": "user", "content": t} for t in lines[i : i + 50]], scope="s", thread=f"t{i}")
            reader.search("topic 3", scope="s", k=10)
            sid = reader._store.scope_id("s")
            times: dict[str, list[float]] = {"incremental": [], "rebuild": []}
            for r in range(rounds):
                for how in ("incremental", "rebuild"):
                    msgs = [{"role": "user", "content": f"new {how} {r} {j} topic {j}"} for j in range(3)]
                    writer.add(msgs, scope="s", thread="new")
                    if how == "rebuild":
                        reader._indexes.pop(sid)
                    t0 = time.perf_counter()
                    reader.search("topic 3", scope="s", k=10)
                    times[how].append((time.perf_counter() - t0) * 1e3)
            turns = reader._index(sid).n_turns  # type: ignore[arg-type]
    finally:
        drop()
    return {"turns": turns, **{k: statistics.median(v) for k, v in times.items()}}


def render(
    agree: dict[str, Any] | None,
    tput: list[dict[str, Any]] | None,
    peer: dict[str, Any] | None,
    dense: dict[str, Any] | None = None,
    refresh: dict[str, Any] | None = None,
) -> str:
    lines: list[str] = []
    if agree:
        s, p = agree["sqlite"], agree["postgres"]
        lines += [
            f"LoCoMo {agree['conversation']} ({agree['turns']} turns, {agree['questions']} questions, MiniLM, hybrid): "
            f"**same top-10 turns for {agree['same_top10']:.1%} of questions** (same set: {agree['same_top10_set']:.1%}).",
            "",
            "| store | ingest s | query p50 ms | query p95 ms | evidence recall@10 |",
            "|---|---|---|---|---|",
            f"| embedded SQLite | {s['ingest_s']:.1f} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {s['recall10']:.3f} |",
            f"| PostgreSQL | {p['ingest_s']:.1f} ({p['ingest_s'] / s['ingest_s']:.2f}x) | {p['p50_ms']:.1f} "
            f"({p['p50_ms'] / s['p50_ms']:.2f}x) | {p['p95_ms']:.1f} | {p['recall10']:.3f} |",
            "",
        ]
    if peer:
        lines += [
            f"LangGraph `PostgresStore` (pgvector, exact `flat` index, same MiniLM vectors, turns as items): "
            f"evidence recall@10 **{peer['recall10']:.3f}**, put p50 {peer['put_p50_ms']:.1f} ms (vectors cached), "
            f"search p50 {peer['search_p50_ms']:.1f} ms / p95 {peer['search_p95_ms']:.1f} ms.",
            "",
        ]
    if dense:
        h, v = dense["host"], dense["server"]
        lines += [
            f"Dense neighbours on the pgvector server ({dense['conversation']}, {dense['sentences']} sentences, "
            f"{dense['questions']} questions, hybrid): by the host's FAISS cache p50 {h['p50_ms']:.1f} ms / p95 "
            f"{h['p95_ms']:.1f} ms; by the server (exact `<=>`, `pg_dense=\"server\"`) p50 {v['p50_ms']:.1f} ms "
            f"({v['p50_ms'] / h['p50_ms']:.2f}x) / p95 {v['p95_ms']:.1f} ms; same top-10 turns for "
            f"**{dense['same_top10']:.1%}** of questions.",
            "",
        ]
    if refresh:
        lines += [
            f"A reader's next search after another host's add of 3 messages ({refresh['turns']} turns, stand-in "
            f"embedder): cached index extended **{refresh['incremental']:.1f} ms** vs rebuilt from the server "
            f"{refresh['rebuild']:.1f} ms ({refresh['rebuild'] / refresh['incremental']:.1f}x), medians.",
            "",
        ]
    if tput:
        lines += ["| store | writer processes | messages/s written | searches/s (1 reader) |", "|---|---|---|---|"]
        lines += [f"| {r['backend']} | {r['writers']} | {r['messages_per_s']:.1f} | {r['searches_per_s']:.1f} |" for r in tput]
        lines += ["", "Throughput uses a hashed bag-of-words stand-in embedder (store cost, not MiniLM's)."]
    return "\n".join(lines)


TITLE = "PostgreSQL store: many hosts, one truth"


def run_part(ctx: Any) -> dict[str, Any]:
    """Agreement with the embedded store, the LangGraph peer, dense paths, refresh cost, throughput; or why not."""
    smoke = ctx.args.smoke
    url, vector_url, locomo = ctx.args.pg_url, ctx.args.pgvector_url, ctx.locomo
    why = reachable(url)
    if why:
        ctx.progress(f"PostgreSQL benchmark skipped: {why}")
        return {"skipped": why}
    assert url is not None
    max_q = 10 if smoke else ctx.args.max_questions
    raw: dict[str, Any] = {}
    raw["agreement"] = agreement(url, locomo, ctx.embedder(), 0, max_q) if locomo.exists() else None
    vwhy = reachable(vector_url)
    ok = not vwhy and locomo.exists()
    raw["peer"] = langgraph_peer(str(vector_url), locomo, ctx.embedder(), 0, max_q) if ok else None
    raw["dense"] = dense_paths(str(vector_url), locomo, ctx.embedder(), 0, max_q) if ok else None
    raw["throughput"] = throughput(url, (1, 2) if smoke else (1, 2, 4), adds=2 if smoke else 20)
    raw["refresh"] = refresh_cost(url, rounds=3)
    raw["peer_skipped"] = vwhy
    return raw


def render_part(raw: dict[str, Any]) -> str:
    if "skipped" in raw:
        return f"Not run: {raw['skipped']}."
    text = render(raw["agreement"], raw["throughput"], raw["peer"], raw["dense"], raw["refresh"])
    why = raw.get("peer_skipped")
    if why:
        why = "no server with pgvector was given" if why.startswith("no server URL") else why
        text += (f"\n\nLangGraph `PostgresStore` (the peer) and the server-side dense path not run: {why} (they "
                 "need pgvector: `--pgvector-url` or `SGMEM_BENCH_PGVECTOR_URL`).")
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.postgres", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--url", default=os.environ.get("SGMEM_BENCH_PG_URL") or os.environ.get("SGMEM_TEST_PG_URL"))
    p.add_argument("--vector-url", default=os.environ.get("SGMEM_BENCH_PGVECTOR_URL"),
                   help="a server with pgvector for LangGraph's PostgresStore")
    p.add_argument("--locomo", default=None, help="LoCoMo JSON file (default: as benchmarks.quality finds it)")
    p.add_argument("--cache", default=str(HERE / "out" / "cache"))
    p.add_argument("--conversation", type=int, default=0)
    p.add_argument("--max-questions", type=int, default=None)
    p.add_argument("--adds", type=int, default=15, help="throughput: adds (3 messages each) per writer")
    p.add_argument("--skip", nargs="*", default=[], choices=["agreement", "throughput", "langgraph", "dense", "refresh"])
    args = p.parse_args(argv)
    if args.locomo is None:
        from benchmarks.quality import default_locomo_path

        args.locomo = str(default_locomo_path())
    why = reachable(args.url)
    if why:
        print(f"PostgreSQL benchmark skipped: {why}")
        return 0
    from sgmem.embed import default_embedder
    from sgmem.eval import CachingEmbedder

    emb = CachingEmbedder(default_embedder(), args.cache)
    agree = tput = peer = dense = refresh = None
    if "agreement" not in args.skip:
        agree = agreement(args.url, Path(args.locomo), emb, args.conversation, args.max_questions)
    if "langgraph" not in args.skip:
        vwhy = reachable(args.vector_url)
        if vwhy:
            print(f"LangGraph PostgresStore peer skipped: {vwhy}")
        else:
            peer = langgraph_peer(args.vector_url, Path(args.locomo), emb, args.conversation, args.max_questions)
    if "dense" not in args.skip:
        vwhy = reachable(args.vector_url)
        if vwhy:
            print(f"Dense-path comparison skipped: {vwhy}")
        else:
            dense = dense_paths(args.vector_url, Path(args.locomo), emb, args.conversation, args.max_questions)
    emb.save()
    if "refresh" not in args.skip:
        refresh = refresh_cost(args.url)
    if "throughput" not in args.skip:
        tput = throughput(args.url, adds=args.adds)
    print(render(agree, tput, peer, dense, refresh))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
