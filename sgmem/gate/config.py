"""GateConfig: the frozen parameters of the SAGE novelty gate (ALGORITHMS §2).

Kept free of other sgmem imports (except errors) so ``sgmem.config`` can embed it.

Units convention ([D], ALGORITHMS §2.2): novelty is the paper's
``ν = (1 − s_vMF) / 2 ∈ [0, 1]``, so every threshold below is in the paper's
units (Table §2.6, left column). The official code uses ``ν_code = 2ν``; its
thresholds (τ_0 = 0.5, τ_min = 0.05, δ = 0.05) are exactly twice ours. The
portable binary gate's ``tau_noop`` is on the raw score ``s_vMF ∈ [−1, 1]``.

Default routing ([D], measured): ``mode="auto"`` runs SAGE's adaptive routing
when the Memory has an LLM to merge with, and the portable binary gate when
it has none. Without an LLM an Update can only concatenate the two texts
(§2.8), and on the LoCoMo dev split (``python -m benchmarks.gate --only
routing``, user-turn facts, no LLM) adaptive routing with the paper's
defaults skipped 7.0 % of candidates and lost 2.84 points of fact recall@10
(its Noops fall in the first, high-τ steps, where the facts are new; its
concatenated Updates retrieve worse), while the binary gate at a calibrated
τ_noop skipped 16.7 % and gained 0.64 points. ``SAGE_PAPER`` is the paper's
adaptive gate exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ..errors import ConfigError

__all__ = ["GateConfig", "SAGE_PAPER"]


def _check(cond: bool, name: str, value: object, expected: str) -> None:
    if not cond:
        raise ConfigError(f"GateConfig.{name}: received {value!r}, expected {expected}.")


def _num(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class GateConfig:
    """SAGE: Spherical Adaptive Gate for memory Evolution (arXiv 2605.30711).

    Every derived fact candidate is scored against its scope's facts with the
    vMF kernel score ``s_vMF`` (§2.2) and routed Add / Update / Noop by an
    adaptive threshold (§2.5). Defaults are the paper's (Table §2.6) in its
    units (ν ∈ [0, 1]); raw messages are never gated.

    Attributes:
        mode: ``"auto"`` [D] (``"adaptive"`` when the Memory has an LLM that
            merges — ``"merge"`` in ``DerivedConfig.llm_tasks`` — else
            ``"binary"``; see the module docstring), ``"adaptive"`` (SAGE
            routing, §2.5), ``"binary"`` (the portable gate of §2.7: Noop when
            ``s_vMF > tau_noop``, else Add) or ``"off"`` (every candidate is
            added; a baseline).
        kappa: a fixed vMF concentration κ; ``None`` [R default] estimates it
            with Banerjee et al.'s formula (§2.3) after every change.
        kappa_min, kappa_max: the code's clip on κ̂ [R code: 1e-3, 50] that
            prevents log-sum-exp collapse. With d = 384 the cap operates.
        pca_dim: d′, PCA components behind the density proxy ρ (§2.4) [R 16].
        volume_floor: per-component range floor in the volume V (§2.4) [R code 1e-3].
        tau0: τ_0, the threshold's decaying part (§2.5) [R paper 0.25].
        tau_min: τ_min, its additive floor [R paper 0.025].
        lam: λ, the density rate in ``τ* = τ_min + τ_0 exp(−λρ)`` [R 2.0].
        alpha: α, the EMA momentum ``τ_t = α τ_{t−1} + (1 − α) τ*_t`` [R 0.9].
        delta: δ, the Update band above τ [R paper 0.025]: Update when
            ``τ ≤ ν < τ + δ``, Noop below τ, Add above.
        tau_noop: the binary gate's threshold on raw ``s_vMF``. [D] 0.744: §2.7's
            recipe (the 80th percentile of ``s_vMF`` over a streamed corpus)
            for the default embedder, all-MiniLM-L6-v2, on LoCoMo-style
            conversation: each half of the LoCoMo dev split calibrates to
            0.743 / 0.745 and skips 16.7 % of the other half's candidates. The
            paper's 0.572 [R] was calibrated for its embedder and a synthetic
            diary; with MiniLM it would skip 70–85 % of candidates. For
            another embedder or register, recalibrate with ``sgmem calibrate``.
        step_messages: [D] messages per write step. τ is recomputed once per
            step (§2.5 "Compute τ_t once"); SAGE's LoCoMo runs add 8 messages
            per call [R], so a step is 8 messages of the scope whatever the
            caller's batching — one-message adds and whole-session adds route
            identically. 0 makes each ``Memory.add`` call one step (the code's
            literal behaviour).
        pca_max_rows: [D] scopes with more facts fit the PCA on an evenly
            spaced sample of this many (ρ still uses the true N).
        pca_refit_growth: [D] the PCA basis is refit when the fact count has
            grown by this factor since the last fit (or after a delete); in
            between, new vectors only widen the projected ranges. PCA feeds ρ
            only, and ρ ≫ 1 once N ≥ 2 (§2.4 sanity check), so this never
            changed a routing decision in our measurements.
        scorer: ``"exact"`` (O(N·d) per candidate), ``"approx"`` (top-k
            neighbours from a FAISS IVF index, see :mod:`sgmem.gate.approx`)
            or ``"auto"``: approximate from ``approx_min_memories`` facts on.
        approx_min_memories: [D] the "auto" switch point. Measured CPU time
            per decision (``python -m benchmarks.gate``, one BLAS thread):
            exact scoring ≈ 0.07 ms at 1k facts, ≈ 0.7 ms at 10k, ≈ 12 ms at
            100k; the approximation ≈ 0.5 ms at 10k and ≈ 0.8 ms at 100k, so
            it takes over at 10k.
        approx_k: [D] nearest facts scored exactly by the approximate scorer
            (1024: 100 % routing agreement with exact scoring at 10k–100k in
            the benchmark, where 64 gave 90 %). About 2k facts are scanned to
            find them (``IVFScorer.probes_for``).
        approx_nprobe: the fewest IVF lists probed per candidate.
    """

    mode: Literal["auto", "adaptive", "binary", "off"] = "auto"
    kappa: float | None = None
    kappa_min: float = 1e-3
    kappa_max: float = 50.0
    pca_dim: int = 16
    volume_floor: float = 1e-3
    tau0: float = 0.25
    tau_min: float = 0.025
    lam: float = 2.0
    alpha: float = 0.9
    delta: float = 0.025
    tau_noop: float = 0.744
    step_messages: int = 8
    pca_max_rows: int = 4096
    pca_refit_growth: float = 1.25
    scorer: Literal["auto", "exact", "approx"] = "auto"
    approx_min_memories: int = 10_000
    approx_k: int = 1024
    approx_nprobe: int = 16

    def __post_init__(self) -> None:
        _check(
            self.mode in ("auto", "adaptive", "binary", "off"),
            "mode",
            self.mode,
            "'auto', 'adaptive', 'binary' or 'off'",
        )
        _check(self.kappa is None or (_num(self.kappa) and self.kappa > 0), "kappa", self.kappa, "None or a number > 0")
        _check(_num(self.kappa_min) and self.kappa_min > 0, "kappa_min", self.kappa_min, "a number > 0")
        _check(
            _num(self.kappa_max) and self.kappa_max >= self.kappa_min,
            "kappa_max",
            self.kappa_max,
            f"a number >= kappa_min ({self.kappa_min})",
        )
        _check(_int(self.pca_dim) and 1 <= self.pca_dim <= 256, "pca_dim", self.pca_dim, "an int in 1..256")
        _check(_num(self.volume_floor) and self.volume_floor > 0, "volume_floor", self.volume_floor, "a number > 0")
        for name in ("tau0", "tau_min", "delta"):
            v = getattr(self, name)
            _check(_num(v) and 0 <= v <= 1, name, v, "a number in [0, 1] (paper units: novelty ν ∈ [0, 1])")
        _check(_num(self.lam) and self.lam >= 0, "lam", self.lam, "a number >= 0")
        _check(_num(self.alpha) and 0 <= self.alpha < 1, "alpha", self.alpha, "a number in [0, 1)")
        _check(_num(self.tau_noop) and -1 <= self.tau_noop <= 1, "tau_noop", self.tau_noop, "a score in [-1, 1]")
        _check(_int(self.step_messages) and self.step_messages >= 0, "step_messages", self.step_messages, "an int >= 0")
        _check(_int(self.pca_max_rows) and self.pca_max_rows >= 2, "pca_max_rows", self.pca_max_rows, "an int >= 2")
        _check(
            _num(self.pca_refit_growth) and self.pca_refit_growth >= 1,
            "pca_refit_growth",
            self.pca_refit_growth,
            "a number >= 1",
        )
        _check(self.scorer in ("auto", "exact", "approx"), "scorer", self.scorer, "'auto', 'exact' or 'approx'")
        _check(
            _int(self.approx_min_memories) and self.approx_min_memories >= 1,
            "approx_min_memories",
            self.approx_min_memories,
            "an int >= 1",
        )
        _check(_int(self.approx_k) and self.approx_k >= 1, "approx_k", self.approx_k, "an int >= 1")
        _check(_int(self.approx_nprobe) and self.approx_nprobe >= 1, "approx_nprobe", self.approx_nprobe, "an int >= 1")

    def resolved(self, can_merge_with_llm: bool) -> GateConfig:
        """The config with ``mode="auto"`` made concrete (see ``mode``)."""
        if self.mode != "auto":
            return self
        return replace(self, mode="adaptive" if can_merge_with_llm else "binary")


#: The paper's gate: adaptive routing with Table §2.6's defaults (paper units)
#: and §2.7's τ_noop, whatever the LLM.
SAGE_PAPER = GateConfig(mode="adaptive", tau_noop=0.572)
