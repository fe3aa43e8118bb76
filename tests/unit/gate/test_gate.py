"""Routing over a scope's state: write steps, Add / Update / Noop, views, the approximate scorer."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from sgmem.gate import GateConfig, GateState, NoveltyGate


def unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def e(i: int, dim: int = 16) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def test_first_candidate_is_added_without_scoring() -> None:
    gate = NoveltyGate(GateConfig())
    view = gate.fork(GateState(dim=16))
    gate.begin_step(view)
    d = gate.decide(view, e(0))
    assert d.action == "add" and d.scorer == "none" and d.n == 0


def test_a_repeated_candidate_is_a_noop_covered_by_the_first() -> None:
    gate = NoveltyGate(GateConfig())
    view = gate.fork(GateState(dim=16))
    gate.begin_step(view)
    row = gate.added(view, e(0))
    d = gate.decide(view, e(0))
    assert d.action == "noop"
    assert d.nearest == row and d.nearest_cos == pytest.approx(1.0)
    assert d.score == pytest.approx(1.0) and d.novelty == pytest.approx(0.0)


def test_an_unrelated_candidate_is_added() -> None:
    gate = NoveltyGate(GateConfig())
    view = gate.fork(GateState(dim=16))
    gate.begin_step(view)
    gate.added(view, e(0))
    d = gate.decide(view, e(1))  # orthogonal: s = 0, ν = 0.5
    assert d.action == "add"
    assert d.novelty == pytest.approx(0.5)


def test_a_close_candidate_in_the_band_updates_its_nearest_memory() -> None:
    gate = NoveltyGate(GateConfig(kappa=50.0))
    view = gate.fork(GateState(dim=16))
    gate.begin_step(view)  # τ1 = 0.275: Update when 0.275 ≤ ν < 0.3, i.e. 0.4 < s ≤ 0.45
    gate.added(view, e(0))
    gate.added(view, e(1))
    # with N = 2, s = (1/κ) log((e^{κ cos a} + e^{κ cos b}) / 2); pick a direction with s ≈ 0.425
    for t in np.linspace(0.3, 0.6, 301):
        c = unit(t * e(0) + math.sqrt(1 - t * t) * e(2))
        d = gate.decide(view, c)
        if d.action == "update":
            break
    else:  # pragma: no cover - the band exists for these vectors
        pytest.fail("no direction fell in the Update band")
    assert d.nearest == 0
    assert 0.275 <= d.novelty < 0.3


def test_the_ema_trace_through_write_steps_by_hand() -> None:
    cfg = GateConfig()
    gate = NoveltyGate(cfg)
    view = gate.fork(GateState(dim=16))
    t1 = gate.begin_step(view)  # N = 0: ρ = 0, τ* = τ_min + τ_0
    assert t1 == pytest.approx(0.275)
    gate.added(view, e(0))
    t2 = gate.begin_step(view)  # N = 1: V = 1, ρ = 1
    star2 = 0.025 + 0.25 * math.exp(-2.0)
    assert t2 == pytest.approx(0.9 * 0.275 + 0.1 * star2)
    gate.added(view, e(1))
    t3 = gate.begin_step(view)  # N = 2: V ≪ 1 (floored components), ρ ≫ 1, τ* = τ_min
    assert t3 == pytest.approx(0.9 * t2 + 0.1 * 0.025)
    assert [round(s["tau"], 9) for s in view.trace] == [round(t, 9) for t in (t1, t2, t3)]


def test_steps_open_every_step_messages_messages() -> None:
    gate = NoveltyGate(GateConfig(step_messages=3))
    view = gate.fork(GateState(dim=16))
    opened = []
    for _ in range(7):
        opened.append(gate.step_due(view))
        view.msg_count += 1
    assert opened == [True, False, False, True, False, False, True]


def test_a_view_never_changes_the_committed_state_until_commit() -> None:
    gate = NoveltyGate(GateConfig())
    state = GateState(dim=16)
    view = gate.fork(state)
    gate.begin_step(view)
    gate.added(view, e(0))
    gate.added(view, e(1))
    gate.updated(view, 0, e(2))
    assert state.n == 0 and state.tau is None and state.step == 0
    gate.commit(state, view, [101, 102])
    assert state.ids == [101, 102]
    assert np.array_equal(state.vectors[0], e(2)) and np.array_equal(state.vectors[1], e(1))
    assert state.tau == view.tau and state.step == 1
    assert np.allclose(state.sum_vec, e(1) + e(2))
    assert state.counts == {"add": 2, "update": 1, "noop": 0}


def test_commit_refuses_mismatched_ids() -> None:
    gate = NoveltyGate(GateConfig())
    state = GateState(dim=16)
    view = gate.fork(state)
    gate.added(view, e(0))
    with pytest.raises(ValueError):
        gate.commit(state, view, [])


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    x = centres[rng.integers(0, 20, n)] + 0.6 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_approximate_scores_never_exceed_exact_ones_and_respect_the_bound() -> None:
    dim = 32
    vecs = _clustered(3000, dim, 0)
    exact_gate = NoveltyGate(GateConfig(scorer="exact"))
    # probing every list makes the index return the true top-k, the bound's premise
    approx_gate = NoveltyGate(GateConfig(scorer="approx", approx_k=64, approx_nprobe=10_000))
    state = GateState(dim=dim)
    view = exact_gate.fork(state)
    for v in vecs:
        exact_gate.added(view, v)
    exact_gate.commit(state, view, list(range(1, len(vecs) + 1)))
    approx_gate.attach_index(state, None, 0)
    assert state.ivf is not None and state.ivf.ntotal == len(vecs)
    probes = _clustered(200, dim, 1)
    v_exact, v_approx = exact_gate.fork(state), approx_gate.fork(state)
    for c in probes:
        se, kind_e, _ = exact_gate.score(v_exact, c)
        sa, kind_a, bound = approx_gate.score(v_approx, c)
        assert (kind_e, kind_a) == ("exact", "approx")
        assert sa.score <= se.score + 1e-6
        assert se.score - sa.score <= bound + 1e-6
        assert sa.nearest == se.nearest


def test_auto_scorer_switches_at_the_configured_size() -> None:
    gate = NoveltyGate(GateConfig(approx_min_memories=100))
    assert not gate.use_approx(99)
    assert gate.use_approx(100)
    assert not NoveltyGate(GateConfig(scorer="exact")).use_approx(10**6)


class _CountingSearch:
    """The IVF index of a gate state, counting the searches made on it."""

    def __init__(self, index: object) -> None:
        self._index, self.calls, self.threads, self.hook = index, 0, set(), None

    def __getattr__(self, name: str) -> object:
        return getattr(self._index, name)

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("_index", "calls", "threads", "hook"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._index, name, value)

    def search(self, q: np.ndarray, k: int) -> object:
        self.calls += 1
        self.threads.add(threading.get_ident())
        if self.hook is not None:
            self.hook(q)
        return self._index.search(q, k)


def _route(
    gate: NoveltyGate, state: GateState, cands: np.ndarray, prefetch: bool, threads: int = 1, exact_scores: bool = False
) -> list[tuple]:
    """Route candidates as the derived-memory engine does (merges: the normalised sum)."""
    view = gate.fork(state)
    if prefetch:
        gate.prefetch(view, list(cands), threads)
    gate.begin_step(view)
    out = []
    for c in cands:
        d = gate.decide(view, c)
        if d.action == "add":
            gate.added(view, c)
        elif d.action == "update":
            gate.updated(view, d.nearest, unit(view.vector(d.nearest) + c))
        out.append((d.action, d.nearest, d.score if exact_scores else round(d.score, 12), d.scorer))
    return out


@pytest.mark.parametrize(("threads", "dim"), [(1, 64), (2, 64), (3, 384)])
def test_exact_cosines_computed_on_several_threads_give_the_same_decisions(threads: int, dim: int) -> None:
    """NoveltyGate.prefetch: below ``approx_min_memories`` a plan's candidates are compared with every
    committed fact in one matrix product; the scores are bit for bit those of each candidate alone."""
    vecs = _clustered(2000, dim, 1)
    gate = NoveltyGate(GateConfig(scorer="exact"))
    state = GateState(dim=dim)
    view = gate.fork(state)
    for v in vecs:
        gate.added(view, v)
    gate.commit(state, view, list(range(1, len(vecs) + 1)))
    cands = np.concatenate([vecs[:10], unit(vecs[10:30] + 0.3 * _clustered(20, dim, 5)), _clustered(20, dim, 7)])
    cands = np.concatenate([cands, cands[:5]])  # repeated candidates
    one = _route(gate, state, cands, prefetch=False, exact_scores=True)
    many = _route(gate, state, cands, prefetch=True, threads=threads, exact_scores=True)
    assert many == one
    view = gate.fork(state)
    gate.prefetch(view, list(cands), threads)
    assert len(view.base_cosines) == len({c.astype(np.float32).tobytes() for c in cands})  # computed up front
    assert all(s == "exact" for *_, s in many) and len({n for _, n, _, _ in many}) > 5


def _indexed_gate(n: int, dim: int, seed: int, k: int = 64) -> tuple[NoveltyGate, GateState, np.ndarray]:
    vecs = _clustered(n, dim, seed)
    gate = NoveltyGate(GateConfig(scorer="approx", approx_k=k))
    state = GateState(dim=dim)
    view = gate.fork(state)
    for v in vecs:
        gate.added(view, v)
    gate.commit(state, view, list(range(1, len(vecs) + 1)))
    gate.attach_index(state, None, 0)
    assert state.ivf is not None
    return gate, state, vecs


def test_an_add_searches_the_committed_index_once_per_batch_with_the_same_decisions() -> None:
    """NoveltyGate.prefetch: a plan's candidates are looked up in the committed index together
    (issue 14: one batched search instead of one per candidate) and routed exactly as before."""
    dim = 32
    gate, state, vecs = _indexed_gate(3000, dim, 0)
    counter = _CountingSearch(state.ivf.index)
    state.ivf.index = counter
    # repeats and near-repeats of stored facts, and new ones (the plan's own adds join the later scores)
    cands = np.concatenate([vecs[:10], unit(vecs[10:25] + 0.3 * _clustered(15, dim, 5)), _clustered(15, dim, 7)])
    one_by_one = _route(gate, state, cands, prefetch=False)
    assert counter.calls == len(cands)
    counter.calls = 0
    batched = _route(gate, state, cands, prefetch=True)
    assert batched == one_by_one
    assert all(s == "approx" for *_, s in batched) and len({n for _, n, _, _ in batched}) > 5
    assert counter.calls <= math.ceil(len(cands) / 16)


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_the_batched_search_on_several_threads_gives_the_same_decisions(threads: int) -> None:
    """NoveltyGate.prefetch with ``threads`` > 1: the batches are searched at once on the scan threads
    (issue 14: the largest part of an add's derived stage on a many-core host); every candidate's
    top-k, and so every decision, is the one-thread result."""
    dim = 32
    gate, state, vecs = _indexed_gate(3000, dim, 3)
    counter = _CountingSearch(state.ivf.index)
    state.ivf.index = counter
    cands = np.concatenate([vecs[:12], unit(vecs[12:30] + 0.3 * _clustered(18, dim, 5)), _clustered(14, dim, 9)])
    one = _route(gate, state, cands, prefetch=True, threads=1)
    assert counter.threads == {threading.get_ident()}
    counter.threads = set()
    many = _route(gate, state, cands, prefetch=True, threads=threads)
    assert many == one
    assert len(counter.threads) > 1  # the searches ran on more than the calling thread
    assert threading.get_ident() in counter.threads  # which searches a part of its own
    assert len({n for _, n, _, _ in many}) > 5


def test_a_few_candidates_share_the_scan_threads_pool() -> None:
    """NoveltyGate.prefetch: fewer candidates than threads search on the scan pool of ``threads`` (as the
    dense scan does), not on a pool of their own count: no idle threads pile up, one pool per count."""
    from sgmem.retrieval import dense

    gate, state, vecs = _indexed_gate(3000, 32, 8)
    before = set(dense._POOLS)
    for n in (3, 5):
        gate.prefetch(gate.fork(state), list(_clustered(n, 32, 10 + n)), 7)
    assert set(dense._POOLS) - before <= {7}
    assert not ({3, 5} & (set(dense._POOLS) - before))


def test_a_failed_part_of_the_threaded_search_waits_for_the_others() -> None:
    """NoveltyGate.prefetch: the parts read the committed index, which a commit changes once the view's
    lock is released; an error in the calling thread's part surfaces only after every other part ends."""
    dim = 32
    gate, state, vecs = _indexed_gate(3000, dim, 4)
    counter = _CountingSearch(state.ivf.index)
    state.ivf.index = counter
    caller = threading.get_ident()
    finished: list[float] = []

    def hook(q: np.ndarray) -> None:
        if threading.get_ident() == caller:
            raise RuntimeError("the calling thread's part fails")
        time.sleep(0.05)
        finished.append(time.perf_counter())

    counter.hook = hook
    view = gate.fork(state)
    with pytest.raises(RuntimeError, match="calling thread"):
        gate.prefetch(view, list(_clustered(12, dim, 6)), 4)
    raised = time.perf_counter()
    assert len(finished) == 3 and max(finished) <= raised


@pytest.mark.parametrize("dim", [64, 384])
def test_a_candidates_exact_products_do_not_depend_on_the_others_in_its_batch(dim: int) -> None:
    """base_products: a candidate's column is the same alone (a one-column product, which BLAS would
    hand to its matrix-vector routine) as in any batch, so a decision never depends on its neighbours."""
    from sgmem.gate.gate import base_products

    rng = np.random.default_rng(dim)
    base = unit(rng.standard_normal((3001, dim)).astype(np.float32))
    cs = unit(rng.standard_normal((33, dim)).astype(np.float32))
    alone = np.stack([base_products(base, c[None, :])[:, 0] for c in cs], axis=1)
    for n in (2, 3, 8, 17, 33):
        np.testing.assert_array_equal(base_products(base, cs[:n]), alone[:, :n])
    np.testing.assert_allclose(alone, base @ cs.T, rtol=0, atol=1e-5)
