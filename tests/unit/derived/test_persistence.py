"""The gate's state survives a restart: the same stream routes the same way either way."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import sgmem

from .helpers import BagEmbedder, decisions

DAY = datetime(2024, 3, 1, 9, 0, tzinfo=timezone.utc)
LINES = [
    "I adopted a grey cat named Miso last spring.",
    "My cat Miso loves tuna and sleeps on my keyboard.",
    "I am training for the Berlin marathon in September.",
    "I adopted a grey cat named Miso last spring.",
    "Miso the grey cat was adopted by me last spring.",
    "I run about sixty kilometres every week for the marathon.",
    "My sister Priya lives in Lisbon with her husband.",
    "I am training for the Berlin marathon in September.",
    "Priya, my sister, moved to Lisbon two years ago.",
    "I started learning the cello in January.",
    "Cello lessons are every Tuesday evening.",
    "My cat Miso loves tuna and sleeps on my keyboard.",
]
STREAM = [
    [{"role": "user", "content": LINES[i]}, {"role": "assistant", "content": "Tell me more about that."}]
    for i in range(len(LINES))
]


def _run(path: Path, cfg: sgmem.Config, embedder: sgmem.Embedder, restart_at: int | None) -> tuple[object, ...]:
    mem = sgmem.Memory(path, embedder=embedder, config=cfg)
    try:
        for i, msgs in enumerate(STREAM):
            if i == restart_at:
                mem.close()
                mem = sgmem.Memory(path, embedder=embedder, config=cfg)
            mem.add(msgs, scope="s", thread="t", at=DAY + timedelta(hours=i))
        s = mem.stats("s").scopes[0]
        facts = sorted(h.text for h in mem.search("anything", scope="s", kinds=["fact"], k=100))
        return decisions(mem, "s"), facts, s.gate
    finally:
        mem.close()


@pytest.mark.parametrize(
    "cfg",
    [
        sgmem.Config(gate=sgmem.GateConfig(mode="adaptive", step_messages=4)),
        # a wide band so Updates (merges) happen, and the approximate scorer with its IVF index
        sgmem.Config(gate=sgmem.GateConfig(mode="adaptive", tau0=0.05, tau_min=0.01, delta=0.3, scorer="approx", step_messages=4)),
    ],
    ids=["adaptive-exact", "merging-approx"],
)
def test_restart_halfway_gives_the_same_decisions(tmp_path: Path, cfg: sgmem.Config) -> None:
    embedder = BagEmbedder()
    straight = _run(tmp_path / "a", cfg, embedder, None)
    restarted = _run(tmp_path / "b", cfg, embedder, len(STREAM) // 2)
    assert straight == restarted
    actions = {a for a, _, _ in straight[0]}  # type: ignore[union-attr]
    assert "add" in actions and actions & {"noop", "update"}


def test_tau_and_counters_are_read_back_exactly(tmp_path: Path) -> None:
    embedder = BagEmbedder()
    with sgmem.Memory(tmp_path, embedder=embedder) as mem:
        for i, msgs in enumerate(STREAM[:5]):
            mem.add(msgs, scope="s", thread="t", at=DAY + timedelta(hours=i))
        before = mem.stats("s").scopes[0].gate
    with sgmem.Memory(tmp_path, embedder=embedder) as mem:
        assert mem.stats("s").scopes[0].gate == before
        assert before["tau"] is not None and before["messages"] == 10
