"""SAGE routing over one scope's facts: state, write steps, decisions (ALGORITHMS §2).

A :class:`GateState` is everything the gate knows about one scope (§2.1): the
fact vectors (row-aligned with their memory ids), their running sum (for κ
and the approximate scorer), κ, the density fit, the EMA threshold τ, the
step and message counters. It is persisted per scope (``sgmem.derived.store``)
and reloaded bit for bit, so a restart never changes a decision.

Routing never mutates a committed state: a write is planned on a
:class:`GateView` (the state plus the plan's own appends and replacements),
which :meth:`NoveltyGate.commit` replays into the state once the write is
stored. A plan can therefore run outside the store's lock (LLM merges take
seconds) and be thrown away if another writer got there first.

Write step (§2.5): τ is computed once at the start of a step from the current
N and V; then each candidate, in order, is scored against the *current* facts
(earlier candidates included) and routed; Add appends its vector, Update
replaces the nearest fact's vector, and κ follows every change.
"""

from __future__ import annotations

import contextlib
import copy
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .approx import IVFScorer, approx_score
from .blas import faiss_single_thread
from .config import GateConfig
from .density import Density, rho
from .threshold import ADD, NOOP, UPDATE, Action, ema, route, route_binary, tau_star
from .vmf import VmfScore, estimate_kappa, log_mean_exp, novelty

__all__ = ["Decision", "GateState", "GateView", "NoveltyGate"]


@dataclass(frozen=True)
class Decision:
    """How one candidate was routed.

    Attributes:
        action: ``"add"``, ``"update"`` or ``"noop"``.
        score: ``s_vMF`` against the scope's facts (0 when N = 0).
        novelty: ``ν = (1 − s) / 2`` (paper units; 1 when N = 0).
        tau: the step's threshold τ_t (``tau_noop`` in binary mode).
        kappa: κ used for the score.
        n: facts in the scope when it was scored.
        nearest: row of the nearest fact (the Update target; the memory that
            covers a Noop), −1 when N = 0.
        nearest_cos: its cosine.
        scorer: ``"exact"``, ``"approx"`` or ``"none"`` (N = 0, or gate off).
        bound: the approximate scorer's bound on ``s_exact − s_approx`` (0 if exact).
    """

    action: Action
    score: float
    novelty: float
    tau: float
    kappa: float
    n: int
    nearest: int
    nearest_cos: float
    scorer: str
    bound: float = 0.0


@dataclass
class GateState:
    """Committed per-scope gate state (§2.1)."""

    dim: int
    pca_dim: int = 16
    ids: list[int] = field(default_factory=list)
    sum_vec: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kappa: float = 1.0
    density: Density | None = None
    tau: float | None = None
    step: int = 0
    msg_count: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {ADD: 0, UPDATE: 0, NOOP: 0})
    version: int = 0
    ivf: IVFScorer | None = None
    #: the server's nearest committed facts ``(c, k) -> (rows, cosines)`` (PostgreSQL + pgvector, ``Config.pg_dense``)
    nearest: Any = None
    last: dict[str, float] = field(default_factory=dict)
    _buf: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    _row: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.sum_vec.size == 0:
            self.sum_vec = np.zeros(self.dim)
        if self.density is None:
            self.density = Density(self.dim, self.pca_dim)
        if self._buf.size == 0:
            self._buf = np.zeros((4, self.dim), dtype=np.float32)  # grows by doubling; small scopes stay small

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def vectors(self) -> np.ndarray:
        """(N, d) view of the fact vectors, in memory-id order."""
        return self._buf[: self.n]

    def row_of(self, memory_id: int) -> int | None:
        return self._row.get(memory_id)

    def load_facts(self, ids: list[int], vectors: np.ndarray) -> None:
        """Set the facts (rows in id order); sums and fits are the caller's."""
        n = len(ids)
        cap = max(4, 1 << max(n, 1).bit_length())
        self._buf = np.zeros((cap, self.dim), dtype=np.float32)
        if n:
            self._buf[:n] = vectors
        self.ids = list(ids)
        self._row = {m: i for i, m in enumerate(self.ids)}

    def _append(self, memory_id: int, vec: np.ndarray) -> None:
        if self.n == len(self._buf):
            grown = np.zeros((2 * len(self._buf), self.dim), dtype=np.float32)
            grown[: self.n] = self._buf[: self.n]
            self._buf = grown
        self._buf[self.n] = vec
        self._row[memory_id] = self.n
        self.ids.append(memory_id)


class GateView:
    """A planned write over a committed :class:`GateState` (copy-on-write).

    Rows ``< state.n`` are committed facts (possibly replaced in this plan);
    later rows are facts this plan adds. Scalars (sum, κ, τ, counters, the
    density fit) are the plan's own copies.
    """

    def __init__(self, state: GateState, lock: Any = None) -> None:
        self.state = state
        self.n_base = state.n
        # a snapshot of the committed rows: a concurrent commit may grow (reallocate) the buffer
        self.base = state.vectors
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self.extra: list[np.ndarray] = []
        # ``extra`` as rows of one matrix, grown by doubling: stacking the list for every candidate made a
        # plan of F new facts cost O(F²·d) in copies (a 200k-character message: thousands of facts)
        self._extra_rows = np.zeros((0, state.dim), dtype=np.float32)
        self.patched: dict[int, np.ndarray] = {}
        self.sum_vec = state.sum_vec.copy()
        self.kappa = state.kappa
        self.tau = state.tau
        self.step = state.step
        self.msg_count = state.msg_count
        self.counts = dict(state.counts)
        self.density = copy.deepcopy(state.density)
        self.last: dict[str, float] = dict(state.last)
        self.trace: list[dict[str, float]] = []
        # committed-index search results fetched for the plan's candidates at once (NoveltyGate.prefetch)
        self.prefetched: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        self.prefetched_k = -1
        # ``base @ c`` of the plan's candidates, computed on several threads at once (NoveltyGate.prefetch)
        self.base_cosines: dict[bytes, np.ndarray] = {}

    @property
    def n(self) -> int:
        return self.n_base + len(self.extra)

    @property
    def dim(self) -> int:
        return self.state.dim

    def vector(self, row: int) -> np.ndarray:
        if row >= self.n_base:
            return self.extra[row - self.n_base]
        return self.patched.get(row, self.base[row])

    def cosines(self, c: np.ndarray) -> np.ndarray:
        """Cosine of ``c`` to every fact of the view (exact, O(N·d))."""
        c = np.asarray(c, dtype=np.float32)
        pre = self.base_cosines.get(c.tobytes()) if self.base_cosines and self.n_base else None
        if pre is not None:
            base = pre.copy()  # the patched rows are overwritten below
        else:
            base = base_products(self.base, c[None, :])[:, 0] if self.n_base else np.zeros(0, dtype=np.float32)
        for r, v in self.patched.items():
            base[r] = float(v @ c)
        if not self.extra:
            return base
        return np.concatenate([base, self._extra_rows[: len(self.extra)] @ c])

    def materialize(self) -> np.ndarray:
        """All fact vectors as one array (for a density refit)."""
        base = self.base.copy()
        for r, v in self.patched.items():
            base[r] = v
        return np.concatenate([base, np.stack(self.extra)]) if self.extra else base

    def append(self, vec: np.ndarray) -> int:
        v = np.asarray(vec, dtype=np.float32)
        i = len(self.extra)
        if i == len(self._extra_rows):
            grown = np.zeros((max(16, 2 * i), self.dim), dtype=np.float32)
            grown[:i] = self._extra_rows
            self._extra_rows = grown
        self._extra_rows[i] = v
        self.extra.append(v)
        return self.n - 1

    def replace(self, row: int, vec: np.ndarray) -> np.ndarray:
        old = np.array(self.vector(row), dtype=np.float32)
        if row >= self.n_base:
            self.extra[row - self.n_base] = np.asarray(vec, dtype=np.float32)
            self._extra_rows[row - self.n_base] = self.extra[row - self.n_base]
        else:
            self.patched[row] = np.asarray(vec, dtype=np.float32)
        return old


def base_products(base: np.ndarray, cs: np.ndarray) -> np.ndarray:
    """``base @ cs.T`` (facts × candidates, float32) as a matrix-matrix product, also for one candidate.

    BLAS computes a column of a product with several columns the same way
    whatever the number of columns, but forwards a one-column product to its
    matrix-vector routine, which sums in another order (the last float32
    digit differs). A single candidate is therefore computed as two equal
    columns: a candidate's exact cosines are the same alone or with a plan's
    others (``tests/unit/gate/test_gate.py`` checks it on this BLAS).
    """
    cs = np.ascontiguousarray(cs, dtype=np.float32)
    if len(cs) == 1:
        return (base @ np.concatenate([cs, cs]).T)[:, :1]
    return base @ cs.T


class NoveltyGate:
    """The routing rules of SAGE (§2.2–§2.7) applied to a :class:`GateView`.

    Args:
        config: the gate's parameters.
    """

    def __init__(self, config: GateConfig) -> None:
        # standing alone, "auto" routes as SAGE does; a Memory resolves it against its LLM first
        self.config = config.resolved(can_merge_with_llm=True)

    def fork(self, state: GateState, lock: Any = None) -> GateView:
        """A plan over ``state`` (left untouched); ``lock`` guards its shared index."""
        return GateView(state, lock)

    # ----------------------------------------------------------------- steps
    def step_due(self, view: GateView) -> bool:
        """Whether the next message opens a write step (every ``step_messages``)."""
        m = self.config.step_messages
        return m > 0 and view.msg_count % m == 0

    def begin_step(self, view: GateView) -> float:
        """Start a write step: refit the density if due, compute τ_t once (§2.5 step 2)."""
        cfg = self.config
        view.step += 1
        dens = view.density
        if dens is not None and dens.needs_refit(view.n, cfg.pca_refit_growth):
            dens.fit(view.materialize(), cfg.pca_max_rows)
        vol = dens.volume(view.n, cfg.volume_floor) if dens is not None else 1.0
        r = rho(view.n, vol) if view.n else 0.0
        star = tau_star(r, cfg.tau0, cfg.tau_min, cfg.lam)
        view.tau = ema(view.tau, star, cfg.alpha)
        view.last = {"volume": vol, "rho": r, "tau_star": star, "tau": view.tau, "n": float(view.n)}
        view.trace.append({"step": float(view.step), **view.last})
        return view.tau

    # ---------------------------------------------------------------- scoring
    def kappa(self, view: GateView) -> float:
        return float(self.config.kappa) if self.config.kappa is not None else view.kappa

    def use_approx(self, n: int) -> bool:
        """Whether a scope of ``n`` facts is scored approximately (``scorer`` setting)."""
        cfg = self.config
        if cfg.scorer == "exact":
            return False
        if cfg.scorer == "approx":
            return n >= 2
        return n >= cfg.approx_min_memories

    def score(self, view: GateView, c: np.ndarray, exact: bool | None = None) -> tuple[VmfScore, str, float]:
        """``(score, scorer, bound)`` of candidate ``c`` against the view's facts."""
        kappa = self.kappa(view)
        if view.n == 0:
            return VmfScore(0.0, -1, 0.0), "none", 0.0
        ivf = view.state.ivf
        want_approx = self.use_approx(view.n) if exact is None else not exact
        if (
            want_approx
            and view.n_base
            and (view.state.nearest is not None or (ivf is not None and ivf.ntotal == view.n_base))
        ):
            return self._approx(view, ivf, c, kappa)
        cos = view.cosines(c)
        j = int(np.argmax(cos))
        s = log_mean_exp(kappa * cos.astype(np.float64)) / kappa
        return VmfScore(min(1.0, max(-1.0, s)), j, float(cos[j])), "exact", 0.0

    def prefetch(self, view: GateView, vecs: list[np.ndarray], threads: int = 1) -> None:
        """Search the committed index for all of a plan's candidates at once (before routing them).

        Where the candidates are scored exactly (fewer committed facts than
        ``approx_min_memories``), their cosines to the committed facts are
        computed instead, all in one matrix product (:meth:`_prefetch_exact`;
        the same values as one candidate's); ``threads`` is unused there.

        The committed index does not change while a plan is routed (the
        plan's own adds and merges are applied to the results by
        :meth:`_approx`), so each candidate's top-k is known up front; FAISS
        answers a batch with the same per-query computation as single
        searches (batches stay under its BLAS threshold, so even the coarse
        quantiser's arithmetic is the same): the decisions are identical, and
        the per-call overhead is paid once per batch instead of per candidate.

        [D] ``threads`` > 1 (the derived engine passes the dense scan's
        threads, ``Config.dense_scan_threads``): the batches are cut into
        about that many parts, searched at once on the scan pool and the
        calling thread, each part one FAISS search on one OpenMP thread
        (FAISS releases the GIL). A candidate's top-k does not depend on
        which part it is in, so the decisions are the same on any number of
        threads. At 36k facts (100k sentences) the search took 9 of an add's
        14 ms plan on one thread here; on a many-core host it was the largest
        part of the derived stage (a 16-core GPU host).
        """
        if len(vecs) > 1 and view.n_base and not self.use_approx(view.n_base):
            self._prefetch_exact(view, vecs)
            return
        ivf = view.state.ivf
        if not vecs or ivf is None or view.state.nearest is not None or not view.n_base or ivf.ntotal != view.n_base:
            return
        if not self.use_approx(view.n_base + len(vecs)):
            return
        import faiss

        k = min(self.config.approx_k, view.n_base)
        # below FAISS's BLAS threshold (it compares queries × centroids with it) the coarse quantiser
        # computes each query's distances exactly as alone
        thr = int(faiss.cvar.distance_compute_blas_threshold)
        step = max(1, min(16, (thr - 1) // max(len(ivf.centroids), 1)))
        todo = list({np.asarray(v, dtype=np.float32).tobytes(): None for v in vecs})
        parts = max(1, min(int(threads), len(todo)))
        step = min(step, -(-len(todo) // parts))  # about one batch per thread
        batches = [todo[i : i + step] for i in range(0, len(todo), step)]
        index = ivf.index

        def search(keys: list[bytes]) -> tuple[list[bytes], np.ndarray, np.ndarray]:
            q = np.frombuffer(b"".join(keys), dtype=np.float32).reshape(len(keys), -1)
            with faiss_single_thread():  # OpenMP's thread count is per thread: each part sets its own
                dist, rows = index.search(q, k)
            return keys, dist, rows

        with view.lock:
            if ivf.ntotal != view.n_base:  # a commit of another thread came first: search one by one
                return
            index.nprobe = ivf.probes_for(k, self.config.approx_nprobe)
            futs: list[Future[tuple[list[bytes], np.ndarray, np.ndarray]]] = []
            try:
                if len(batches) > 1 and parts > 1:
                    from ..retrieval.dense import scan_pool

                    pool = scan_pool(int(threads))  # the scan threads' pool (one per thread count)
                    futs = [pool.submit(search, b) for b in batches[1:]]
                    done = [search(batches[0])] + [f.result() for f in futs]
                else:
                    done = [search(b) for b in batches]
            finally:
                wait(futs)  # no part may still read the index once the lock is released
        for keys, dist, rows in done:
            for j, key in enumerate(keys):
                view.prefetched[key] = (dist[j : j + 1], rows[j : j + 1])
        view.prefetched_k = k

    @staticmethod
    def _prefetch_exact(view: GateView, vecs: list[np.ndarray]) -> None:
        """``view.base @ c`` for each distinct candidate ``c``, as one matrix product.

        The exact scorer's cost is a pass over every committed fact per
        candidate (up to ``approx_min_memories`` facts, 15 MB at 384
        dimensions): bound by memory bandwidth, and the largest cost of an
        add's plan. One product for all of a plan's candidates reads the
        facts once (measured: about 4 ms of an add's 6 ms plan at 50k
        sentences went to ~30 separate matrix-vector products).
        :func:`base_products` gives each candidate the values it gets alone,
        so the decisions do not depend on which candidates share a plan.
        """
        keys = list({np.asarray(v, dtype=np.float32).tobytes(): None for v in vecs})
        cs = np.frombuffer(b"".join(keys), dtype=np.float32).reshape(len(keys), -1)
        prods = base_products(view.base, cs)
        view.base_cosines.update((k, np.ascontiguousarray(prods[:, i])) for i, k in enumerate(keys))

    def _approx(
        self, view: GateView, ivf: IVFScorer | None, c: np.ndarray, kappa: float
    ) -> tuple[VmfScore, str, float]:
        """Top-k from the committed index (or the server's, ``state.nearest``), corrected for this plan's own changes."""
        k = min(self.config.approx_k, view.n_base)
        c32 = np.asarray(c, dtype=np.float32).reshape(1, -1)
        if view.state.nearest is not None:
            rows, cos = view.state.nearest(c32[0], k)
            keep = rows < view.n_base
            rows, cos = rows[keep], cos[keep]
        else:
            assert ivf is not None
            hit = view.prefetched.get(c32.tobytes()) if view.prefetched_k == k else None
            if hit is not None:
                dist, found = hit
            else:
                with view.lock:
                    ivf.index.nprobe = ivf.probes_for(k, self.config.approx_nprobe)
                    dist, found = ivf.index.search(c32, k)
            rows, cos = found[0], dist[0].astype(np.float64)
        keep = rows >= 0
        if view.patched:  # the index holds their old vectors: use the new ones
            keep &= ~np.isin(rows, np.fromiter(view.patched, dtype=np.int64))
        rows, cos = rows[keep], cos[keep]
        fixed = list(view.patched) + list(range(view.n_base, view.n))
        if fixed:
            vecs = [view.vector(r) for r in fixed]
            rows = np.concatenate([rows, np.asarray(fixed, dtype=np.int64)])
            cos = np.concatenate([cos, (np.stack(vecs) @ c32[0]).astype(np.float64)])
        sc, bound = approx_score(rows, cos, view.n, view.sum_vec, c, kappa)
        return sc, "approx", bound

    def decide(self, view: GateView, c: np.ndarray) -> Decision:
        """Route one candidate against the view (no change to it)."""
        cfg = self.config
        kappa = self.kappa(view)
        tau = view.tau if view.tau is not None else cfg.tau_min + cfg.tau0
        if cfg.mode == "binary":
            tau = cfg.tau_noop
        if cfg.mode == "off" or view.n == 0:
            return Decision(ADD, 0.0, 1.0, tau, kappa, view.n, -1, 0.0, "none")
        sc, scorer, bound = self.score(view, c)
        nu = novelty(sc.score)
        if cfg.mode == "binary":
            action = route_binary(sc.score, cfg.tau_noop, view.n)
        else:
            action = route(nu, tau, cfg.delta, view.n)
        return Decision(action, sc.score, nu, tau, kappa, view.n, sc.nearest, sc.nearest_cos, scorer, bound)

    # ---------------------------------------------------------------- changes
    def _refresh_kappa(self, view: GateView) -> None:
        cfg = self.config
        view.kappa = estimate_kappa(view.sum_vec, view.n, view.dim, cfg.kappa_min, cfg.kappa_max)

    def added(self, view: GateView, vec: np.ndarray) -> int:
        """Record an Add: a new fact row; κ and the density ranges follow. Returns the row."""
        row = view.append(vec)
        view.sum_vec += np.asarray(vec, dtype=np.float64)
        self._refresh_kappa(view)
        if view.density is not None:
            view.density.extend(vec)
        view.counts[ADD] = view.counts.get(ADD, 0) + 1
        return row

    def updated(self, view: GateView, row: int, vec: np.ndarray) -> None:
        """Record an Update: the merged fact's new vector replaces its old one."""
        self.revector(view, row, vec)
        view.counts[UPDATE] = view.counts.get(UPDATE, 0) + 1

    def revector(self, view: GateView, row: int, vec: np.ndarray) -> None:
        """Give a fact its final vector (a merged text embedded after routing); no routing count."""
        old = view.replace(row, vec)
        view.sum_vec += np.asarray(vec, dtype=np.float64) - old.astype(np.float64)
        self._refresh_kappa(view)
        if view.density is not None:
            view.density.extend(vec)

    def skipped(self, view: GateView) -> None:
        """Record a Noop."""
        view.counts[NOOP] = view.counts.get(NOOP, 0) + 1

    # ----------------------------------------------------------------- commit
    def index_due(self, state: GateState, n: int) -> bool:
        """Whether a scope growing to ``n`` facts needs a (re)trained approximate index."""
        if not self.use_approx(n):
            return False
        return state.ivf is None or n >= 2 * max(state.ivf.n_train, 1)

    def train_index(self, vectors: np.ndarray) -> IVFScorer:
        """Train the approximate scorer's centroids on ``vectors`` (deterministic)."""
        return IVFScorer.train(vectors, self.config.approx_nprobe)

    def commit(self, state: GateState, view: GateView, new_ids: list[int], trained: IVFScorer | None = None) -> None:
        """Replay a stored plan into ``state``; ``new_ids`` are the added facts' memory ids.

        ``trained`` is an index trained (and persisted) with the plan; without
        one, the existing index follows the plan's changes.
        """
        if len(new_ids) != len(view.extra):
            raise ValueError(f"commit: {len(new_ids)} ids for {len(view.extra)} added facts")
        for r, v in view.patched.items():
            state._buf[r] = v
        for mid, v in zip(new_ids, view.extra, strict=True):
            state._append(mid, v)
        state.sum_vec = view.sum_vec
        state.kappa = view.kappa
        state.tau = view.tau
        state.step = view.step
        state.msg_count = view.msg_count
        state.counts = dict(view.counts)
        state.density = view.density
        state.last = dict(view.last)
        if not self.use_approx(state.n):
            state.ivf = None
        elif trained is not None:
            trained.add(np.arange(state.n), state.vectors)
            state.ivf = trained
        elif state.ivf is not None and state.ivf.ntotal == view.n_base:
            for r, v in view.patched.items():
                state.ivf.replace(r, v)
            if view.extra:
                state.ivf.add(np.arange(view.n_base, state.n), np.stack(view.extra))
        else:
            self.attach_index(
                state,
                state.ivf.centroids if state.ivf is not None else None,
                state.ivf.n_train if state.ivf is not None else 0,
            )

    def attach_index(self, state: GateState, centroids: np.ndarray | None, n_train: int) -> None:
        """Build the approximate index from persisted centroids (or train it if there are none)."""
        if not self.use_approx(state.n):
            state.ivf = None
            return
        if centroids is None:
            ivf = self.train_index(state.vectors)
        else:
            ivf = IVFScorer(state.dim, centroids, self.config.approx_nprobe, n_train)
            ivf.saved = True
        ivf.add(np.arange(state.n), state.vectors)
        state.ivf = ivf

    def reset_facts(self, state: GateState, ids: list[int], vectors: np.ndarray) -> None:
        """After a delete: keep the surviving facts, recompute the sum and κ, refit later."""
        state.load_facts(ids, vectors)
        state.sum_vec = np.asarray(vectors, dtype=np.float64).sum(axis=0) if len(ids) else np.zeros(state.dim)
        cfg = self.config
        state.kappa = estimate_kappa(state.sum_vec, state.n, state.dim, cfg.kappa_min, cfg.kappa_max)
        if state.density is not None:
            state.density.stale = True
        state.ivf = None

    @staticmethod
    def describe(state: GateState) -> dict[str, Any]:
        """A JSON-friendly snapshot of the state (for stats and logs)."""
        return {
            "facts": state.n,
            "kappa": state.kappa,
            "tau": state.tau,
            "step": state.step,
            "messages": state.msg_count,
            "adds": state.counts.get(ADD, 0),
            "updates": state.counts.get(UPDATE, 0),
            "noops": state.counts.get(NOOP, 0),
        }
