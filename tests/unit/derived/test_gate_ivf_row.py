"""The gate's IVF centroids live in a row of their own (gate_ivf), written only when trained: the
gate_state row that every add rewrites no longer carries them (issue 14), and a store written
before migration 0005 is carried over with the same routing."""

from __future__ import annotations

from pathlib import Path

import sgmem
from sgmem.store import DB_FILENAME

from .helpers import BagEmbedder, decisions

CFG = sgmem.Config(gate=sgmem.GateConfig(mode="adaptive", tau0=0.05, tau_min=0.01, delta=0.3, scorer="approx"))


def _turns(i: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"I adopted a cat named Momo number {i % 7} last spring."},
        {"role": "user", "content": f"My sister visits Lisbon every year in month {i % 5}."},
    ]


def test_centroids_are_kept_apart_from_the_per_add_state_and_migrated_from_old_stores(tmp_path: Path) -> None:
    emb = BagEmbedder()
    path = tmp_path / "m"
    with sgmem.Memory(path, embedder=emb, config=CFG) as mem:
        for i in range(12):
            mem.add(_turns(i), scope="s", thread="t")
        conn = mem._store.conn
        ivf = conn.execute("SELECT length(centroids), n_train FROM gate_ivf").fetchall()
        assert len(ivf) == 1 and ivf[0][0] > 0 and ivf[0][1] >= 2
        assert conn.execute("SELECT ivf_centroids FROM gate_state").fetchone()[0] is None
        before = decisions(mem, "s")
    # the layout before migration 0005: centroids in gate_state, no gate_ivf
    import sqlite3

    raw = sqlite3.connect(path / DB_FILENAME)
    with raw:
        raw.execute(
            "UPDATE gate_state SET ivf_centroids = (SELECT centroids FROM gate_ivf), "
            "ivf_n_train = (SELECT n_train FROM gate_ivf)"
        )
        raw.execute("DROP TABLE gate_ivf")
        raw.execute("DELETE FROM migrations WHERE name = '0005_gate_ivf'")
    raw.close()
    with sgmem.Memory(path, embedder=emb, config=CFG) as mem:
        conn = mem._store.conn
        assert conn.execute("SELECT length(centroids) FROM gate_ivf").fetchone()[0] == ivf[0][0]
        assert conn.execute("SELECT ivf_centroids FROM gate_state").fetchone()[0] is None
        mem.add(_turns(3), scope="s", thread="t")
        after = decisions(mem, "s")
    # a second store that never left the new layout routes the same add the same way
    with sgmem.Memory(tmp_path / "n", embedder=emb, config=CFG) as mem:
        for i in range(12):
            mem.add(_turns(i), scope="s", thread="t")
        mem.add(_turns(3), scope="s", thread="t")
        assert decisions(mem, "s") == after
    assert after[: len(before)] == before and len(after) > len(before)
