"""Engine cost of an add, by stage, at a given scope size: for before/after comparisons of the write path.

A store of ``--size`` sentences is built once (LoCoMo dev sessions, speakers
renamed per pass as in :mod:`benchmarks.gpu`, or :mod:`benchmarks.synth`
conversations), with the hashing stand-in embedder of :mod:`benchmarks.scale`
(its time is subtracted). Then, ``--repeats`` times, a copy of the store is
opened in a fresh process and the next ``--adds`` sessions are added one
``Memory.add`` each; per add the minimum over the repeats of the engine's CPU
time is kept (robust to other jobs on a shared machine), and of each stage's
wall time, and of the whole add's wall time (the embedder's excluded: an
add's kNN search and HNSW insertion run on a worker thread while it
writes, so its wait is less than the process's CPU time). Compare two
checkouts by running the same command with each on ``PYTHONPATH`` and the
same ``--workdir`` (the store is built once, by the first)::

    PYTHONPATH=/path/to/main python -m benchmarks.write_path --size 50000 --workdir /tmp/wp
    PYTHONPATH=. python -m benchmarks.write_path --size 50000 --workdir /tmp/wp

``--embed-us N`` stands in for an accelerator's embedding latency: the
stand-in embedder also sleeps N µs per text it embeds, holding no lock (as
a process waiting on a GPU), and the report adds ``ingest ÷ per-add
embedding`` — the embedder's time over the adds' whole wall time, the
ratio issue 14's GPU target is set on. What the engine does off the
calling thread (an add's HNSW insertion, finished while the next add
embeds) shows there and not in the engine-only figures. It simulates the
wait only: a real GPU embedder also spends CPU on tokenising and launching
kernels, so this is an upper bound of what the overlap gains on a GPU host.

``--behind`` (with ``--embed-us``) also times the bound of a write-behind of
today's engine, in processes of its own alternating with the sequential
ones: the caller only segments an add and embeds its texts, and one worker
thread plans and writes the adds in order (what a ``Memory.add`` that
returned once the raw messages were stored would leave to the background).
The adds' embedding then overlaps the engine's work on the previous ones,
so ingest ÷ per-add embedding (here the caller's embedding of the adds'
texts over the wall time) is bounded by the embedding's time over the
worker's, whatever the embedder: the figure says how far taking the engine
off the add's path can go before the engine itself must be faster. The
sequential figure above counts the derived memory's embeddings as
embedding; this one counts them as the worker's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main"]

DATA = "/work/shared/data/locomo/locomo-dev.json"


def _workload(kind: str, data: str, sentences: int) -> list[tuple[str, list[dict[str, Any]]]]:
    if kind == "synth":
        from benchmarks.synth import conversation

        return list(conversation(sentences, seed=1))
    from benchmarks.gpu import _adds

    return _adds(data, sentences)[0]


def _build(store: Path, kind: str, data: str, size: int) -> None:
    import sgmem
    from benchmarks.scale import _Timed

    adds = _workload(kind, data, size + 10_000)
    n = done = 0
    with sgmem.Memory(store, embedder=_Timed()) as mem:
        for thread, msgs in adds:
            if n >= size:
                break
            n += mem.add(msgs, scope="s", thread=thread).sentences
            done += 1
    (store / "adds.json").write_text(json.dumps({"adds": done, "sentences": n}))


def _time(
    store: Path, kind: str, data: str, size: int, n_adds: int, embed_us: float = 0.0, behind: bool = False
) -> dict[str, Any]:
    """One repeat, in this process: the engine ms of each of the next ``n_adds`` adds (``behind``: the
    write-behind bound's whole wall time and embedder time instead, :func:`_behind`)."""
    import sgmem
    from benchmarks.scale import STAGES, _stages, _Timed

    done = json.loads((store / "adds.json").read_text())["adds"]
    todo = _workload(kind, data, size + 10_000)[done : done + n_adds]
    emb = _Timed()
    cpu_in_embedder = [0.0]
    embed = emb.embed

    def timed_embed(texts: Any) -> np.ndarray:
        c0 = time.process_time()
        try:
            out = embed(texts)
            if embed_us > 0:  # an accelerator's latency: the caller waits without holding the GIL
                s0 = time.perf_counter()
                time.sleep(embed_us * 1e-6 * len(texts))
                emb.seconds += time.perf_counter() - s0
            return out
        finally:
            cpu_in_embedder[0] += time.process_time() - c0

    emb.embed = timed_embed  # type: ignore[method-assign]
    rows = []
    with tempfile.TemporaryDirectory(dir=store.parent) as d:
        shutil.copytree(store, Path(d) / "m")
        with sgmem.Memory(Path(d) / "m", embedder=emb) as mem:
            mem.search("warm up", scope="s", k=1)
            if behind:
                return {**_behind(mem, emb, todo), "load": os.getloadavg()[0], "code": sgmem.__file__}
            for thread, msgs in todo:
                e0, c0, ec0, w0 = emb.seconds, time.process_time(), cpu_in_embedder[0], time.perf_counter()
                res = mem.add(msgs, scope="s", thread=thread)
                total = (time.perf_counter() - w0) * 1e3
                emb_ms = (emb.seconds - e0) * 1e3
                cpu = (time.process_time() - c0 - (cpu_in_embedder[0] - ec0)) * 1e3
                rows.append([res.sentences, cpu, *_stages(res.timings_ms, emb_ms), total - emb_ms, emb_ms, total])
    return {"rows": rows, "stages": list(STAGES), "load": os.getloadavg()[0], "code": sgmem.__file__}


def _behind(mem: Any, emb: Any, todo: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """The write-behind bound: segment and embed on this thread, plan and write on one worker, in order.

    The first add runs alone (a fresh process's one-off loads), as the
    sequential repeats leave out their first add. ``embed_ms`` is this
    thread's embedding of the adds' texts (what the per-add raw baseline
    embeds); the derived memory's own embeddings run on the worker and are
    part of its ``worker_ms``.
    """
    from concurrent.futures import ThreadPoolExecutor

    from sgmem.ingest import embed_texts, text_hash
    from sgmem.write import commit_add, plan_prepared, segment_add

    thread, msgs = todo[0]
    mem.add(msgs, scope="s", thread=thread)
    busy: list[float] = []

    def write(p: Any, vecs: dict[str, np.ndarray]) -> Any:
        t0 = time.perf_counter()
        try:
            return commit_add(mem, plan_prepared(mem, p, vecs))
        finally:
            busy.append(time.perf_counter() - t0)

    w0, caller, embed_s = time.perf_counter(), 0.0, 0.0
    with ThreadPoolExecutor(1, thread_name_prefix="write-behind") as worker:
        futs = []
        for thread, msgs in todo[1:]:
            c0 = time.perf_counter()
            p = segment_add(mem, msgs, "s", thread, None)
            texts = p.prep.sentence_texts if p.prep is not None else []
            keys = [text_hash(t) for t in texts]
            with mem._lock:  # the vectors a stored text already has, as Memory.add looks them up
                sid = mem._store.scope_id("s")
                known = mem._store.vectors_by_hash(sid, keys) if sid is not None else {}
            e0 = time.perf_counter()
            out, _ = embed_texts(emb, texts, known, mem.config.embed_batch_size)  # as Memory.add embeds
            embed_s += time.perf_counter() - e0
            vecs = dict(zip(keys, out, strict=True))
            futs.append(worker.submit(write, p, vecs))
            caller += time.perf_counter() - c0
        sentences = sum(f.result().sentences for f in futs)
    return {
        "sentences": sentences,
        "adds": len(todo) - 1,
        "wall_ms": (time.perf_counter() - w0) * 1e3,
        "embed_ms": embed_s * 1e3,
        "caller_ms": caller * 1e3,
        "worker_ms": sum(busy) * 1e3,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.write_path", description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=50_000, help="sentences in the scope before the timed adds")
    ap.add_argument("--adds", type=int, default=25)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workload", choices=("locomo", "synth"), default="locomo")
    ap.add_argument("--data", default=DATA, help="LoCoMo JSON (the dev split)")
    ap.add_argument("--workdir", required=True, help="the built store is kept here and reused")
    ap.add_argument(
        "--embed-us",
        type=float,
        default=0.0,
        help="also sleep this many µs per embedded text (an accelerator's latency; see the module docstring)",
    )
    ap.add_argument(
        "--behind",
        action="store_true",
        help="with --embed-us: also time the write-behind bound (see the module docstring)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-behind", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    store = Path(a.workdir) / f"{a.workload}-{a.size}"
    if a.child:
        print(json.dumps(_time(store, a.workload, a.data, a.size, a.adds, a.embed_us, a.child_behind)))
        return 0
    if a.behind and a.embed_us <= 0:
        ap.error("--behind needs --embed-us: the bound is the embedding's overlap with the engine")
    if not (store / "adds.json").is_file():
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir(parents=True)
        _build(store, a.workload, a.data, a.size)
    cmd = [sys.executable, "-m", "benchmarks.write_path", *(argv if argv is not None else sys.argv[1:]), "--child"]
    runs, behind = [], []
    for _ in range(a.repeats):  # the write-behind bound's processes alternate with the sequential ones
        runs.append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout))
        if a.behind:
            out = subprocess.run([*cmd, "--child-behind"], check=True, capture_output=True, text=True).stdout
            behind.append(json.loads(out))
    st = np.array([r["rows"][1:] for r in runs])  # the first add of a fresh process pays one-off loads: left out
    sent = st[0, :, 0].sum()
    cpu = st[:, :, 1].min(axis=0).sum() / sent * 1e3
    wall = st[:, :, -3].min(axis=0).sum() / sent * 1e3
    stages = {s: st[:, :, 2 + i].min(axis=0).sum() / sent * 1e3 for i, s in enumerate(runs[0]["stages"])}
    loads = ", ".join(f"{r['load']:.1f}" for r in runs)
    print(
        f"{runs[0]['code']}: {a.workload}, {a.size:,} sentences, {int(sent)} sentences in {st.shape[1]} adds, "
        f"{a.repeats} repeats (load {loads})"
    )
    print(f"engine CPU µs/sentence (per-add minimum; every thread of the process): {cpu:.0f}")
    print(f"engine wall µs/sentence (per-add minimum; what an add waits for): {wall:.0f}")
    print("stage wall µs/sentence (per-add minimum): " + ", ".join(f"{k} {v:.0f}" for k, v in stages.items()))
    if a.embed_us > 0:
        # per add, the repeat with the least whole wall time, and its embedder time
        best = st[:, :, -1].argmin(axis=0)
        total = st[best, np.arange(st.shape[1]), -1].sum()
        emb_ms = st[best, np.arange(st.shape[1]), -2].sum()
        print(
            f"simulated embedder latency {a.embed_us:g} µs/text: add wall {total / sent * 1e3:.0f} µs/sentence, "
            f"of which embedding {emb_ms / sent * 1e3:.0f}; ingest ÷ per-add embedding {emb_ms / total:.2f}"
        )
    if behind:
        b = min(behind, key=lambda r: r["wall_ms"] / max(r["embed_ms"], 1e-9))  # the repeat nearest the bound
        print(
            f"write-behind bound (the caller segments and embeds, one worker plans and writes in order): add wall "
            f"{b['wall_ms'] / b['sentences'] * 1e3:.0f} µs/sentence, of which the caller's embedding of the adds' "
            f"texts {b['embed_ms'] / b['sentences'] * 1e3:.0f}; ingest ÷ per-add embedding "
            f"{b['embed_ms'] / b['wall_ms']:.2f}; per add, the caller {b['caller_ms'] / b['adds']:.1f} ms and "
            f"the worker {b['worker_ms'] / b['adds']:.1f} ms (its derived memory's embeddings included); "
            f"{b['adds']} adds in {b['wall_ms']:.0f} ms, {b['embed_ms']:.0f} ms of them the caller's embedding"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
