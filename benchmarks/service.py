"""Many hosts as a service: one PostgreSQL server against the embedded store, each host serving many scopes.

``python -m benchmarks --only service`` (``--pg-url``, or ``SGMEM_BENCH_PG_URL`` / ``SGMEM_TEST_PG_URL``;
the PostgreSQL rows are skipped with a message when no server answers). For each store — a PostgreSQL
server reached over loopback (a fresh schema) and the embedded SQLite store on this machine's disk — and
for 1, 2 and 4 host processes, every run bounded in operations and in seconds:

1. capacity: each host adds one user turn and one assistant reply at a time, back to back, to its own
   scopes: messages per second written, per host, and the add latency;
2. service: the hosts serve one pool of scopes (users routed to any host), each at a fixed offered rate
   of adds and searches (one add, two searches); latency is counted from each operation's scheduled time
   (queueing included): add and search p50/p95, and the first search of a scope the host holds no index
   of (a cold scope) apart from the others. The same schedule with the adds left out is the idle baseline
   of the search p95;
3. a cold scope of 10,000 sentences: its first query on a host that holds nothing of it, against the same
   query once its index is in memory; on PostgreSQL from the host's own saved index
   (``Config.pg_cache_dir``) and from the server alone; on the embedded store from its saved index;
4. part by part: where an add's and a search's time goes (the add's stages, ``AddResult.timings_ms``),
   and the round trips to the server and statements each costs, with the PostgreSQL pipeline on and off.

The store's cost is measured with a stand-in embedder (a hashed bag of words, 384 dimensions, no model:
``benchmarks.soak.HashingEmbedder``); the service run is repeated with MiniLM (a user's cost) at a lower
rate. Processes start together (their start-up is not timed); the load average is recorded with each run.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TITLE", "main", "render_part", "run_part", "summary_lines"]

HERE = Path(__file__).resolve().parent
TITLE = "Many hosts as a service: PostgreSQL against the embedded store"
HOSTS = (1, 2, 4)
TOPICS = ["hiking", "cello", "sourdough", "marathon", "chess", "pottery", "sailing", "gardening", "jazz", "kayaking"]


# ---------------------------------------------------------------------------------------------- workload
def _embedder(kind: str) -> Any:
    if kind == "minilm":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sgmem.embed import default_embedder

        emb = default_embedder()
        emb.embed(["load the model before timing"])
        return emb
    from benchmarks.soak import HashingEmbedder

    return HashingEmbedder(384)


def _exchange(scope: int, i: int) -> list[dict[str, str]]:
    """One user turn and the assistant's reply, specific to the scope (user) and the turn."""
    topic = TOPICS[(scope + i) % len(TOPICS)]
    return [
        {"role": "user", "content": f"I'm user{scope}. On day {i} I went {topic} with Sam{(scope * 7 + i) % 97} "
                                    f"near city{(scope + 3 * i) % 53}."},
        {"role": "assistant", "content": f"That sounds fun, user{scope}! How was {topic} on day {i}?"},
    ]  # fmt: skip


def _question(scope: int, i: int) -> str:
    return f"Where did I go {TOPICS[(scope + i) % len(TOPICS)]} with Sam{(scope * 7 + i) % 97}?"


def _open(target: str, kind: str, config: dict[str, Any]) -> Any:
    import sgmem

    return sgmem.Memory(target, embedder=_embedder(kind), config=sgmem.Config(**config))


def _fill(target: str, kind: str, scopes: int, per_scope: int) -> None:
    """The scopes a service run serves, each with ``per_scope`` exchanges already (not timed)."""
    with _open(target, kind, {}) as mem:
        for s in range(scopes):
            for i in range(per_scope):
                mem.add(_exchange(s, i), scope=f"user-{s}", thread="chat")


def _ready(flags: str, who: str) -> None:
    """Say this process is ready, then wait for the parent's go (process start-up is not timed)."""
    Path(flags, f"ready-{who}").touch()
    while not Path(flags, "go").exists():
        time.sleep(0.002)


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q * 100)) if xs else float("nan")


# ------------------------------------------------------------------------------------------- host bodies
def _capacity_host(spec: dict[str, Any]) -> dict[str, Any]:
    """Closed loop: adds back to back to this host's own scopes, until ``adds`` or ``seconds``."""
    h, n, scopes = spec["host"], spec["hosts"], spec["scopes"]
    own = [s for s in range(scopes) if s % n == h]
    lat: list[float] = []
    with _open(spec["target"], spec["embedder"], spec.get("config", {})) as mem:
        _ready(spec["flags"], f"c{h}")
        t0 = time.perf_counter()
        for i in range(spec["adds"]):
            if time.perf_counter() - t0 > spec["seconds"]:
                break
            s = own[i % len(own)]
            t = time.perf_counter()
            mem.add(_exchange(s, 1000 + i), scope=f"user-{s}", thread="chat")
            lat.append((time.perf_counter() - t) * 1e3)
        wall = time.perf_counter() - t0
    return {"messages": 2 * len(lat), "wall_s": wall, "add_ms": lat}


def _service_host(spec: dict[str, Any]) -> dict[str, Any]:
    """Open loop: one add and two searches per period at the offered rate, on scopes drawn from the pool;
    ``adds=False`` keeps the searches' schedule and leaves the adds out (the idle baseline)."""
    h, rate = spec["host"], spec["rate"]
    rng = random.Random(1000 + h)
    ops = [("add" if i % 3 == 0 else "search", rng.randrange(spec["scopes"])) for i in range(spec["ops"])]
    out: dict[str, list[float]] = {"add_ms": [], "search_ms": [], "cold_ms": [], "late_ms": []}
    held: set[int] = set()  # scopes this host has an index of
    with _open(spec["target"], spec["embedder"], spec.get("config", {})) as mem:
        mem.search("warm up", scope="warm-up", k=5)  # libraries a first search loads
        _ready(spec["flags"], f"s{h}")
        t0 = time.perf_counter()
        for i, (op, s) in enumerate(ops):
            due = t0 + i / rate
            if due - t0 > spec["seconds"]:
                break
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if op == "add":
                if spec["adds"]:
                    mem.add(_exchange(s, 5000 + h * 100_000 + i), scope=f"user-{s}", thread="chat")
                    out["add_ms"].append((time.perf_counter() - due) * 1e3)
                    held.add(s)
                continue
            mem.search(_question(s, i), scope=f"user-{s}", k=5)
            ms = (time.perf_counter() - due) * 1e3
            out["cold_ms" if s not in held else "search_ms"].append(ms)
            held.add(s)
        out["wall_s"] = [time.perf_counter() - t0]
    return out


def _run_hosts(body: Any, specs: list[dict[str, Any]], flags: str) -> tuple[list[dict[str, Any]], float]:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=len(specs), mp_context=ctx) as pool:
        futures = [pool.submit(body, spec) for spec in specs]
        while len(list(Path(flags).glob("ready-*"))) < len(specs):
            if any(f.done() for f in futures):  # a host failed before it was ready
                for f in futures:
                    if f.done():
                        f.result()
            time.sleep(0.01)
        t0 = time.perf_counter()
        Path(flags, "go").touch()
        results = [f.result() for f in futures]
        return results, time.perf_counter() - t0


# ----------------------------------------------------------------------------------------------- stores
class _Store:
    """A fresh store for one run: a schema on the PostgreSQL server, or a directory (removed afterwards)."""

    def __init__(self, backend: str, pg_url: str | None, scratch: Path) -> None:
        self.backend = backend
        self._tmp = tempfile.TemporaryDirectory(dir=scratch, prefix="service-")
        if backend == "postgres":
            import psycopg

            sys.path.insert(0, str(HERE.parent))
            from tests.pg import with_schema

            self.schema = f"svc_{uuid.uuid4().hex[:10]}"
            with psycopg.connect(str(pg_url), autocommit=True) as c:
                c.execute(f'CREATE SCHEMA "{self.schema}"')
            self.url = str(pg_url)
            self.target = with_schema(self.url, self.schema)
        else:
            self.target = str(Path(self._tmp.name) / "store")

    @property
    def cache_dir(self) -> str:
        return str(Path(self._tmp.name) / "host-cache")

    def close(self) -> None:
        if self.backend == "postgres":
            import psycopg

            with psycopg.connect(self.url, autocommit=True) as c:
                c.execute(f'DROP SCHEMA "{self.schema}" CASCADE')
        self._tmp.cleanup()


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def capacity(backend: str, pg_url: str | None, scratch: Path, hosts: int, adds: int, seconds: float) -> dict[str, Any]:
    """Phase 1 on a fresh store: ``hosts`` processes adding back to back to their own scopes."""
    store = _Store(backend, pg_url, scratch)
    try:
        scopes = 8 * hosts
        with _open(store.target, "hash", {}):  # the schema (or database) exists before the hosts race
            pass
        flags = tempfile.mkdtemp(dir=scratch)
        load = _load()
        specs = [
            {"target": store.target, "embedder": "hash", "host": h, "hosts": hosts, "scopes": scopes,
             "adds": adds, "seconds": seconds, "flags": flags}
            for h in range(hosts)
        ]  # fmt: skip
        results, wall = _run_hosts(_capacity_host, specs, flags)
    finally:
        store.close()
    msgs = sum(r["messages"] for r in results)
    lat = [x for r in results for x in r["add_ms"]]
    return {
        "backend": backend, "hosts": hosts, "messages": msgs, "wall_s": wall, "load": load,
        "messages_per_s": msgs / wall, "per_host": msgs / wall / hosts,
        "add_p50_ms": _pct(lat, 0.5), "add_p95_ms": _pct(lat, 0.95),
    }  # fmt: skip


def service(
    backend: str,
    pg_url: str | None,
    scratch: Path,
    hosts: int,
    *,
    embedder: str = "hash",
    rate: float = 12.0,
    seconds: float = 12.0,
    scopes: int = 40,
    per_scope: int = 6,
) -> dict[str, Any]:
    """Phase 2 on a fresh store: the mixed run, then the idle one (the same schedule without its adds)."""
    store = _Store(backend, pg_url, scratch)
    out: dict[str, Any] = {"backend": backend, "hosts": hosts, "embedder": embedder, "rate_per_host": rate}
    try:
        _fill(store.target, embedder, scopes, per_scope)
        with _open(store.target, embedder, {}) as mem:
            mem.add([{"role": "user", "content": "A warm-up note."}], scope="warm-up", thread="t")
        for name, with_adds in (("mixed", True), ("idle", False)):
            flags = tempfile.mkdtemp(dir=scratch)
            out[f"{name}_load"] = _load()
            specs = [
                {"target": store.target, "embedder": embedder, "host": h, "scopes": scopes, "rate": rate,
                 "ops": int(rate * seconds) + 1, "seconds": seconds, "adds": with_adds, "flags": flags}
                for h in range(hosts)
            ]  # fmt: skip
            results, wall = _run_hosts(_service_host, specs, flags)
            for key in ("add_ms", "search_ms", "cold_ms"):
                xs = [x for r in results for x in r[key]]
                out[f"{name}_{key[:-3]}_n"] = len(xs)
                out[f"{name}_{key[:-3]}_p50"], out[f"{name}_{key[:-3]}_p95"] = _pct(xs, 0.5), _pct(xs, 0.95)
            adds = out[f"{name}_add_n"]
            out[f"{name}_messages_per_s"] = 2 * adds / wall
    finally:
        store.close()
    return out


# ----------------------------------------------------------------------------------------------- cold
def _build_big(target: str, sentences: int, config: dict[str, Any]) -> int:
    from benchmarks.synth import conversation

    n = 0
    with _open(target, "hash", config) as mem:
        for thread, msgs in conversation(sentences, seed=7):
            n += mem.add(msgs, scope="big", thread=thread).sentences
        mem.add([{"role": "user", "content": "A small scope to warm the libraries up."}], scope="small", thread="t")
    return n


def _cold_host(spec: dict[str, Any]) -> dict[str, Any]:
    """First query of the big scope on a host that holds nothing of it (``reps`` times, dropped from memory
    in between), against the same query with its index in memory."""
    import sgmem

    q = "Where did I go with Ana?"
    cold, warm = [], []
    with _open(spec["target"], "hash", spec["config"]) as mem:
        for mode in (m for m in sgmem.MODES if m != "entity"):
            mem.search("warm up", scope="small", mode=mode)  # the libraries a first search loads
        for _ in range(spec["reps"]):
            mem._caches.clear()  # as after its eviction (its files, if any, were saved when it was built)
            t = time.perf_counter()
            mem.search(q, scope="big", k=10)
            cold.append((time.perf_counter() - t) * 1e3)
            for _ in range(5):
                t = time.perf_counter()
                mem.search(q, scope="big", k=10)
                warm.append((time.perf_counter() - t) * 1e3)
    return {"cold_ms": cold, "warm_ms": warm}


def cold_scope(backend: str, pg_url: str | None, scratch: Path, sentences: int, reps: int) -> list[dict[str, Any]]:
    """Phase 3: a ``sentences``-sentence scope built (and its index saved) by one host, queried cold by another."""
    store = _Store(backend, pg_url, scratch)
    rows = []
    try:
        files = {"pg_cache_dir": store.cache_dir} if backend == "postgres" else {}
        built = _build_big(store.target, sentences, files)
        variants = [("saved index", files)] + ([("server only", {})] if backend == "postgres" else [])
        for name, config in variants:
            load = _load()
            (res,), _ = _run_hosts_plain(_cold_host, {"target": store.target, "config": config, "reps": reps})
            cold, warm = statistics.median(res["cold_ms"]), statistics.median(res["warm_ms"])
            rows.append({"backend": backend, "source": name, "sentences": built, "cold_ms": cold, "warm_ms": warm,
                         "ratio": cold / warm, "cold_all_ms": res["cold_ms"], "load": load})  # fmt: skip
    finally:
        store.close()
    return rows


def _run_hosts_plain(body: Any, spec: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        t0 = time.perf_counter()
        return [pool.submit(body, spec).result()], time.perf_counter() - t0


# ------------------------------------------------------------------------------------------ part by part
def _count_round_trips() -> dict[str, int]:
    """Count psycopg's round trips (a statement outside a pipeline; a pipeline's flush or sync) and statements."""
    import psycopg
    from psycopg import _pipeline, _pipeline_base

    counts = {"rt": 0, "statements": 0}
    fetch, sync, exit_ = _pipeline_base.BasePipeline._fetch_gen, _pipeline.Pipeline.sync, _pipeline.Pipeline.__exit__
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def _fetch_gen(self: Any, *, flush: bool) -> Any:
        if flush and self.result_queue:
            counts["rt"] += 1
        return (yield from fetch(self, flush=flush))

    def _sync(self: Any) -> Any:
        counts["rt"] += 1
        return sync(self)

    def _exit(self: Any, *a: Any) -> Any:
        counts["rt"] += 1
        return exit_(self, *a)

    def _execute(self: Any, *a: Any, **k: Any) -> Any:
        counts["statements"] += 1
        counts["rt"] += self._conn._pipeline is None
        return execute(self, *a, **k)

    def _executemany(self: Any, *a: Any, **k: Any) -> Any:
        counts["statements"] += 1
        return executemany(self, *a, **k)  # outside a pipeline psycopg runs it in one (counted there)

    _pipeline_base.BasePipeline._fetch_gen = _fetch_gen  # type: ignore[method-assign]
    _pipeline.Pipeline.sync, _pipeline.Pipeline.__exit__ = _sync, _exit  # type: ignore[method-assign]
    psycopg.Cursor.execute, psycopg.Cursor.executemany = _execute, _executemany  # type: ignore[method-assign]
    return counts


def _parts_host(spec: dict[str, Any]) -> dict[str, Any]:
    """One host: ``n`` adds and searches on warm scopes (each variant in turn, add by add, so that load drifting
    during the run hits them alike); stages, round trips and statements of each."""
    counts = _count_round_trips() if spec["backend"] == "postgres" else None
    variants = spec["variants"]
    stages: dict[str, dict[str, list[float]]] = {label: {} for label, _ in variants}
    tally: dict[str, dict[str, float]] = {label: {"add_rt": 0, "add_st": 0, "search_rt": 0} for label, _ in variants}
    with _open(spec["target"], "hash", {}) as mem:
        for s in range(10):  # every scope's index and state in memory first: the adds below are warm
            mem.search(_question(s, 0), scope=f"user-{s}", k=5)
            mem.add(_exchange(s, 8000), scope=f"user-{s}", thread="chat")
        for i in range(spec["n"]):
            s = i % 10
            for label, pipelined in variants:
                if counts is not None:
                    mem._store._pipelined = pipelined is not False
                    # the commit's flush to disk apart: not sgmem's setting, the share of the add's time it takes
                    mem._store._raw.execute(f"SET synchronous_commit = {'off' if pipelined == 'no flush' else 'on'}")
                    counts.update(rt=0, statements=0)
                r = mem.add(_exchange(s, 9000 + 10 * i + len(label)), scope=f"user-{s}", thread="chat")
                for k, v in r.timings_ms.items():
                    stages[label].setdefault(k, []).append(v)
                if counts is not None:
                    tally[label]["add_rt"] += counts["rt"]
                    tally[label]["add_st"] += counts["statements"]
                    counts.update(rt=0, statements=0)
                t = time.perf_counter()
                mem.search(_question(s, i), scope=f"user-{s}", k=5)
                stages[label].setdefault("search", []).append((time.perf_counter() - t) * 1e3)
                if counts is not None:
                    tally[label]["search_rt"] += counts["rt"]
    n = spec["n"]
    out: dict[str, Any] = {}
    for label, _ in variants:
        t = tally[label]
        out[label] = {
            **{f"{k}_ms": statistics.median(v) for k, v in stages[label].items()},
            **({"add_round_trips": t["add_rt"] / n, "add_statements": t["add_st"] / n,
                "search_round_trips": t["search_rt"] / n} if counts is not None else {}),
        }  # fmt: skip
    return out


def parts(backend: str, pg_url: str | None, scratch: Path, n: int) -> dict[str, Any]:
    """Phase 4 on a fresh store of ten warm scopes."""
    store = _Store(backend, pg_url, scratch)
    try:
        _fill(store.target, "hash", 10, 6)
        variants: list[tuple[str, Any]] = (
            [
                ("pipelined", True),
                ("one round trip per statement", False),
                ("pipelined, commit not flushed (synchronous_commit = off)", "no flush"),
            ]
            if backend == "postgres"
            else [("embedded", True)]
        )
        load = _load()
        (res,), _ = _run_hosts_plain(_parts_host, {"target": store.target, "backend": backend, "n": n,
                                                   "variants": variants})  # fmt: skip
    finally:
        store.close()
    return {"backend": backend, "load": load, **res}


# ------------------------------------------------------------------------------------------------ the part
def _reachable(url: str | None) -> str | None:
    from benchmarks.postgres import reachable

    return reachable(url)


def measure(
    pg_url: str | None, scratch: Path, *, smoke: bool = False, progress: Any = print
) -> dict[str, Any]:
    """Every phase on both stores (PostgreSQL only when ``pg_url`` answers)."""
    why = _reachable(pg_url)
    backends = ["sqlite"] if why else ["postgres", "sqlite"]
    hosts = (1,) if smoke else HOSTS  # a smoke run (pytest -m benchmark): every phase once, at toy sizes
    raw: dict[str, Any] = {"pg_skipped": why, "capacity": [], "service": [], "minilm": [], "cold": [], "parts": []}
    for n in hosts:
        # twice, the stores in turn and then the other way round, so that load drifting during the run weighs
        # on both alike (the table gives the mean of the two)
        for rep, order in enumerate((backends,) if smoke else (backends, backends[::-1])):
            for b in order:
                progress(f"service: capacity, {b}, {n} host(s), run {rep + 1} of 2")
                row = capacity(b, pg_url, scratch, n, adds=8 if smoke else 300, seconds=3 if smoke else 15)
                raw["capacity"].append({**row, "rep": rep})
    for n in hosts:
        for b in backends:
            progress(f"service: mixed and idle, {b}, {n} host(s)")
            raw["service"].append(service(b, pg_url, scratch, n, rate=6 if smoke else 12, seconds=2 if smoke else 12,
                                          scopes=8 if smoke else 40))  # fmt: skip
    for b in backends:
        progress(f"service: a cold scope, {b}")
        raw["cold"] += cold_scope(b, pg_url, scratch, 300 if smoke else 10_000, 2 if smoke else 5)
        progress(f"service: part by part, {b}")
        raw["parts"].append(parts(b, pg_url, scratch, 3 if smoke else 60))
    for n in (1,) if smoke else HOSTS:
        for b in backends[-1:] if smoke else backends:
            progress(f"service: MiniLM, {b}, {n} host(s)")
            raw["minilm"].append(service(b, pg_url, scratch, n, embedder="minilm", rate=3, seconds=2 if smoke else 10,
                                         scopes=6 if smoke else 20, per_scope=2 if smoke else 4))  # fmt: skip
    return raw


def run_part(ctx: Any) -> dict[str, Any]:
    """The service benchmark (PostgreSQL rows only when ``--pg-url`` answers)."""
    scratch = Path(ctx.out) / "service"
    scratch.mkdir(parents=True, exist_ok=True)
    return measure(ctx.args.pg_url, scratch, smoke=ctx.args.smoke, progress=ctx.progress)


from benchmarks.service_report import render_part, summary_lines  # noqa: E402  (the tables)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.service", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--pg-url", default=os.environ.get("SGMEM_BENCH_PG_URL") or os.environ.get("SGMEM_TEST_PG_URL"))
    p.add_argument("--scratch", default=str(HERE / "out" / "service"))
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args(argv)
    Path(args.scratch).mkdir(parents=True, exist_ok=True)
    raw = measure(args.pg_url, Path(args.scratch), smoke=args.smoke, progress=lambda s: print(s, file=sys.stderr))
    print(render_part(raw))
    return 0


if __name__ == "__main__":
    sys.exit(main())
