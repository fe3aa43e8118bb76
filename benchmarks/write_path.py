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


def _time(store: Path, kind: str, data: str, size: int, n_adds: int, embed_us: float = 0.0) -> dict[str, Any]:
    """One repeat, in this process: the engine ms of each of the next ``n_adds`` adds."""
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
            for thread, msgs in todo:
                e0, c0, ec0, w0 = emb.seconds, time.process_time(), cpu_in_embedder[0], time.perf_counter()
                res = mem.add(msgs, scope="s", thread=thread)
                total = (time.perf_counter() - w0) * 1e3
                emb_ms = (emb.seconds - e0) * 1e3
                cpu = (time.process_time() - c0 - (cpu_in_embedder[0] - ec0)) * 1e3
                rows.append([res.sentences, cpu, *_stages(res.timings_ms, emb_ms), total - emb_ms, emb_ms, total])
    return {"rows": rows, "stages": list(STAGES), "load": os.getloadavg()[0], "code": sgmem.__file__}


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
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    store = Path(a.workdir) / f"{a.workload}-{a.size}"
    if a.child:
        print(json.dumps(_time(store, a.workload, a.data, a.size, a.adds, a.embed_us)))
        return 0
    if not (store / "adds.json").is_file():
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir(parents=True)
        _build(store, a.workload, a.data, a.size)
    cmd = [sys.executable, "-m", "benchmarks.write_path", *(argv if argv is not None else sys.argv[1:]), "--child"]
    runs = [
        json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout) for _ in range(a.repeats)
    ]
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
