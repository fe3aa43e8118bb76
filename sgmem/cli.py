"""The ``sgmem`` command line: demo, ingest, search, context, stats, eval, calibrate, mcp.

Stores default to ``$SGMEM_PATH`` or ``./.sgmem``; pass ``--path`` to choose.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import InvalidInputError, SgmemError
from .files import load_messages as _load_messages
from .validate import check_name, normalise_messages

__all__ = ["main", "neutralise"]

DEFAULT_PATH = ".sgmem"


def redact(url: str) -> str:
    from .store.pgsql import redact as _redact

    return _redact(url)


def _default_path() -> str:
    return os.environ.get("SGMEM_PATH", DEFAULT_PATH)


def _memory(path: str | None) -> Any:
    from .memory import Memory

    return Memory(path)


def _print_hit(i: int, hit: Any, out: Any) -> None:
    when = hit.at.strftime("%Y-%m-%d")
    text = hit.text if len(hit.text) <= 160 else hit.text[:157] + "..."
    print(f"  {i}. [{hit.score:.3f}] {when} {hit.speaker}: {text}", file=out)
    why = hit.why
    parts = []
    if why.get("sentence"):
        parts.append(f"best sentence: {why['sentence']!r}")
    if why.get("matched"):
        parts.append(f"matched words: {', '.join(why['matched'])}")
    if why.get("channels"):
        ch = why["channels"]
        parts.append("channels: " + ", ".join(f"{k} {v:.2f}" for k, v in ch.items() if v))
    if why.get("graph", {}).get("hop"):
        parts.append(f"reached by graph hop from {why['graph'].get('via_seed')!r}")
    for p in parts:
        print(f"       why → {p}", file=out)
    print(f"       ids: {', '.join(hit.message_ids)} · thread {hit.thread}", file=out)


def cmd_demo(args: argparse.Namespace) -> int:
    """Ingest the bundled sample conversation and show searches with their ``why``."""
    data = json.loads(resources.files("sgmem").joinpath("data/demo.json").read_text(encoding="utf-8"))
    scope = data["scope"]
    path = args.path
    where = redact(path) if "://" in path else f"{Path(path).resolve()} (SQLite + FAISS, no server, no API key)"
    print(f"sgmem demo — store: {where}")
    t0 = time.perf_counter()
    with _memory(path) as mem:
        mem.delete(scope=scope)  # the demo starts from a clean scope each run
        n_msgs = n_sents = 0
        for th in data["threads"]:
            res = mem.add(th["messages"], scope=scope, thread=th["thread"], at=th["at"])
            n_msgs += res.messages
            n_sents += res.sentences
        print(
            f"ingested {n_msgs} messages / {n_sents} sentences in {len(data['threads'])} threads "
            f"({time.perf_counter() - t0:.1f}s, including model load)\n"
        )
        for q in data["queries"]:
            print(f"Q: {q}")
            for i, hit in enumerate(mem.search(q, scope=scope, k=args.k), 1):
                _print_hit(i, hit, sys.stdout)
            print()
        q = "Plan a weekend for Priya and her sister"
        print(f"Memory.context({q!r}, budget_tokens=250):\n")
        print(mem.context(q, scope=scope, budget_tokens=250))
        st = mem.stats(scope)
        s = st.scopes[0]
        print(
            f"\nstats: {s.messages} messages, {s.sentences} sentences, {s.similarity_edges} similarity edges, "
            f"{s.chronological_edges} chronological edges, embedder {st.embedder}"
        )
    return 0


def _check_ingest(mem: Any, scope: str, groups: list[tuple[Any, Any]]) -> None:
    """Validate a whole file before the first add, so a bad file stores nothing."""
    limits = mem.config.limits
    check_name(scope, "--scope", limits)
    now = datetime.now(timezone.utc)
    seen: set[str] = set()
    for thread, msgs in groups:
        check_name(thread, "thread", limits)
        ids = [m["id"] for m in normalise_messages(msgs, now, limits) if m["id"]]
        dup = seen.intersection(ids)
        if dup:
            raise InvalidInputError("messages[].id", sorted(dup)[:5], "ids used once in the file")
        seen.update(ids)
    stored = mem.get(scope=scope, message_ids=sorted(seen))
    if stored:
        raise InvalidInputError(
            "messages[].id",
            [m.id for m in stored][:5],
            f"ids not already stored in scope {scope!r}",
            "Message ids are unique per scope; remove them from the file or delete the stored messages first.",
        )


def cmd_ingest(args: argparse.Namespace) -> int:
    groups = _load_messages(Path(args.file), args.thread)
    with _memory(args.path) as mem:
        _check_ingest(mem, args.scope, groups)
        total = 0
        # every thread's texts embedded in one length-sorted pass; one transaction per thread
        for (thread, _), res in zip(groups, mem.add_many(groups, scope=args.scope), strict=True):
            total += res.messages
            print(f"{thread}: {res.messages} messages, {res.sentences} sentences, {res.edges} edges")
        print(f"ingested {total} messages into scope {args.scope!r} at {redact(str(args.path))}")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    with _memory(args.path) as mem:
        hits = mem.search(args.query, scope=args.scope, k=args.k, mode=args.mode)
        if args.json:
            print(json.dumps([{**h.__dict__, "at": h.at.isoformat()} for h in hits], indent=2, ensure_ascii=False))
            return 0
        if not hits:
            print(f"no memories found in scope {args.scope!r}")
        for i, hit in enumerate(hits, 1):
            _print_hit(i, hit, sys.stdout)
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    with _memory(args.path) as mem:
        print(mem.context(args.query, scope=args.scope, budget_tokens=args.budget, mode=args.mode))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with _memory(args.path) as mem:
        st = mem.stats(args.scope)
        print(f"store {st.path}: schema {st.schema_version}, embedder {st.embedder} (dim {st.dim})")
        for s in st.scopes:
            print(
                f"  {s.scope}: {s.threads} threads, {s.sessions} sessions, {s.messages} messages, "
                f"{s.sentences} sentences, {s.similarity_edges} similarity + {s.chronological_edges} "
                f"chronological edges, {s.tokens} tokens"
            )
        if not st.scopes:
            print("  (empty)")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from .embed import default_embedder
    from .eval import CachingEmbedder, evaluate, render_report
    from .eval.relevance import DEFAULT_GRID

    if not Path(args.file).is_file():  # before loading the model
        raise InvalidInputError("file", args.file, "an existing LoCoMo JSON file")
    embedder: Any = default_embedder()
    if args.cache:
        embedder = CachingEmbedder(embedder, args.cache)
    if args.cutoffs:
        from .config import MIN_RELEVANCE, Config
        from .eval.answers import render_cutoffs, sweep_cutoffs
        from .eval.locomo import load_locomo

        default = MIN_RELEVANCE.get(embedder.name, 0.0)
        sweep = sweep_cutoffs(
            load_locomo(args.file, args.limit), embedder, progress=lambda s: print(s, file=sys.stderr)
        )
        return _report_eval(args, embedder, render_cutoffs(sweep, default, Config().relative_relevance))
    if args.chat:
        from .eval.chat import evaluate_chat, render_chat
        from .eval.locomo import load_locomo

        res = evaluate_chat(load_locomo(args.file, args.limit), embedder, progress=lambda s: print(s, file=sys.stderr))
        return _report_eval(args, embedder, render_chat(res))
    if args.loo:
        report = _loo_report(args, embedder)
        print(report)
        if args.out:
            Path(args.out).write_text(report + "\n", encoding="utf-8")
        return 0
    systems: list[tuple[Any, ...]] = [("sgmem hybrid", "hybrid"), ("BM25 turns", "bm25"), ("dense sentences", "vector")]
    if args.pyramid:
        import dataclasses

        from .config import Config

        base = Config()
        no_pyr = base.with_(hybrid=dataclasses.replace(base.hybrid, w_pyramid=0.0))
        systems[1:1] = [("sgmem hybrid, no pyramid channel", "hybrid", no_pyr), ("sgmem pyramid", "pyramid")]
    if args.units:
        from .config import Config

        systems.insert(1, ("sgmem hybrid, exchange unit", "hybrid", Config(memory_unit="exchange")))
    if args.speaker_match:
        import dataclasses

        from .config import Config

        spk = Config().with_(hybrid=dataclasses.replace(Config().hybrid, speaker_match=1.0))
        systems.insert(1, ("sgmem hybrid, speaker_match=1", "hybrid", spk))
    config = None
    if args.knn_index or args.knn_rule:
        import dataclasses

        from .config import Config

        base = Config()
        graph = dataclasses.replace(base.graph, knn_index=args.knn_index or base.graph.knn_index)
        graph = dataclasses.replace(graph, knn_rule=args.knn_rule or graph.knn_rule)
        config = base.with_(graph=graph)
        systems.append(("sgmem graph (SGMem)", "graph"))
    rep = evaluate(
        args.file,
        systems=systems,
        config=config,
        embedder=embedder,
        limit=args.limit,
        budgets=tuple(args.budgets),
        relevance=DEFAULT_GRID if args.relevance else (),
        progress=lambda s: print(s, file=sys.stderr),
    )
    return _report_eval(args, embedder, render_report(rep))


def cmd_eval_longmemeval(args: argparse.Namespace) -> int:
    """``sgmem eval longmemeval FILE``: LongMemEval's retrieval metrics for sgmem and the baselines."""
    from .embed import default_embedder
    from .eval import CachingEmbedder
    from .eval.longmemeval import evaluate_longmemeval, load_longmemeval, render_longmemeval

    questions = load_longmemeval(args.file, limit=args.limit, per_type=args.per_type)
    embedder: Any = default_embedder()
    if args.cache:
        embedder = CachingEmbedder(embedder, args.cache)
    protocols = ("user", "all") if args.protocol == "both" else (args.protocol,)
    parts = []
    for protocol in protocols:
        rep = evaluate_longmemeval(
            questions,
            protocol=protocol,
            embedder=embedder,
            progress=lambda s: print(s, file=sys.stderr),
            path=str(args.file),
        )
        parts.append(render_longmemeval(rep))
        if len(protocols) > 1 and protocol != protocols[-1]:
            print(parts[-1], file=sys.stderr)  # a long run shows each protocol's figures as they are done
            if args.cache:
                embedder.save()
    return _report_eval(args, embedder, "\n".join(parts))


def _report_eval(args: argparse.Namespace, embedder: Any, report: str) -> int:
    """Keep the embedding cache, print an evaluation's report and write it to ``--out``."""
    from .eval import CachingEmbedder

    if isinstance(embedder, CachingEmbedder):
        embedder.save()
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n", encoding="utf-8")
    return 0


def _loo_report(args: argparse.Namespace, embedder: Any) -> str:
    """``sgmem eval locomo --loo``: the dev-tuned settings, chosen leave-one-conversation-out."""
    from .eval import CachingEmbedder
    from .eval.locomo import load_locomo
    from .eval.loo import (
        CONTEXT_GRID,
        TUNED_GRID,
        apply_overrides,
        context_metric,
        gate_loo,
        loo,
        prepare,
        recall_metric,
        render_gate_loo,
        render_loo,
    )

    def progress(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    convs = load_locomo(args.file, args.limit)
    parts = [f"LoCoMo leave-one-conversation-out — {args.file}: {len(convs)} conversations"]
    with prepare(convs, embedder, progress=progress) as prep:
        if isinstance(embedder, CachingEmbedder):
            embedder.save()
        # the memory unit and the speaker match (off by default) are chosen per fold like the weights
        grid = {**TUNED_GRID, "memory_unit": ["exchange"], "hybrid.speaker_match": [0.0, 0.5, 1.0, 2.0]}
        ret = loo(prep, grid, recall_metric(), progress=progress)
        parts += ["", render_loo(ret, "Retrieval weights (HybridConfig) and memory unit, by recall@10")]
        # the digest is chosen per fold on top of the retrieval setting that fold chose
        budget = args.budgets[0]
        bases = {f.held_out: apply_overrides(prep.config, f.chosen) for f in ret.folds}
        metric, cache = context_metric(budget), {}  # type: ignore[var-annotated]
        for select, how in ((0, "fragments"), (1, "whole turns")):
            ctx = loo(prep, CONTEXT_GRID, metric, base=bases, select=select, cache=cache, progress=progress)
            title = f"Context digest (context_turn_tokens), by evidence inside {budget} tokens counting {how}"
            parts += ["", render_loo(ctx, title)]
    parts += ["", render_gate_loo(gate_loo(args.file, embedder, limit=args.limit))]
    if isinstance(embedder, CachingEmbedder):
        embedder.save()
    return "\n".join(parts)


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Print the portable gate's τ_noop for a corpus (ALGORITHMS §2.7)."""
    from .embed import default_embedder
    from .eval.corpus import calibrate_corpus

    if not Path(args.corpus).is_file():  # before loading the model
        raise InvalidInputError("corpus", args.corpus, "an existing .txt, .json or .jsonl file")
    if not 0.0 < args.quantile < 1.0:
        raise InvalidInputError("--quantile", args.quantile, "a number in (0, 1), e.g. 0.8")
    embedder: Any = default_embedder()
    if args.cache:
        from .eval import CachingEmbedder

        embedder = CachingEmbedder(embedder, args.cache)
    try:
        cal = calibrate_corpus(args.corpus, embedder, args.quantile, tuple(args.roles.split(",")))
    except ValueError as exc:
        raise InvalidInputError("corpus", args.corpus, "a corpus with at least two candidates", str(exc)) from None
    if hasattr(embedder, "save"):
        embedder.save()
    if args.json:
        print(json.dumps(cal.__dict__, indent=2))
        return 0
    print(f"tau_noop = {cal.tau_noop:.4f}  (p{round(cal.quantile * 100)} of s_vMF over {cal.candidates} candidates)")
    print("score quantiles: " + ", ".join(f"{k} {v:.4f}" for k, v in cal.quantiles.items()))
    print(f"skips {cal.skip_rate:.1%} of this corpus. Use it with:")
    print(f'  sgmem.Config(gate=sgmem.GateConfig(mode="binary", tau_noop={cal.tau_noop:.4f}))')
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve one store and scope over the Model Context Protocol (:mod:`sgmem.mcp`)."""
    from .mcp import main as mcp_main

    return mcp_main(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sgmem", description="Long-term memory for LLM agents (no server, no LLM needed).")
    sub = p.add_subparsers(dest="command", required=True)

    def with_path(sp: argparse.ArgumentParser, default: str | None = None) -> None:
        sp.add_argument(
            "--path", default=default or _default_path(), help="store directory (default $SGMEM_PATH or ./.sgmem)"
        )
        sp.add_argument(
            "--store",
            default=os.environ.get("SGMEM_STORE") or None,
            metavar="URL",
            help="a shared PostgreSQL store, postgresql://user@host/db (default $SGMEM_STORE); overrides --path",
        )

    d = sub.add_parser("demo", help="ingest a bundled sample conversation and run searches")
    with_path(d, default=os.environ.get("SGMEM_PATH", ".sgmem-demo"))
    d.add_argument("--k", type=int, default=3)
    d.set_defaults(func=cmd_demo)

    i = sub.add_parser("ingest", help="add messages from a JSON/JSONL file")
    i.add_argument("file")
    i.add_argument("--scope", required=True)
    i.add_argument("--thread", default=None, help="thread for files without thread names")
    with_path(i)
    i.set_defaults(func=cmd_ingest)

    s = sub.add_parser("search", help="search a scope")
    s.add_argument("query")
    s.add_argument("--scope", required=True)
    s.add_argument("--k", type=int, default=5)
    s.add_argument("--mode", default=None)
    s.add_argument("--json", action="store_true", help="print hits as JSON")
    with_path(s)
    s.set_defaults(func=cmd_search)

    c = sub.add_parser("context", help="print the budgeted context block for a query")
    c.add_argument("query")
    c.add_argument("--scope", required=True)
    c.add_argument("--budget", type=int, default=1000)
    c.add_argument("--mode", default=None)
    with_path(c)
    c.set_defaults(func=cmd_context)

    st = sub.add_parser("stats", help="counts per scope")
    st.add_argument("--scope", default=None)
    with_path(st)
    st.set_defaults(func=cmd_stats)

    e = sub.add_parser("eval", help="evaluate retrieval on a benchmark")
    esub = e.add_subparsers(dest="benchmark", required=True)
    lo = esub.add_parser("locomo", help="LoCoMo evidence recall@k with baselines, no LLM")
    lo.add_argument("file", help="LoCoMo JSON (e.g. ../shared/data/locomo/locomo-dev.json)")
    lo.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    lo.add_argument("--budgets", type=int, nargs="+", default=[1000], help="context budgets to measure")
    lo.add_argument("--cache", default=None, help="directory for an embedding cache (faster re-runs)")
    lo.add_argument("--out", default=None, help="also write the Markdown report here")
    lo.add_argument(
        "--pyramid",
        action="store_true",
        help="also run mode='pyramid' (MGRetrieval) and the hybrid without its pyramid channel",
    )
    lo.add_argument(
        "--units",
        action="store_true",
        help="also run the hybrid with the exchange memory unit (Config.memory_unit='exchange': "
        "a message and its reply per hit) beside the default turn unit",
    )
    lo.add_argument(
        "--speaker-match",
        action="store_true",
        help="also run the hybrid with HybridConfig.speaker_match=1 (a speaker's name in the question "
        "matches the turns that speaker said)",
    )
    lo.add_argument(
        "--loo",
        action="store_true",
        help="the dev-tuned settings (hybrid weights, context digest, gate tau_noop) chosen "
        "leave-one-conversation-out: held-out figures next to in-sample ones",
    )
    lo.add_argument(
        "--chat",
        action="store_true",
        help="LoCoMo inside a chat: the clean, echo (each question asked before, unanswered) and answered "
        "conditions side by side, against BM25, dense and their reciprocal rank fusion; the dialogue-act "
        "settings chosen leave-one-conversation-out",
    )
    lo.add_argument(
        "--cutoffs",
        action="store_true",
        help="the relevance cutoff (min_score) on answer-bearing hits: the bundled question -> answer pairs and "
        "LoCoMo's evidence kept, unrelated questions' contexts emptied, per threshold",
    )
    lo.add_argument(
        "--relevance",
        action="store_true",
        help="also sweep the relevance cutoff (min_score): evidence kept vs unrelated questions emptied, "
        "in-sample and leave-one-conversation-out",
    )
    lo.add_argument(
        "--knn-index",
        choices=["auto", "exact", "hnsw"],
        default=None,
        help="build the kNN similarity edges this way (GraphConfig.knn_index) and also run mode='graph'",
    )
    lo.add_argument(
        "--knn-rule",
        choices=["knn", "earlier"],
        default=None,
        help="link sentences by this rule (GraphConfig.knn_rule) and also run mode='graph'",
    )
    lo.set_defaults(func=cmd_eval)
    lme = esub.add_parser(
        "longmemeval",
        help="LongMemEval turn and session retrieval metrics with baselines, no LLM",
        description="Each question's haystack in a fresh store; sgmem, BM25, dense and their RRF rank the same turns.",
    )
    lme.add_argument("file", help="LongMemEval JSON, official format, .json or .json.gz")
    lme.add_argument(
        "--protocol",
        choices=["user", "all", "both"],
        default="both",
        help="store the user's turns only (the paper's setting), every turn of both roles, or both (default)",
    )
    lme.add_argument("--per-type", type=int, default=None, help="at most N questions of each type (seed 0)")
    lme.add_argument("--limit", type=int, default=None, help="only the first N questions")
    lme.add_argument("--cache", default=None, help="directory for an embedding cache (faster re-runs)")
    lme.add_argument("--out", default=None, help="also write the Markdown report here")
    lme.set_defaults(func=cmd_eval_longmemeval)

    cal = sub.add_parser("calibrate", help="calibrate the portable novelty gate's tau_noop on a corpus")
    cal.add_argument("corpus", help="a .txt (one memory per line), messages .json/.jsonl, or LoCoMo .json file")
    cal.add_argument("--quantile", type=float, default=0.8, help="skip the candidates above this quantile (0.8)")
    cal.add_argument("--roles", default="user", help="roles whose turns give candidates, comma-separated (user)")
    cal.add_argument("--cache", default=None, help="directory for an embedding cache")
    cal.add_argument("--json", action="store_true", help="print the result as JSON")
    cal.set_defaults(func=cmd_calibrate)

    from .mcp import add_arguments as mcp_arguments  # no SDK import until the command runs

    m = sub.add_parser("mcp", help="serve one scope's memory to MCP clients (stdio, or streamable HTTP)")
    mcp_arguments(m)
    with_path(m)
    m.set_defaults(func=cmd_mcp)
    return p


# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional overrides that reorder what a
# terminal shows: stored text printed raw could move the cursor, retitle the window or hide a line
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def neutralise(text: str) -> str:
    """``text`` with terminal control and escape sequences shown as ``\\x1b``-style escapes, not obeyed."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class _SafeStream:
    """A text stream that neutralises control characters in everything written to it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._stream.write(neutralise(text)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sgmem`` command.

    Everything printed goes through :func:`neutralise`: memories are user text,
    and an escape sequence in one must not act on the terminal.
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    if getattr(args, "store", None):
        args.path = args.store  # sgmem.Memory takes a directory or a postgresql:// URL
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _SafeStream(out), _SafeStream(err)  # type: ignore[assignment]
    try:
        return _run(args)
    finally:
        sys.stdout, sys.stderr = out, err


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except SgmemError as exc:
        print(f"sgmem: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"sgmem: error: {exc.filename}: no such file", file=sys.stderr)
        return 2
    except OSError as exc:  # a directory given as a file, no permission, disk full...
        print(f"sgmem: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
