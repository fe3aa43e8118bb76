"""The derived-memory write path: candidates → novelty gate → facts, summaries, insights.

:class:`DerivedEngine` is owned by :class:`sgmem.Memory`, which calls it at
three points of ``add``:

1. :meth:`DerivedEngine.plan`, before the store's write lock: fact candidates
   (LLM extraction, or the LLM-free sentences whose vectors the core already
   computed), routing through the gate on a copy-on-write view of the scope's
   state, LLM merges for Updates, LLM summaries and insights for the sessions
   due. Every LLM call and embedding happens here.
2. :meth:`DerivedEngine.apply`, inside the add's transaction, after its
   messages and sentences are inserted: stores the plan (facts, versions,
   links, decisions, gate state, usage) and the extractive summaries. If
   another writer changed the scope's derived memory since the plan, the
   candidates are routed again here against the fresh state.
3. :meth:`DerivedEngine.committed`, after the commit: the cached state and
   search tables follow.

Raw messages are never gated; only facts are. Summaries are one per session,
insights one set per session (LLM) or per scope (clusters).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..cache import ByteLRU, CacheView
from ..config import Config
from ..embed.base import Embedder, check_embeddings
from ..gate.approx import IVFScorer
from ..gate.blas import single_thread_blas
from ..gate.gate import Decision, GateState, GateView, NoveltyGate
from ..gate.threshold import ADD, NOOP, UPDATE
from ..llm import LLMUsage
from ..retrieval.dense import scan_threads
from ..retrieval.server import gate_nearest
from ..store.batch import ahead
from ..store.sqlite import SQLiteStore
from ..types import Hit, MemoryVersion
from . import store as sql
from .context import DerivedItem
from .extract import Candidate, llm_fact_candidates, llm_insights, llm_summary, rule_fact_candidates
from .index import ScopeCache, load_cache, load_tables
from .merge import llm_merge, rule_merge
from .reads import after_delete, before_delete, context_items, derived_hits, history, parse_memory_id
from .sessions import (
    REMOVED,
    replace_cluster_insights,
    replace_session_insights,
    session_facts,
    session_lines,
    summary_row,
    upsert_summary,
)

__all__ = ["Applied", "DerivedEngine", "FactOp", "Plan"]


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return (v / n if n > 0 else v).astype(np.float32)


@dataclass
class FactOp:
    """One routed candidate: ``row`` is the view row added, merged into, or covering it."""

    action: str
    cand: Candidate
    decision: Decision
    row: int
    step: int
    text: str | None = None
    vec: np.ndarray | None = None
    cause: str = ""


@dataclass
class Plan:
    """A derived-memory write, prepared outside the lock."""

    scope_id: int | None
    base_version: int
    state: GateState
    cands: list[Candidate]
    view: GateView | None = None
    ops: list[FactOp] = field(default_factory=list)
    summaries: dict[tuple[str, str], tuple[str, np.ndarray, int]] = field(default_factory=dict)
    insights: dict[tuple[str, str], list[tuple[datetime, str, np.ndarray]]] = field(default_factory=dict)
    usage: LLMUsage = field(default_factory=LLMUsage)
    embedded: int = 0
    ms: float = 0.0


@dataclass
class Applied:
    """What :meth:`DerivedEngine.apply` stored, for the cache and the AddResult."""

    scope_id: int
    version: int
    plan: Plan
    new_ids: list[int] = field(default_factory=list)
    fact_meta: dict[int, tuple[float, str]] = field(default_factory=dict)
    trained: IVFScorer | None = None
    summaries: int = 0
    insights: int = 0
    summary_keys: list[tuple[str, str]] = field(default_factory=list)  # (thread, session) of changed summaries
    summary_rows: list[tuple[int, float, str, np.ndarray]] = field(default_factory=list)  # theirs, as stored
    summaries_removed: bool = False  # a summary was deleted: the cache's summaries are reloaded
    counts: dict[str, int] = field(default_factory=lambda: {ADD: 0, UPDATE: 0, NOOP: 0})


class DerivedEngine:
    """Generated memory and its novelty gate for one :class:`sgmem.Memory`."""

    def __init__(
        self, store: SQLiteStore, embedder: Embedder, config: Config, llm: Any, caches: ByteLRU | None = None
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.dcfg = config.derived
        self.llm = llm
        self.gate = NoveltyGate(config.gate.resolved(self._use_llm("merge")))
        self.dim = int(embedder.dim)
        # per-scope state, in the Memory's byte-bounded LRU (Config.cache_bytes) shared with its indexes
        self._caches = CacheView(caches if caches is not None else ByteLRU(config.cache_bytes), "derived")
        self._lock = threading.RLock()  # guards the caches (and their shared IVF index)

    # ------------------------------------------------------------------ utils
    def _use_llm(self, task: str) -> bool:
        return self.llm is not None and task in self.dcfg.llm_tasks

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        bs = self.config.embed_batch_size
        for i in range(0, len(texts), bs):
            batch = texts[i : i + bs]
            out.append(check_embeddings(self.embedder, batch, self.embedder.embed(batch)))
        return np.concatenate(out).astype(np.float32)

    @property
    def active(self) -> bool:
        """Whether adds produce any derived memory."""
        d = self.dcfg
        return d.facts or d.summaries or d.insights != "off"

    def cache(self, scope_id: int | None) -> ScopeCache:
        """The scope's committed cache, reloaded when SQLite has moved on.

        Lock order: the store's lock, then this engine's (never the reverse).
        """
        with self.store.read() as conn:
            if scope_id is None:
                return load_cache(conn, None, self.dim, self.gate)
            version = sql.state_version(conn, scope_id)
            with self._lock:
                c = self._caches.get(scope_id)
                if c is not None and c.version == version:
                    return c
            c = load_cache(conn, scope_id, self.dim, self.gate)
            c.state.nearest = gate_nearest(self.store, scope_id, c.state)
            with self._lock:
                self._caches[scope_id] = c
            return c

    def drop(self, scope_id: int) -> None:
        with self._lock:
            self._caches.pop(scope_id, None)

    # ------------------------------------------------------------------- plan
    def plan(self, scope_id: int | None, thread: str, prep: Any, exclude: frozenset[int] = frozenset()) -> Plan | None:
        """Everything slow about an add's derived memory, done before the write lock.

        ``exclude``: message rows that the same transaction deletes first
        (:meth:`sgmem.Memory.replace`); LLM summaries and insights never see them.
        """
        if not self.active or not prep.messages:
            return None
        t0 = time.perf_counter()
        c = self.cache(scope_id)
        usage = LLMUsage()
        cands: list[Candidate] = []
        embedded = 0
        if self.dcfg.facts:
            if self._use_llm("facts"):
                cands = llm_fact_candidates(self.llm, prep, self.dcfg, usage, self._embed)
                embedded += sum(1 for x in cands if x.method == "llm")
            else:
                cands = rule_fact_candidates(prep, self.dcfg)
        plan = Plan(scope_id, c.version, c.state, cands, usage=usage, embedded=embedded)
        with single_thread_blas():
            self._route(plan, prep, lambda ids: self._texts_outside(scope_id, ids))
        self._plan_sessions(plan, scope_id, thread, prep, exclude)
        plan.ms = (time.perf_counter() - t0) * 1e3
        return plan

    def _texts_outside(self, scope_id: int | None, ids: list[int]) -> dict[int, str]:
        if scope_id is None:  # a new scope holds no memory to merge into
            return {}
        with self.store.read() as conn:
            return sql.texts_of(conn, scope_id, ids)

    def _route(self, plan: Plan, prep: Any, texts: Callable[[list[int]], dict[int, str]]) -> None:
        """Route the plan's candidates through the gate, message by message (§2.5)."""
        view = self.gate.fork(plan.state, self._lock)
        plan.view, plan.ops = view, []
        by_pos: dict[int, list[Candidate]] = {}
        for cand in plan.cands:
            by_pos.setdefault(cand.pos, []).append(cand)
        step_each_add = self.config.gate.step_messages == 0
        # one batched index search, or the exact cosines on the scan threads (same decisions either way)
        threads = scan_threads(self.config, self.config.dense_scan_min_sentences)
        self.gate.prefetch(view, [cand.vec for cand in plan.cands], threads)
        new_texts: dict[int, str] = {}
        to_embed: list[FactOp] = []  # merged texts, embedded together after routing
        last_update: dict[int, FactOp] = {}
        for pos in range(len(prep.messages)):
            if (step_each_add and pos == 0) or (not step_each_add and self.gate.step_due(view)):
                self.gate.begin_step(view)
            for cand in by_pos.get(pos, ()):
                d = self.gate.decide(view, cand.vec)
                if d.action == ADD:
                    row = self.gate.added(view, cand.vec)
                    new_texts[row] = cand.text
                    plan.ops.append(FactOp(ADD, cand, d, row, view.step))
                elif d.action == UPDATE:
                    row = d.nearest
                    existing = new_texts.get(row)
                    if existing is None:
                        existing = texts([plan.state.ids[row]]).get(plan.state.ids[row], "")
                    merged, cause = self._merge(existing, cand.text, plan.usage)
                    fresh = merged not in (existing, cand.text)
                    if merged == existing:
                        vec = np.asarray(view.vector(row), dtype=np.float32)
                    elif merged == cand.text:
                        vec = np.asarray(cand.vec, dtype=np.float32)
                    else:  # [D] the normalised sum (kept, or standing in until the batch below embeds the text)
                        vec = _unit(np.asarray(view.vector(row), dtype=np.float64) + cand.vec)
                    self.gate.updated(view, row, vec)
                    new_texts[row] = merged
                    op = FactOp(
                        UPDATE, cand, d, row, view.step, merged, vec, cause if merged != existing else "contained"
                    )
                    plan.ops.append(op)
                    last_update[row] = op
                    if fresh and (cause == "merge-llm" or self.dcfg.rule_merge_vector == "embed"):
                        to_embed.append(op)
                else:
                    self.gate.skipped(view)
                    plan.ops.append(FactOp(NOOP, cand, d, d.nearest, view.step))
            view.msg_count += 1
        if to_embed:
            # one embedding call for every merged text of the add (a call per merge cost ~0.5 s
            # each under load); the stored vector of a merged fact is always its text's embedding
            vecs = self._embed([op.text or "" for op in to_embed])
            plan.embedded += len(to_embed)
            for op, v in zip(to_embed, vecs, strict=True):
                op.vec = v
                if last_update[op.row] is op:
                    self.gate.revector(view, op.row, v)

    def _merge(self, existing: str, new: str, usage: LLMUsage) -> tuple[str, str]:
        if self._use_llm("merge"):
            out = llm_merge(self.llm, existing, new, usage, strict=self.dcfg.merge_prompt == "strict")
            if out is not None:
                return out, "merge-llm"
        return rule_merge(existing, new), "merge-rule"

    def _plan_sessions(self, plan: Plan, scope_id: int | None, thread: str, prep: Any, exclude: frozenset[int]) -> None:
        """LLM summaries and insights of the sessions due (§1.2 step 2 [C]: one call per session)."""
        want_summary = self.dcfg.summaries and self._use_llm("summary")
        want_insights = self.dcfg.insights == "auto" and self._use_llm("insights")
        if not (want_summary or want_insights):
            return
        touched: dict[str, list[int]] = {}
        for i, m in enumerate(prep.messages):
            touched.setdefault(m.session, []).append(i)
        due: list[tuple[str, list[str], int, datetime]] = []
        with self.store.read() as conn:
            last = _last_kept(conn, scope_id, thread, exclude) if scope_id is not None else None
            closing = last if last is not None and last not in touched else None
            cut: set[str] = set()  # sessions that lose messages to ``exclude``
            for session in ([closing] if closing else []) + list(touched):
                stored = session_lines(conn, scope_id, thread, session) if scope_id is not None else []
                if exclude and any(mid in exclude for mid, _, _ in stored):
                    stored = [x for x in stored if x[0] not in exclude]
                    cut.add(session)
                lines = [ln for _, ln, _ in stored] + [
                    f"{prep.messages[i].name or prep.messages[i].role}: {prep.messages[i].content}"
                    for i in touched.get(session, [])
                ]
                row = summary_row(conn, scope_id, thread, session) if scope_id is not None else None
                covered = int(row[3].get("covered", 0)) if row is not None and row[2] == "llm" else 0
                if session in cut:
                    covered = 0  # the delete recomputes its summary from what is left
                # an open session is (re)summarised once it has enough new messages; a session
                # that just closed (a later one started in its thread) once more if anything is new
                need = 1 if session == closing else self.dcfg.summary_refresh_messages
                if len(lines) - covered < need:
                    continue
                first = stored[0][2] if stored else prep.messages[touched[session][0]].at
                due.append((session, lines, len(lines), first))
            facts_by_session = {
                s: [
                    (at, text)
                    for fid, at, text in session_facts(conn, scope_id, thread, s)
                    if not (exclude and set(sql.origin_sources(conn, scope_id, fid)) & exclude)
                ]
                if scope_id is not None
                else []
                for s, _, _, _ in due
            }
        for session, lines, count, first in due:
            if want_summary:
                text = llm_summary(self.llm, lines, first.date().isoformat(), plan.usage)
                if text is not None:
                    plan.summaries[(thread, session)] = (text, self._embed([text])[0], count)
                    plan.embedded += 1
            if want_insights:
                facts = facts_by_session[session] + [
                    (op.cand.at, op.text or op.cand.text)
                    for op in plan.ops
                    if op.action != NOOP and op.cand.session == session
                ]
                if len(facts) >= 2:
                    got = llm_insights(self.llm, facts, plan.usage)
                    if got:
                        vecs = self._embed([t for _, t in got])
                        plan.embedded += len(got)
                        plan.insights[(thread, session)] = [(at, t, v) for (at, t), v in zip(got, vecs, strict=True)]

    # ------------------------------------------------------------------ apply
    def apply(
        self,
        conn: Any,
        scope_id: int,
        thread: str,
        prep: Any,
        msg_ids: Sequence[int],
        plan: Plan | None,
        other: Any = None,
        version_ahead: Callable[[], list[Any]] | None = None,
    ) -> Applied | None:
        """Store the plan inside the add's transaction (re-routing if the scope moved on).

        ``other`` is another write-path plan whose ``usage`` (LLM calls of the
        keyword pyramid) is added to the scope's LLM totals. ``version_ahead``:
        the scope's state version, sent ahead (:meth:`version_ahead`).
        """
        extra = _foreign_usage(other)
        if plan is None:
            if extra.calls or extra.fallbacks:
                sql.add_usage(conn, scope_id, extra)
            return None
        t0 = time.perf_counter()
        plan.usage.merge(extra)
        if version_ahead is not None:
            rows = version_ahead()
            version = int(rows[0][0]) if rows else 0
        else:
            version = sql.state_version(conn, scope_id)
        if version != plan.base_version or plan.view is None:
            fresh = load_cache(conn, scope_id, self.dim, self.gate)
            fresh.state.nearest = gate_nearest(self.store, scope_id, fresh.state)
            plan.state, plan.base_version = fresh.state, version
            with single_thread_blas():
                self._route(plan, prep, lambda ids: sql.texts_of(conn, scope_id, ids))
        view = plan.view
        assert view is not None
        out = Applied(scope_id, version + 1, plan)
        row_id: Callable[[int], int] = lambda r: plan.state.ids[r] if r < view.n_base else out.new_ids[r - view.n_base]  # noqa: E731
        ts = sql.now_iso()
        # the decision log and the support links are written after the loop, each in one executemany: nothing
        # in the loop reads them, and a support link never replaces an origin one (INSERT OR IGNORE), so the
        # rows stored are those of writing each at once
        decisions: list[tuple[Any, ...]] = []
        supports: list[tuple[int, int]] = []
        for op in plan.ops:
            cand = op.cand
            src = [int(msg_ids[p]) for p in cand.sources]
            detail = {
                "score": round(op.decision.score, 6),
                "novelty": round(op.decision.novelty, 6),
                "tau": op.decision.tau,
            }
            if op.action == ADD:
                mid = sql.insert_memory(
                    conn,
                    scope_id,
                    "fact",
                    cand.text,
                    cand.vec,
                    cand.at,
                    thread,
                    cand.session,
                    cand.speaker,
                    cand.method,
                    src,
                    "add",
                    detail,
                    ts,
                )
                out.new_ids.append(mid)
                out.fact_meta[mid] = (cand.at.timestamp(), thread)
            elif op.action == UPDATE:
                mid = row_id(op.row)
                if op.cause == "contained":
                    supports.extend((mid, m) for m in src)
                else:
                    assert op.text is not None and op.vec is not None
                    updated = sql.update_memory(
                        conn,
                        scope_id,
                        mid,
                        op.text,
                        op.vec,
                        cand.at,
                        op.cause,
                        src,
                        {**detail, "candidate": cand.text},
                        ts=ts,
                    )
                    out.fact_meta[mid] = (updated.at_ts, updated.thread)
            else:
                mid = row_id(op.row)
                supports.extend((mid, m) for m in src)
            out.counts[op.action] += 1
            decisions.append(sql.decision_row(scope_id, op.step, op.decision, mid, cand.text, src, ts))
        sql.add_supports(conn, scope_id, supports)
        sql.log_decisions(conn, decisions)
        centroids: Any = None
        if self.gate.index_due(plan.state, view.n):
            with single_thread_blas():
                out.trained = self.gate.train_index(view.materialize())
            centroids = (out.trained.centroids, out.trained.n_train)
            out.trained.saved = True
        elif plan.state.ivf is not None and not plan.state.ivf.saved:
            centroids = (plan.state.ivf.centroids, plan.state.ivf.n_train)
            plan.state.ivf.saved = True
        sql.save_state(conn, scope_id, view, out.version, centroids)  # type: ignore[arg-type]
        self._apply_sessions(conn, scope_id, thread, prep, plan, out)
        sql.add_usage(conn, scope_id, plan.usage)
        plan.ms += (time.perf_counter() - t0) * 1e3
        return out

    @staticmethod
    def result(plan: Plan | None, applied: Applied | None, other: Any = None) -> dict[str, Any]:
        """The :class:`sgmem.AddResult` fields of an add's derived memory and LLM use."""
        usage = LLMUsage()
        if plan is not None:
            usage.merge(plan.usage)  # already holds ``other``'s usage once applied
        if applied is None:
            usage.merge(_foreign_usage(other))
        counts = applied.counts if applied is not None else {}
        return {
            "facts_added": counts.get(ADD, 0),
            "facts_updated": counts.get(UPDATE, 0),
            "facts_skipped": counts.get(NOOP, 0),
            "summaries": applied.summaries if applied is not None else 0,
            "insights": applied.insights if applied is not None else 0,
            "llm_calls": usage.calls,
            "llm_prompt_tokens": usage.prompt_tokens,
            "llm_completion_tokens": usage.completion_tokens,
            "llm_ms": usage.ms,
            "llm_fallbacks": usage.fallbacks,
        }

    def version_ahead(self, conn: Any, scope_id: int, plan: Plan | None) -> Callable[[], list[Any]] | None:
        """Send the read of the scope's state version that :meth:`apply` starts with (:func:`sgmem.store.batch.ahead`)."""
        if plan is None:
            return None
        return ahead(conn, "SELECT version FROM gate_state WHERE scope_id = ?", (scope_id,))

    def _apply_sessions(self, conn: Any, scope_id: int, thread: str, prep: Any, plan: Plan, out: Applied) -> None:
        sessions = list(dict.fromkeys(m.session for m in prep.messages))
        for key in plan.summaries:
            if key[1] not in sessions:
                sessions.append(key[1])
        if self.dcfg.summaries:
            for s in sessions:
                row = upsert_summary(
                    conn,
                    scope_id,
                    thread,
                    s,
                    self.dcfg.summary_sentences,
                    plan.summaries.get((thread, s)),
                    roles=self.dcfg.fact_roles,
                    min_tokens=self.dcfg.fact_min_tokens,
                )
                if row is not None:
                    out.summaries += 1
                    out.summary_keys.append((thread, s))
                    if row == REMOVED:  # a rule summary left with no fact sentence: gone
                        out.summaries_removed = True
                    else:
                        out.summary_rows.append(row)
        for (th, s), items in plan.insights.items():
            out.insights += replace_session_insights(conn, scope_id, th, s, items)
        if self.dcfg.insights == "cluster" and plan.view is not None:
            n = plan.view.n
            last = conn.execute("SELECT insight_n FROM gate_state WHERE scope_id = ?", (scope_id,)).fetchone()
            done = int(last[0]) if last else 0
            if n >= self.dcfg.insight_min_cluster and (done == 0 or n >= done * 1.1):
                ids = list(plan.state.ids[: plan.view.n_base]) + out.new_ids
                out.insights += replace_cluster_insights(
                    conn,
                    scope_id,
                    ids,
                    plan.view.materialize(),
                    self.dcfg.insight_min_cosine,
                    self.dcfg.insight_min_cluster,
                )
                conn.execute("UPDATE gate_state SET insight_n = ? WHERE scope_id = ?", (n, scope_id))

    # ---------------------------------------------------------------- commit
    def committed(self, scope_id: int, applied: Applied | None) -> None:
        """After the commit: the cached state and tables follow the stored plan."""
        if applied is None:
            return
        plan = applied.plan
        with self.store.read() as conn:  # reads first: the engine's lock is taken last
            fresh: dict[str, Any] = {}
            changed: list[tuple[int, float, str, np.ndarray]] = []
            if self._caches.get(scope_id) is None:
                fresh = load_tables(conn, scope_id, self.dim, ("fact", "summary", "insight"))
            else:
                # only what this add changed (reloading every summary cost O(sessions) per add), as the
                # transaction stored it: nothing to read back
                changed = sorted(applied.summary_rows, key=lambda r: r[0])
                # insights are replaced as a set (a session's, or every cluster's); summaries once one went
                kinds = ("insight",) * bool(applied.insights) + ("summary",) * applied.summaries_removed
                if kinds:
                    fresh = load_tables(conn, scope_id, self.dim, kinds)
                if "summary" in fresh:
                    changed = []
        with self._lock:
            cached = self._caches.get(scope_id)
            if (cached is not None and cached.state is not plan.state) or (cached is None and "fact" not in fresh):
                self._caches.pop(scope_id, None)
                return
            if plan.view is not None:
                self.gate.commit(plan.state, plan.view, applied.new_ids, applied.trained)
            plan.state.version = applied.version
            if plan.state.nearest is None:  # a new scope's state: the server's look-ups now have its id
                plan.state.nearest = gate_nearest(self.store, scope_id, plan.state)
            if cached is None:  # a new scope: its tables are what was just stored
                tables = fresh
            else:
                tables = dict(cached.tables)
                facts = tables["fact"]
                for mid, (ts, th) in applied.fact_meta.items():
                    r = facts.row.get(mid)
                    if r is None:
                        facts.append(mid, ts, th)
                    else:
                        facts.at_ts[r] = ts
                if not all(tables["summary"].put(*row) for row in changed):  # pragma: no cover - ids never go back
                    self._caches.pop(scope_id, None)
                    return
                tables.update(fresh)
            if len(tables["fact"].ids) != plan.state.n:  # pragma: no cover - defensive: rebuild from SQLite
                self._caches.pop(scope_id, None)
                return
            self._caches[scope_id] = ScopeCache(scope_id, applied.version, plan.state, tables)

    # ------------------------------------------------------------------ reads
    def hits(
        self,
        scope_id: int,
        kinds: Sequence[str],
        q: np.ndarray,
        k: int,
        threads: list[str] | None,
        since: datetime | None,
        until: datetime | None,
        exclude: Sequence[str] | None,
        min_cos: float = 0.0,
    ) -> list[Hit]:
        """Top-``k`` of each derived kind in ``kinds`` (SGMem §1.3 step 2), cosine ≥ ``min_cos``."""
        c = self.cache(scope_id)
        with self._lock:  # the cache's arrays grow under this lock
            cands = {kind: _at_least(c.search(kind, q, threads, since, until), min_cos) for kind in kinds}
        with self.store.read() as conn:
            return derived_hits(cands, conn, k, set(exclude) if exclude else None, scope_id)

    def context_items(
        self, scope_id: int, q: np.ndarray, exclude: Sequence[str] | None, min_cos: float = 0.0
    ) -> list[DerivedItem]:
        """The generated memory :meth:`sgmem.Memory.context` may add (``DerivedConfig.context_kinds``)."""
        kinds = self.dcfg.context_kinds
        if not kinds or self.dcfg.context_k == 0:
            return []
        c = self.cache(scope_id)
        with self._lock:
            cands = {kind: _at_least(c.search(kind, q, None, None, None), min_cos) for kind in kinds}
        with self.store.read() as conn:
            return context_items(cands, conn, self.dcfg.context_k, set(exclude) if exclude else None, scope_id)

    def history(self, scope_id: int, memory_id: Any) -> list[MemoryVersion] | None:
        """Every version of a generated memory of the scope (None if it is not there)."""
        mid = parse_memory_id(memory_id)
        with self.store.read() as conn:
            return history(conn, scope_id, mid)

    def stats(self, conn: Any, scope_id: int) -> dict[str, Any]:
        """Counts, gate state and LLM usage of a scope, for :class:`sgmem.ScopeStats`."""
        counts = sql.counts_of(conn, scope_id)
        usage = sql.usage_of(conn, scope_id)
        gate: dict[str, Any] = {}
        row = conn.execute(
            "SELECT n, step, msg_count, tau, kappa, adds, updates, noops FROM gate_state WHERE scope_id = ?",
            (scope_id,),
        ).fetchone()
        if row is not None:
            gate = dict(
                zip(("facts", "step", "messages", "tau", "kappa", "adds", "updates", "noops"), row, strict=True)
            )
            gate["mode"] = self.gate.config.mode  # how this Memory routes ("auto" resolved)
            if gate["mode"] == "binary":
                gate["tau_noop"] = self.gate.config.tau_noop
        return {
            "facts": counts.get("fact", 0),
            "summaries": counts.get("summary", 0),
            "insights": counts.get("insight", 0),
            "gate": gate,
            "llm_calls": usage.calls,
            "llm_prompt_tokens": usage.prompt_tokens,
            "llm_completion_tokens": usage.completion_tokens,
            "llm_ms": usage.ms,
            "llm_fallbacks": usage.fallbacks,
        }

    # ----------------------------------------------------------------- delete
    def before_delete(self, conn: Any, scope_id: int, thread: str | None, ext_ids: Sequence[str] | None) -> Any:
        """What a delete will take from derived memory (call before the messages go)."""
        return before_delete(conn, scope_id, self.store.message_rows(scope_id, thread, ext_ids))

    def after_delete(self, conn: Any, scope_id: int, pending: Any) -> dict[str, int]:
        """Apply the delete policy of :mod:`sgmem.derived.reads`; receipt counts."""
        deleted, affected = pending
        removed, revised, facts_changed = after_delete(
            conn,
            scope_id,
            deleted,
            affected,
            self.dcfg.summary_sentences,
            self.dcfg.fact_roles,
            self.dcfg.fact_min_tokens,
        )
        if deleted and conn.execute("SELECT 1 FROM gate_state WHERE scope_id = ?", (scope_id,)).fetchone():
            version = sql.state_version(conn, scope_id) + 1
            if facts_changed:
                st, _, _ = sql.load_state(conn, scope_id, self.dim, self.config.gate.pca_dim)
                self.gate.reset_facts(st, list(st.ids), st.vectors.copy())
                self.gate.attach_index(st, None, 0)
                sql.save_state(conn, scope_id, st, version, (st.ivf.centroids, st.ivf.n_train) if st.ivf else False)
            else:
                sql.bump_version(conn, scope_id)
            # cluster insights that lost a source were deleted: recompute them at the next add
            conn.execute("UPDATE gate_state SET insight_n = 0 WHERE scope_id = ?", (scope_id,))
        self.drop(scope_id)
        return {"derived": removed, "derived_revised": revised}


def _last_kept(conn: Any, scope_id: int, thread: str, exclude: frozenset[int]) -> str | None:
    """The session of the thread's latest message not in ``exclude`` (None if there is none)."""
    rows = conn.execute(
        "SELECT id, session FROM messages WHERE scope_id = ? AND thread = ? ORDER BY id DESC LIMIT ?",
        (scope_id, thread, len(exclude) + 1),
    ).fetchall()
    for mid, session in rows:
        if int(mid) not in exclude:
            return str(session)
    return None


def _foreign_usage(other: Any) -> LLMUsage:
    """Another component's LLM usage (``calls``, tokens, ``malformed`` + ``errors``) as ours."""
    out = LLMUsage()
    u = getattr(other, "usage", None)
    calls = int(getattr(u, "calls", 0) or 0)
    bad = int(getattr(u, "malformed", 0) or 0) + int(getattr(u, "errors", 0) or 0)
    if calls or bad:
        t = out.task("keywords")
        t.calls = calls
        t.prompt_tokens = int(getattr(u, "prompt_tokens", 0) or 0)
        t.completion_tokens = int(getattr(u, "completion_tokens", 0) or 0)
        t.ms = float(getattr(u, "ms", 0.0) or 0.0)
        t.fallbacks = bad
    return out


def _at_least(cands: list[tuple[int, float]], min_cos: float) -> list[tuple[int, float]]:
    """Candidates whose cosine (their :attr:`sgmem.Hit.relevance`) is at least ``min_cos``."""
    return [c for c in cands if c[1] >= min_cos] if min_cos > 0 else cands
