"""Can an add's engine work overlap the next add's embedding? The bound of a pipelined ingest.

``python -m benchmarks.overlap --pack .gpu/minilm-int8 --data locomo-dev.json --sentences 30000``
(or ``--model DIR``) on a GPU host, ``--device cpu`` elsewhere.

The issue-14 target for a GPU host is ingest ≥ 0.5× per-add raw embedding.
An add embeds its texts and then does its engine work (segmenting aside):
done one after the other, ingest is at most ``1 / (1/raw + 1/engine)`` of
the two rates; a write path that overlapped the two (a worker writing add
*n* while the caller embeds add *n+1*) would be bounded by the slower of
the two *as they run side by side*. This measures both rates alone and side
by side, with the engine

- alone (in a child process: the ceiling of any pipeline);
- on a thread of this process while this thread embeds (an in-process
  write-behind: both share the interpreter's GIL);
- in a child process while this thread embeds (a process pipeline: no
  shared GIL);

and the embedding next to a thread that only runs Python (the GIL's convoy
effect on an embedder that releases and retakes it at every operation).

The embedding is the workload's per-add batches in a loop, the target's
baseline (``benchmarks.gpu``'s tight loop), timed alone before and after the
variants (the better pass is the baseline). The engine is ``Memory.add`` of
every add into an empty store with each sentence's vector looked up (no
embedder call), the first add left out of the timing (imports, warm-up).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main", "render", "run"]


class _NoEmbedder:
    """Stands in for MiniLM where every text's vector is looked up: an embedding call is a bug here."""

    name = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 384

    def embed(self, texts: Any) -> np.ndarray:
        raise RuntimeError(f"benchmarks.overlap: {len(texts)} texts were not precomputed")


def _engine(store: str, adds: list[Any], vec_path: str, texts_path: str, q: Any, go: Any) -> None:
    """``Memory.add`` of every add with looked-up vectors.

    Reports ``("done", sentences, seconds, pid, start, end)`` on ``q`` (``start`` and ``end`` on the wall clock,
    which this process and a child share).
    """
    try:
        import sgmem

        from .ann_overlap import _Lookup

        texts = json.loads(Path(texts_path).read_text(encoding="utf-8"))
        vecs = np.load(vec_path)
        emb = _Lookup(_NoEmbedder(), dict(zip(texts, vecs, strict=True)))
        with sgmem.Memory(store, embedder=emb) as mem:
            mem.add(adds[0][1], scope="s", thread=adds[0][0])  # imports and first-use costs: not timed
            if go is not None:
                q.put(("ready", 0, 0.0, os.getpid(), 0.0, 0.0))
                go.wait()
            start, t0 = time.time(), time.perf_counter()
            n = 0
            for thread, msgs in adds[1:]:
                n += mem.add(msgs, scope="s", thread=thread).sentences
            q.put(("done", n, time.perf_counter() - t0, os.getpid(), start, time.time()))
    except BaseException as exc:  # the parent waits on the queue: it must hear of a failure
        q.put(("error", 0, 0.0, repr(exc), 0.0, 0.0))
        raise


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measure; the temporary stores and model copy are removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="sgmem-overlap-"))
    try:
        return _measure(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # three stores of --sentences each, and a model


def _measure(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from sgmem.embed.minilm import DEFAULT_MODEL_NAME, SentenceTransformerEmbedder

    from .gpu import _adds, _sync, unpack

    model = str(unpack(Path(args.pack), tmp / "model")) if args.pack else args.model
    emb = SentenceTransformerEmbedder(model, name=DEFAULT_MODEL_NAME, dim=384, device=args.device, batch_size=256)
    emb.load()
    emb.embed(["warm up"] * 256)
    _sync()
    adds, texts, _ = _adds(args.data, args.sentences)
    if len(adds) < 2:
        raise SystemExit("--sentences is too small: the workload needs at least two adds")
    distinct = sorted({t for ts in texts for t in ts})
    vecs = np.asarray(emb.embed(distinct), dtype=np.float32)  # the embedder batches them (256)
    np.save(tmp / "vectors.npy", vecs)
    (tmp / "texts.json").write_text(json.dumps(distinct), encoding="utf-8")
    out: dict[str, Any] = {
        "device": args.device,
        "cpus": os.cpu_count(),
        "adds": len(adds),
        "sentences": sum(map(len, texts)),
        "engine_sentences": sum(map(len, texts[1:])),
        "parent_pid": os.getpid(),
    }

    def embed_loop(limit: int | None = None, stop: Any = None) -> dict[str, float]:
        """Per-add batches in a tight loop (the target's baseline) until ``limit`` adds or ``stop()``."""
        _sync()
        start, t0 = time.time(), time.perf_counter()
        n = s = 0
        while True:
            ts = texts[n % len(texts)]
            emb.embed(ts)
            s += len(ts)
            n += 1
            if (limit is not None and n >= limit) or (stop is not None and stop()):
                break
        _sync()
        sec = time.perf_counter() - t0
        return {"per_s": s / sec, "adds": n, "s": sec, "start": start, "end": time.time()}

    raw_adds = min(args.raw_adds, len(texts))
    before = embed_loop(limit=raw_adds)
    ctx = mp.get_context("spawn")  # never fork a process that holds a CUDA context

    def receive(q: Any, w: Any) -> Any:
        """The engine's next message; an error if it ended without one (e.g. a child killed by a signal)."""
        while True:
            try:
                return q.get(timeout=1.0)
            except queue.Empty:
                if not w.is_alive():
                    try:
                        return q.get(timeout=1.0)
                    except queue.Empty:
                        code = getattr(w, "exitcode", None)
                        raise RuntimeError(f"the engine ended without reporting (exit code {code})") from None

    def engine(tag: str, with_embed: bool, in_thread: bool) -> dict[str, Any]:
        q: Any = queue.Queue() if in_thread else ctx.Queue()
        go: Any = (threading.Event() if in_thread else ctx.Event()) if with_embed else None
        a = (str(tmp / f"store-{tag}"), adds, str(tmp / "vectors.npy"), str(tmp / "texts.json"), q, go)
        w: Any = threading.Thread(target=_engine, args=a) if in_thread else ctx.Process(target=_engine, args=a)
        w.start()
        res: dict[str, Any] = {"in": "thread" if in_thread else "process"}
        try:
            if with_embed:
                first = receive(q, w)
                if first[0] != "ready":
                    raise RuntimeError(f"the engine failed before starting: {first[3]}")
                go.set()
                box: list[Any] = []

                def stop() -> bool:
                    try:
                        box.append(q.get_nowait())
                    except queue.Empty:
                        return not w.is_alive()  # ended without a word: receive() below says so
                    return True

                res["embed"] = embed_loop(stop=stop)
                msg = box[0] if box else receive(q, w)
            else:
                msg = receive(q, w)
        finally:
            if go is not None:
                go.set()  # an engine still waiting to start must not keep join() waiting
            w.join()
        if msg[0] != "done":
            raise RuntimeError(f"the engine failed: {msg[3]}")
        res.update(
            engine_per_s=msg[1] / msg[2], engine_sentences=msg[1], engine_s=msg[2], pid=msg[3], start=msg[4], end=msg[5]
        )
        return res

    out["engine_alone"] = engine("alone", False, False)
    out["thread"] = engine("thread", True, True)
    out["process"] = engine("process", True, False)
    if args.python_thread_adds:
        flag = [False]

        def spin() -> None:
            while not flag[0]:
                for _ in range(2000):
                    pass

        th = threading.Thread(target=spin, daemon=True)
        th.start()
        try:
            out["embed_next_to_python_thread"] = embed_loop(limit=min(args.python_thread_adds, len(texts)))
        finally:
            flag[0] = True
            th.join()
    after = embed_loop(limit=raw_adds)
    out["raw_before"], out["raw_after"] = before, after
    raw = max(before["per_s"], after["per_s"])  # the baseline's better pass
    eng = out["engine_alone"]["engine_per_s"]
    out["raw_per_s"] = raw
    out["sequential_bound"] = 1.0 / (1.0 / raw + 1.0 / eng) / raw
    out["engine_alone_bound"] = eng / raw
    for key in ("thread", "process"):
        v = out[key]
        v["embed_ratio"] = v["embed"]["per_s"] / raw
        v["engine_ratio"] = v["engine_per_s"] / eng
        v["bound"] = min(v["embed"]["per_s"], v["engine_per_s"]) / raw
    if "embed_next_to_python_thread" in out:
        out["embed_next_to_python_thread"]["ratio"] = out["embed_next_to_python_thread"]["per_s"] / raw
    return out


def render(r: dict[str, Any]) -> str:
    raw = r["raw_per_s"]
    eng = r["engine_alone"]["engine_per_s"]
    lines = [
        f"Overlap of embedding and engine work: {r['adds']} adds, {r['sentences']} sentences, "
        f"device {r['device']}, {r['cpus']} CPUs.",
        f"Per-add raw embedding (baseline, better of two passes): {raw:,.0f} sentences/s "
        f"({r['raw_before']['per_s']:,.0f} before, {r['raw_after']['per_s']:,.0f} after).",
        f"Engine alone (child process, vectors looked up): {eng:,.0f} sentences/s = {eng / raw:.2f}× per-add raw.",
        f"One after the other (today's add): ingest ≤ {r['sequential_bound']:.2f}× per-add raw.",
        "",
        "| engine runs | embedding /s (÷ alone) | engine /s (÷ alone) | pipelined ingest ≤ (÷ per-add raw) |",
        "|---|---|---|---|",
    ]
    for key, label in (
        ("thread", "on a thread, while this thread embeds"),
        ("process", "in a child process, while this thread embeds"),
    ):
        v = r[key]
        lines.append(
            f"| {label} | {v['embed']['per_s']:,.0f} ({v['embed_ratio']:.2f}×) | "
            f"{v['engine_per_s']:,.0f} ({v['engine_ratio']:.2f}×) | **{v['bound']:.2f}×** |"
        )
    if "embed_next_to_python_thread" in r:
        p = r["embed_next_to_python_thread"]
        lines += [
            "",
            f"Embedding next to a thread that only runs Python: {p['per_s']:,.0f} sentences/s ({p['ratio']:.3f}× alone).",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.overlap", description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--pack", help="directory written by `python -m benchmarks.gpu pack`")
    src.add_argument("--model", help="sentence-transformers directory or hub name")
    ap.add_argument("--data", required=True, help="LoCoMo JSON (the dev split)")
    ap.add_argument("--sentences", type=int, default=30_000, help="the workload (LoCoMo sessions, one per add)")
    ap.add_argument("--raw-adds", type=int, default=300, help="adds in each timed pass of the baseline")
    ap.add_argument(
        "--python-thread-adds",
        type=int,
        default=20,
        help="adds embedded next to a Python-only thread (0: skip)",
    )
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.sentences < 1 or args.raw_adds < 1 or args.python_thread_adds < 0:
        ap.error("--sentences and --raw-adds must be positive, --python-thread-adds at least 0")
    result = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
