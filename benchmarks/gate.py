"""Novelty-gated writes (SAGE) and generated memory: what the gate saves, what it costs.

Every figure is measured against a baseline in the same run:

1. **Routing on LoCoMo, no LLM.** Every conversation is ingested as
   ``sgmem eval locomo`` does (one add per session). Fact candidates are the
   LLM-free ones (ALGORITHMS §1.6). Systems: the gate off (every candidate
   stored: the baseline), the adaptive SAGE gate with the paper's defaults,
   and the portable binary gate with τ_noop calibrated leakage-controlled
   (2 folds: τ from the p80 of the other half's conversations, §2.7).
   Reported: the share of candidates routed Add / Update / Noop, the facts
   stored (and their bytes), evidence recall@10 of fact retrieval
   (``search(kinds=["fact"])``, each fact mapped to its source turns), and
   recall@10 of the default search (turns; raw messages are never gated).
2. **LLM calls per 1,000 turns.** The LLM write path with a scripted,
   deterministic extractor standing in for the model (one fact per
   informative user sentence, merges by the LLM-free rule), against
   Mem0-style routing: the same extraction calls plus one routing call per
   extraction batch that found facts.
3. **Decision latency** at 1k / 10k / 100k facts (synthetic clustered unit
   vectors, d = 384), exact O(N·d) scoring vs the IVF top-k approximation,
   with their routing agreement and the approximation's stated error bound.
4. **A trace plot** of τ, τ + δ and each candidate's novelty over one
   conversation's stream (as the paper's Figure 3): ``gate_trace.png``.
5. **Context recall** inside ``Memory.context(budget_tokens=1000)`` with the
   generated memory blocks off (the default) and on, same budget.

The ``gate`` part of ``python -m benchmarks``; alone, one measurement at a time::

    python -m benchmarks --only gate
    python -m benchmarks.gate --sizes 1000 10000 100000 --only latency
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
PARTS = ("routing", "llm", "latency", "plot", "context")
CONTEXT_VARIANTS: tuple[tuple[tuple[str, ...], float], ...] = (
    ((), 0.0),
    (("fact",), 0.1),
    (("fact",), 0.25),
    (("summary",), 0.25),
    (("summary", "fact"), 0.25),
)


def default_locomo_path() -> Path:
    return HERE.parents[1] / "shared" / "data" / "locomo" / "locomo-dev.json"


# ----------------------------------------------------------------- routing
def run_system(convs: Sequence[Any], embedder: Any, cfg: Any, *, collect: bool = False) -> dict[str, Any]:
    """Ingest and query every conversation under ``cfg``; routing shares, store size, recall."""
    import sgmem

    out: dict[str, Any] = {"add": 0, "update": 0, "noop": 0, "facts": 0, "fact_bytes": 0, "derived_ms": 0.0,
                           "add_ms": 0.0, "fact_recall": [], "turn_recall": [], "vectors": {}, "trace": {}}
    for conv in convs:
        with sgmem.Memory(embedder=embedder, config=cfg) as mem:
            for key, at, msgs in conv.sessions:
                r = mem.add(msgs, scope=conv.sample_id, thread=key, at=at)
                out["add"] += r.facts_added
                out["update"] += r.facts_updated
                out["noop"] += r.facts_skipped
                out["derived_ms"] += r.timings_ms.get("derived", 0.0)
                out["add_ms"] += r.timings_ms.get("total", 0.0)
            sid = mem._store.scope_id(conv.sample_id)
            conn = mem._store.conn
            n, size = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(text) + LENGTH(vec)), 0) FROM derived "
                "WHERE scope_id = ? AND kind = 'fact'",
                (sid,),
            ).fetchone()
            out["facts"] += int(n)
            out["fact_bytes"] += int(size)
            if collect:
                out["vectors"][conv.sample_id] = mem._derived.cache(sid).state.vectors.copy()
            out["trace"][conv.sample_id] = conn.execute(
                "SELECT step, action, novelty, tau, score FROM gate_decisions WHERE scope_id = ? ORDER BY id", (sid,)
            ).fetchall()
            for q in conv.questions:
                if q.category == 5:  # adversarial: no evidence to find
                    continue
                ev = set(q.evidence)
                for key, kinds in (("fact_recall", ["fact"]), ("turn_recall", None)):
                    seen: list[str] = []
                    for h in mem.search(q.question, scope=conv.sample_id, k=10, kinds=kinds):
                        seen += [m for m in h.message_ids if m not in seen]
                    out[key].append(len(ev & set(seen[:10])) / len(ev))
    return out


def routing(convs: Sequence[Any], embedder: Any, roles: tuple[str, ...]) -> dict[str, Any]:
    """Part 1: gate off vs adaptive SAGE vs calibrated binary gate on the same conversations."""
    import sgmem
    from sgmem.gate.calibrate import calibrate, stream_scores

    derived = sgmem.DerivedConfig(fact_roles=roles)

    def cfg(**gate: Any) -> Any:
        return sgmem.Config(gate=sgmem.GateConfig(**gate), derived=derived)

    res: dict[str, Any] = {"roles": list(roles)}
    off = run_system(convs, embedder, cfg(mode="off"), collect=True)
    res["off"] = off
    res["adaptive"] = run_system(convs, embedder, cfg(mode="adaptive"))
    # the shipped default: with no LLM, "auto" is the binary gate at the default τ_noop
    res["default"] = run_system(convs, embedder, cfg())
    # the same stream through the approximate scorer (forced at these small sizes): routing agreement
    approx = run_system(convs, embedder, cfg(mode="adaptive", scorer="approx"))
    same = total = 0
    for sid, trace in res["adaptive"]["trace"].items():
        for a, b in zip(trace, approx["trace"][sid], strict=True):
            same += a[1] == b[1]
            total += 1
    res["approx_agreement"] = same / max(total, 1)
    # the binary gate, leakage-controlled: τ_noop of each half comes from the other half
    ids = [c.sample_id for c in convs]
    half = max(1, len(ids) // 2)
    folds = [ids[:half], ids[half:]] if len(ids) > 1 else [ids, ids]
    merged: dict[str, Any] = {}
    taus = []
    for cal_ids, eval_ids in ((folds[0], folds[1]), (folds[1], folds[0])):
        scores = np.concatenate([stream_scores(off["vectors"][s]) for s in cal_ids])
        tau = calibrate(scores, 0.8).tau_noop
        taus.append(tau)
        part = run_system([c for c in convs if c.sample_id in eval_ids], embedder, cfg(mode="binary", tau_noop=tau))
        merged.setdefault("tau_of", {}).update({sid: tau for sid in eval_ids})
        for k, v in part.items():
            if k != "tau_of":
                merged[k] = merged.get(k, type(v)()) + v if not isinstance(v, dict) else {**merged.get(k, {}), **v}
        if len(ids) == 1:
            break
    merged["tau_noop"] = taus
    res["binary"] = merged
    for name in ("off", "adaptive", "default", "binary"):
        res[name].pop("vectors", None)
    return res


def _summarise(res: dict[str, Any]) -> dict[str, Any]:
    """Per-question recall lists → their means (what the report shows), in place; the trace dropped."""
    import sgmem

    res["questions"] = len(res["off"]["fact_recall"])
    res["default_tau_noop"] = sgmem.GateConfig().tau_noop
    for name in ("off", "adaptive", "default", "binary"):
        r = res[name]
        r["fact_recall@10"] = 100 * statistics.fmean(r.pop("fact_recall"))
        r["turn_recall@10"] = 100 * statistics.fmean(r.pop("turn_recall"))
        r.pop("trace", None)
    return res


def render_routing(res: dict[str, Any]) -> str:
    """Markdown of :func:`routing`'s results, summarised by :func:`_summarise`."""
    off = res["off"]
    rows = [
        f"Routing of LoCoMo fact candidates, no LLM (roles {', '.join(res['roles'])}; "
        f"{res['questions']} questions, categories 1–4)",
        "",
        "| system | candidates | Add | Update | Noop | facts stored | store vs off | fact recall@10 | Δ | "
        "default search recall@10 | derived ms / add ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base_r = off["fact_recall@10"]
    default_label = f"sgmem default (no LLM: binary, τ_noop {res['default_tau_noop']})"
    for name, label in (("off", "gate off (baseline)"), ("adaptive", "SAGE adaptive, paper defaults"),
                        ("binary", "portable binary gate, τ p80 (2-fold)"), ("default", default_label)):
        if name not in res:
            continue
        r = res[name]
        n = r["add"] + r["update"] + r["noop"]
        rec = r["fact_recall@10"]
        rows.append(
            f"| {label} | {n} | {100 * r['add'] / n:.1f} % | {100 * r['update'] / n:.1f} % | {100 * r['noop'] / n:.1f} % "
            f"| {r['facts']} | {r['facts'] / max(off['facts'], 1):.3f} | {rec:.2f} | {rec - base_r:+.2f} "
            f"| {r['turn_recall@10']:.2f} | {r['derived_ms'] / max(r['add_ms'], 1e-9):.3f} |"
        )
    rows.append("")
    rows.append("binary gate τ_noop per fold: " + ", ".join(f"{t:.4f}" for t in res["binary"]["tau_noop"]))
    rows.append(
        f"adaptive gate, approximate scorer forced (IVF top-k): {100 * res['approx_agreement']:.2f} % of decisions "
        "identical to the exact scorer's on the same stream"
    )
    return "\n".join(rows)


# --------------------------------------------------------------------- LLM
class ExtractiveLLM:
    """A deterministic stand-in for an extraction model (no network, no weights).

    Facts: every sentence of 4+ words said by one of ``speakers``, prefixed
    with the speaker, with its message number as the source — what an
    extractor returns for informative user turns. Merges: the LLM-free rule.
    Summaries: the dialogue's first line. Insights: none.
    """

    def __init__(self, speakers: set[str]) -> None:
        self.speakers = speakers
        self.calls: dict[str, int] = {}
        self.with_facts = 0  # extraction calls that found facts (Mem0 routes each with one more call)

    def complete(self, prompt: str) -> str:
        from sgmem.derived.merge import rule_merge
        from sgmem.text import split_sentences

        if prompt.startswith("You extract memories"):
            self.calls["facts"] = self.calls.get("facts", 0) + 1
            facts = []
            for num, speaker, content in re.findall(r"^\[(\d+)\] (.+?) \(\d{4}-\d\d-\d\d\): (.*)$", prompt, re.M):
                if speaker in self.speakers:
                    facts += [{"fact": f"{speaker}: {s}", "sources": [int(num)]}
                              for s in split_sentences(content) if len(s.split()) >= 4]
            self.with_facts += bool(facts)
            return json.dumps(facts)
        if prompt.startswith("Existing memory:"):
            self.calls["merge"] = self.calls.get("merge", 0) + 1
            m = re.match(r"Existing memory: (.*)\nNew information: (.*)\n", prompt)
            return rule_merge(m.group(1), m.group(2)) if m else ""
        if prompt.startswith("Summarize this dialogue"):
            self.calls["summary"] = self.calls.get("summary", 0) + 1
            return prompt.split("):\n", 1)[-1].splitlines()[0][:300]
        self.calls["insights"] = self.calls.get("insights", 0) + 1
        return "[]"

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


def llm_calls(convs: Sequence[Any], embedder: Any, tau_of: dict[str, float] | None = None) -> dict[str, Any]:
    """Part 2: LLM calls per 1,000 turns, our write path vs Mem0-style routing.

    With ``tau_of`` (τ_noop per conversation), the portable binary gate
    routes; otherwise the adaptive gate with the paper's defaults.
    """
    import sgmem

    base = sgmem.Config(pyramid=sgmem.PyramidConfig(llm_keywords=False))
    calls: dict[str, int] = {}
    turns = batches_with_facts = updates = 0
    for conv in convs:
        user = {m["name"] for _, _, msgs in conv.sessions for m in msgs if m["role"] == "user"}
        llm = ExtractiveLLM(user)
        cfg = base if tau_of is None else base.with_(gate=sgmem.GateConfig(mode="binary", tau_noop=tau_of[conv.sample_id]))
        with sgmem.Memory(embedder=embedder, llm=llm, config=cfg) as mem:
            for key, at, msgs in conv.sessions:
                turns += len(msgs)
                r = mem.add(msgs, scope=conv.sample_id, thread=key, at=at)
                updates += r.facts_updated
        batches_with_facts += llm.with_facts
        for k, v in llm.calls.items():
            calls[k] = calls.get(k, 0) + v
    per_k = {k: 1000 * v / turns for k, v in calls.items()}
    ours_facts = per_k.get("facts", 0) + per_k.get("merge", 0)
    mem0 = per_k.get("facts", 0) + 1000 * batches_with_facts / turns
    full = sum(per_k.values())
    return {"turns": turns, "per_1000": per_k, "ours_fact_path": ours_facts, "mem0_style": mem0,
            "mem0_routing": 1000 * batches_with_facts / turns, "ours_full": full,
            "saving_fact_path": 1 - ours_facts / mem0, "routing_calls_saved": 1 - per_k.get("merge", 0) / max(
                1000 * batches_with_facts / turns, 1e-9), "updates": updates}


def render_llm(runs: dict[str, dict[str, Any]]) -> str:
    any_run = next(iter(runs.values()))
    lines = [
        f"LLM calls per 1,000 ingested turns ({any_run['turns']} LoCoMo turns, 8 messages per extraction call; "
        "a scripted extractor stands in for the model)",
        "",
        "| write path | extraction | routing | merges (Update) | summaries | insights | total | vs Mem0-style |",
        "|---|---|---|---|---|---|---|---|",
        f"| Mem0-style (one routing call per extraction batch with facts) | {any_run['per_1000'].get('facts', 0):.1f} "
        f"| {any_run['mem0_routing']:.1f} | – | – | – | {any_run['mem0_style']:.1f} | 1.00 |",
    ]
    for name, res in runs.items():
        p = res["per_1000"]
        lines.append(
            f"| sgmem {name}, fact path | {p.get('facts', 0):.1f} | 0 | {p.get('merge', 0):.1f} | – | – "
            f"| {res['ours_fact_path']:.1f} | {res['ours_fact_path'] / res['mem0_style']:.2f} |"
        )
        lines.append(
            f"| sgmem {name}, full write path | {p.get('facts', 0):.1f} | 0 | {p.get('merge', 0):.1f} "
            f"| {p.get('summary', 0):.1f} | {p.get('insights', 0):.1f} | {res['ours_full']:.1f} "
            f"| {res['ours_full'] / res['mem0_style']:.2f} |"
        )
    lines.append("")
    for name, res in runs.items():
        lines.append(
            f"{name}: {100 * res['saving_fact_path']:.1f} % fewer calls than Mem0-style on the fact path "
            f"({res['per_1000'].get('merge', 0):.1f} merge calls replace {res['mem0_routing']:.1f} routing calls)"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------- context
def context_recall(convs: Sequence[Any], embedder: Any, budget: int = 1000) -> list[dict[str, Any]]:
    """Part 5: evidence inside ``Memory.context`` (cat 1–4) with generated memory off and on.

    ``strict`` counts only turns in the block; ``with sources`` also counts
    the source messages of the facts and summaries in it (LLM-free ones quote
    those messages' sentences).
    """
    import sgmem
    from sgmem.text import count_tokens

    out = []
    for kinds, share in CONTEXT_VARIANTS:
        cfg = sgmem.Config(derived=sgmem.DerivedConfig(context_kinds=kinds, context_share=share))
        strict: list[float] = []
        loose: list[float] = []
        tokens: list[int] = []
        for conv in convs:
            with sgmem.Memory(embedder=embedder, config=cfg) as mem:
                for key, at, msgs in conv.sessions:
                    mem.add(msgs, scope=conv.sample_id, thread=key, at=at)
                for q in conv.questions:
                    if q.category == 5:
                        continue
                    ev = set(q.evidence)
                    text, ids = mem._context_with_ids(q.question, scope=conv.sample_id, budget_tokens=budget, mode=None)
                    _, turn_ids = mem._context_with_ids(
                        q.question, scope=conv.sample_id, budget_tokens=budget, mode=None, with_generated=False
                    )
                    strict.append(len(ev & set(turn_ids)) / len(ev))
                    loose.append(len(ev & set(ids)) / len(ev))
                    tokens.append(count_tokens(text))
        out.append({"kinds": list(kinds), "share": share, "strict": 100 * statistics.fmean(strict),
                    "with_sources": 100 * statistics.fmean(loose), "tokens": statistics.fmean(tokens),
                    "max_tokens": max(tokens)})
        print(render_context(out).splitlines()[-1], file=sys.stderr, flush=True)
    return out


def render_context(rows: list[dict[str, Any]]) -> str:
    base = rows[0]["strict"]
    lines = [
        "Evidence inside Memory.context(budget_tokens=1000), LoCoMo cat 1–4, no LLM",
        "",
        "| generated memory in the block | share of budget | turns only | Δ | turns + generated sources | mean / max tokens |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {', '.join(r['kinds']) or 'none (default)'} | {r['share']:.2f} | {r['strict']:.2f} | {r['strict'] - base:+.2f} "
            f"| {r['with_sources']:.2f} | {r['tokens']:.0f} / {r['max_tokens']} |"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------- latency
def clustered(n: int, dim: int, seed: int, centres: int = 200, spread: float = 0.9) -> np.ndarray:
    """Unit vectors around ``centres`` random directions (a stand-in for sentence embeddings)."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, dim))
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    x = c[rng.integers(0, centres, n)] + spread * rng.normal(size=(n, dim)) / math.sqrt(dim)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def probes(mem: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Candidates from near-duplicates of stored facts to unrelated ones."""
    rng = np.random.default_rng(seed)
    noise = rng.choice([0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 2.0], size=n)
    base = mem[rng.integers(0, len(mem), n)]
    x = base + noise[:, None] * rng.normal(size=base.shape) / math.sqrt(mem.shape[1]) * 4
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def latency(sizes: Sequence[int], n_cands: int, dim: int = 384) -> list[dict[str, Any]]:
    """Part 3: per-decision latency, exact vs approximate, and their agreement."""
    from sgmem.gate import GateConfig, GateState, NoveltyGate, estimate_kappa, vmf_score
    from sgmem.gate.blas import single_thread_blas

    out = []
    for n in sizes:
        mem = clustered(n, dim, seed=n)
        cands = probes(mem, n_cands, seed=n + 1)
        calib = probes(mem, n_cands, seed=n + 2)
        total = mem.astype(np.float64).sum(axis=0)
        kappa = estimate_kappa(total, n, dim)
        with single_thread_blas():
            tau_noop = float(np.quantile([vmf_score(c, mem, kappa).score for c in calib], 0.8))
        row: dict[str, Any] = {"memories": n, "candidates": n_cands, "tau_noop": tau_noop}
        actions: dict[str, dict[str, list[str]]] = {}
        scores: dict[str, list[float]] = {}
        for scorer in ("exact", "approx"):
            for mode in ("adaptive", "binary"):
                gate = NoveltyGate(GateConfig(scorer=scorer, mode=mode, tau_noop=tau_noop))  # type: ignore[arg-type]
                st = GateState(dim=dim)
                st.load_facts(list(range(n)), mem)
                st.sum_vec = total.copy()
                st.kappa = kappa
                if scorer == "approx":
                    t = time.perf_counter()
                    gate.attach_index(st, None, 0)
                    row["index_build_s"] = time.perf_counter() - t
                view = gate.fork(st)
                view.tau = 0.0255  # the steady state τ_min + τ_0 α^t after ~60 steps
                lat = []
                cpu = []
                acts = []
                with single_thread_blas():
                    for c in cands:
                        t, tc = time.perf_counter(), time.thread_time()
                        d = gate.decide(view, c)
                        cpu.append((time.thread_time() - tc) * 1e3)
                        lat.append((time.perf_counter() - t) * 1e3)
                        acts.append(d.action)
                        if mode == "binary":
                            scores.setdefault(scorer, []).append(d.score)
                            if scorer == "approx":
                                row.setdefault("bounds", []).append(d.bound)
                actions.setdefault(mode, {})[scorer] = acts
                row[f"{scorer}_{mode}_ms_mean"] = statistics.fmean(lat)
                row[f"{scorer}_{mode}_ms_p95"] = sorted(lat)[int(0.95 * (len(lat) - 1))]
                # CPU time of the deciding thread: what a decision costs, whatever else runs on the machine
                row[f"{scorer}_{mode}_cpu_ms_mean"] = statistics.fmean(cpu)
        for mode in ("adaptive", "binary"):
            a, b = actions[mode]["exact"], actions[mode]["approx"]
            row[f"agreement_{mode}"] = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
            row[f"actions_{mode}"] = {k: a.count(k) for k in ("add", "update", "noop")}
        ds = np.asarray(scores["exact"]) - np.asarray(scores["approx"])
        bounds = np.asarray(row.pop("bounds"))
        row["score_gap_mean"] = float(ds.mean())
        row["score_gap_max"] = float(ds.max())
        row["score_gap_min"] = float(ds.min())
        row["bound_median"] = float(np.median(bounds))
        row["within_bound"] = float(np.mean(ds <= bounds + 1e-6))  # float32 cosines: 1e-6 of rounding
        out.append(row)
        print(render_latency([row]).splitlines()[-1], file=sys.stderr, flush=True)
    return out


def render_latency(rows: list[dict[str, Any]]) -> str:
    lines = [
        "Gate decision latency per candidate (synthetic clustered vectors, d = 384, 1 BLAS thread; "
        "wall time depends on the machine's load, CPU time of the deciding thread less so)",
        "",
        "| facts | exact: wall ms mean / p95, CPU ms | approx: wall ms mean / p95, CPU ms | speed-up (CPU) "
        "| agreement adaptive | agreement binary | s_exact − s_approx mean / max | within stated bound | index build s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['memories']:,} | {r['exact_binary_ms_mean']:.3f} / {r['exact_binary_ms_p95']:.3f}, "
            f"{r['exact_binary_cpu_ms_mean']:.3f} | {r['approx_binary_ms_mean']:.3f} / {r['approx_binary_ms_p95']:.3f}, "
            f"{r['approx_binary_cpu_ms_mean']:.3f} "
            f"| {r['exact_binary_cpu_ms_mean'] / max(r['approx_binary_cpu_ms_mean'], 1e-9):.1f}× "
            f"| {100 * r['agreement_adaptive']:.1f} % | {100 * r['agreement_binary']:.1f} % "
            f"| {r['score_gap_mean']:.4f} / {r['score_gap_max']:.4f} | {100 * r['within_bound']:.1f} % "
            f"| {r.get('index_build_s', float('nan')):.1f} |"
        )
    return "\n".join(lines)


# -------------------------------------------------------------------- plot
def plot_trace(trace: Sequence[tuple[int, str, float, float, float]], delta: float, path: Path, title: str) -> Path:
    """τ_t, τ_t + δ and every candidate's novelty over a stream (the paper's Figure 3)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(trace))
    nu = np.array([t[2] for t in trace])
    tau = np.array([t[3] for t in trace])
    act = [t[1] for t in trace]
    fig, ax = plt.subplots(figsize=(10, 4.2), dpi=120)
    colours = {"add": "#1f77b4", "update": "#ff7f0e", "noop": "#d62728"}
    for a, c in colours.items():
        sel = [i for i, v in enumerate(act) if v == a]
        ax.scatter(x[sel], nu[sel], s=7, c=c, alpha=0.6, label=f"{a} ({len(sel)})")
    ax.plot(x, tau, c="k", lw=1.4, label="τ_t (EMA threshold)")
    ax.plot(x, tau + delta, c="k", lw=0.9, ls="--", label="τ_t + δ (Update band)")
    ax.set_xlabel("candidate fact, in stream order")
    ax.set_ylabel("novelty ν = (1 − s_vMF) / 2")
    ax.set_ylim(0, max(0.6, float(np.quantile(nu, 0.99)) + 0.05) if len(nu) else 1)
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


# -------------------------------------------------------------------- the part
TITLE = "Novelty gate (SAGE): routing, store size, recall, LLM calls, latency"


def measure(convs: Sequence[Any], embedder: Any, *, sizes: Sequence[int], candidates: int,
            roles: tuple[str, ...] = ("user",), only: Sequence[str] = PARTS, plots: Path | None = None,
            progress: Any = None) -> dict[str, Any]:
    """Every measurement of this module that ``only`` names; the trace plot into ``plots``."""
    say = progress or (lambda s: None)
    report: dict[str, Any] = {}
    if "routing" in only or "plot" in only:
        say("gate: routing")
        t0 = time.perf_counter()
        res = routing(convs, embedder, roles)
        res["seconds"] = time.perf_counter() - t0
        if "plot" in only and plots is not None:
            import sgmem

            first = convs[0].sample_id
            plot_trace(res["adaptive"]["trace"][first], sgmem.GateConfig().delta, plots / "gate_trace.png",
                       f"SAGE adaptive gate on LoCoMo {first} (no LLM, paper defaults)")
            report["plot"] = "gate_trace.png"
        report["routing"] = _summarise(res)
    if "llm" in only:
        say("gate: LLM calls")
        runs = {"adaptive gate": llm_calls(convs, embedder)}
        tau_of = report.get("routing", {}).get("binary", {}).get("tau_of")
        if tau_of:
            runs["binary gate"] = llm_calls(convs, embedder, tau_of)
        report["llm"] = runs
    if "context" in only:
        say("gate: context recall")
        report["context"] = context_recall(convs, embedder)
    if "latency" in only:
        say(f"gate: decision latency at {list(sizes)}")
        report["latency"] = latency(sizes, candidates)
    return report


def render(report: dict[str, Any]) -> str:
    text = []
    if "routing" in report:
        text.append(render_routing(report["routing"]))
    if "llm" in report:
        text.append(render_llm(report["llm"]))
    if "context" in report:
        text.append(render_context(report["context"]))
    if "latency" in report:
        text.append(render_latency(report["latency"]))
    return "\n\n".join(text)


def run_part(ctx: Any) -> dict[str, Any]:
    from sgmem.eval.locomo import load_locomo

    if not ctx.locomo.exists():
        return {"missing": str(ctx.locomo)}
    convs = load_locomo(ctx.locomo, ctx.args.limit)
    sizes = sorted({n for n in ctx.args.sizes if n <= 100_000}) or [min(ctx.args.sizes)]
    return measure(convs, ctx.embedder(), sizes=sizes, candidates=ctx.args.gate_candidates, plots=ctx.plots,
                   progress=ctx.progress)


HOW = (
    "SAGE's novelty gate decides, for each generated fact, whether to add it, merge it into a stored one "
    "(Update) or drop it (Noop). Every LoCoMo conversation is ingested one session per add, with the LLM-free "
    "fact candidates; the baseline is the gate off (every candidate stored). The binary gate's τ_noop is "
    "calibrated on the other half of the conversations (the p80 of their novelty scores). LLM calls are counted "
    "with a scripted extractor standing in for the model, against Mem0-style routing (one routing call per "
    "extraction batch with facts). Decision latency uses synthetic clustered vectors; the approximate scorer "
    "(IVF top-k) is compared with the exact one on the same candidates. The trace plot shows τ, τ + δ and "
    "each candidate's novelty over the first conversation (the paper's Figure 3)."
)


def render_part(raw: dict[str, Any]) -> str:
    if "missing" in raw:
        return f"Not run: no LoCoMo file at `{raw['missing']}` (pass `--locomo PATH`)."
    out = [HOW, render(raw)]
    if raw.get("plot"):
        out.append(f"![gate trace](plots/{raw['plot']})")
    return "\n\n".join(out)


# -------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None, embedder: Any = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gate", description=(__doc__ or "").splitlines()[0])
    p.add_argument("--locomo", default=str(default_locomo_path()))
    p.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    p.add_argument("--cache", default=None, help="embedding cache directory")
    p.add_argument("--roles", default="user", help="fact roles, comma-separated")
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    p.add_argument("--candidates", type=int, default=300, help="candidates timed per size")
    p.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    p.add_argument("--out", default=str(HERE / "out"))
    args = p.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    convs: list[Any] = []
    if set(args.only) & {"routing", "llm", "plot", "context"}:
        from sgmem.eval.locomo import load_locomo

        convs = load_locomo(args.locomo, args.limit)
        if embedder is None:
            from sgmem.embed import default_embedder

            embedder = default_embedder()
            if args.cache:
                from sgmem.eval import CachingEmbedder

                embedder = CachingEmbedder(embedder, args.cache)
    report = measure(convs, embedder, sizes=args.sizes, candidates=args.candidates,
                     roles=tuple(args.roles.split(",")), only=args.only, plots=out_dir)
    report["command"] = "python -m benchmarks.gate " + " ".join(argv if argv is not None else sys.argv[1:])
    if hasattr(embedder, "save"):
        embedder.save()
    md = render(report)
    print(md)
    (out_dir / "gate.md").write_text(md + "\n", encoding="utf-8")
    (out_dir / "gate.json").write_text(json.dumps(report, indent=2, default=float), encoding="utf-8")
    return report


if __name__ == "__main__":  # pragma: no cover
    main()
