"""The adaptive threshold, its EMA and the routing rule (ALGORITHMS §2.5, §2.7)."""

from __future__ import annotations

import math

import pytest

from sgmem.gate import SAGE_PAPER, GateConfig, ema, route, route_binary, tau_star


def test_paper_defaults_are_in_paper_units() -> None:
    for cfg in (GateConfig(), SAGE_PAPER):
        assert (cfg.tau0, cfg.tau_min, cfg.lam, cfg.alpha, cfg.delta) == (0.25, 0.025, 2.0, 0.9, 0.025)
        assert cfg.pca_dim == 16 and cfg.kappa_max == 50.0
    assert SAGE_PAPER.mode == "adaptive" and SAGE_PAPER.tau_noop == 0.572
    # the default routes as SAGE when an LLM can merge, else as the portable gate calibrated for MiniLM
    assert GateConfig().mode == "auto" and GateConfig().tau_noop == 0.744
    assert GateConfig().resolved(True).mode == "adaptive" and GateConfig().resolved(False).mode == "binary"
    assert GateConfig(mode="off").resolved(True).mode == "off"


def test_tau_star_has_an_additive_floor() -> None:
    cfg = GateConfig()
    assert tau_star(0.0, cfg.tau0, cfg.tau_min, cfg.lam) == pytest.approx(0.275)
    assert tau_star(1.0, cfg.tau0, cfg.tau_min, cfg.lam) == pytest.approx(0.025 + 0.25 * math.exp(-2))
    assert tau_star(1e6, cfg.tau0, cfg.tau_min, cfg.lam) == pytest.approx(0.025)


def test_ema_trace_by_hand() -> None:
    stars = [0.275, 0.025, 0.025, 0.025]
    trace = []
    tau = None
    for s in stars:
        tau = ema(tau, s, 0.9)
        trace.append(tau)
    # τ1 = τ*1; τt = 0.9 τt−1 + 0.1 τ*t
    assert trace == pytest.approx([0.275, 0.25, 0.2275, 0.20725])


def test_routing_uses_a_band_above_tau() -> None:
    tau, delta = 0.1, 0.025
    assert route(0.9, tau, delta, 0) == "add"  # N = 0 always adds
    assert route(0.0, tau, delta, 0) == "add"
    assert route(0.125, tau, delta, 5) == "add"  # ν ≥ τ + δ
    assert route(0.1249, tau, delta, 5) == "update"  # τ ≤ ν < τ + δ
    assert route(0.1, tau, delta, 5) == "update"
    assert route(0.0999, tau, delta, 5) == "noop"  # ν < τ


def test_binary_gate_compares_the_raw_score() -> None:
    assert route_binary(0.6, 0.572, 3) == "noop"
    assert route_binary(0.572, 0.572, 3) == "add"  # strictly greater skips
    assert route_binary(0.99, 0.572, 0) == "add"


@pytest.mark.parametrize(
    ("field", "value"),
    [("tau0", 1.5), ("alpha", 1.0), ("mode", "strict"), ("kappa", -1.0), ("tau_noop", 2.0), ("scorer", "fast")],
)
def test_bad_gate_config_is_refused_with_the_received_value(field: str, value: object) -> None:
    from sgmem import ConfigError

    with pytest.raises(ConfigError, match=repr(value).replace("(", r"\(").replace(".", r"\.")):
        GateConfig(**{field: value})


def test_gate_and_derived_configs_are_frozen_and_part_of_config() -> None:
    import dataclasses

    import sgmem

    cfg = sgmem.Config()
    assert cfg.gate == sgmem.GateConfig() and cfg.derived == sgmem.DerivedConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.gate.tau0 = 0.5  # type: ignore[misc]
    with pytest.raises(sgmem.ConfigError, match="DerivedConfig.fact_roles"):
        sgmem.DerivedConfig(fact_roles=("robot",))
    with pytest.raises(sgmem.ConfigError, match="Config.gate"):
        sgmem.Config(gate={"tau0": 0.1})  # type: ignore[arg-type]
