"""Another process's add extends this process's cached scope index; a removal rebuilds it.

Two ``Memory`` objects on one store play two processes (each has its own
caches); the multi-process version on PostgreSQL is in
``tests/reliability/test_postgres_hosts.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

import sgmem

from .helpers import HashEmbedder

pytestmark = pytest.mark.both_backends

CFG = sgmem.Config(min_relevance=0)
MODES = [m for m in sgmem.MODES if m != "entity"]


def _msgs(tag: str, n: int = 4) -> list[dict[str, str]]:
    return [
        {"id": f"{tag}-{j}", "role": "user" if j % 2 == 0 else "assistant", "content": f"{tag} item {j} about {tag}x"}
        for j in range(n)
    ]


def _answers(mem: sgmem.Memory) -> list[Any]:
    return [
        [(h.text, round(h.score, 5)) for h in mem.search(q, scope="s", k=6, mode=mode)]
        for q in ("alpha item 1", "betax", "gammax item 3")
        for mode in MODES
    ]


def test_an_add_elsewhere_extends_the_cache_and_a_delete_rebuilds_it(store_path: Any) -> None:
    emb = HashEmbedder()
    with (
        sgmem.Memory(store_path, embedder=emb, config=CFG) as here,
        sgmem.Memory(store_path, embedder=emb, config=CFG) as there,
    ):
        here.add(_msgs("alpha"), scope="s", thread="a")
        _answers(here)  # every part of here's cache is built
        sid = here._store.scope_id("s")
        cached = here._indexes.get(sid)
        there.add(_msgs("beta"), scope="s", thread="b")
        there.add(_msgs("gamma"), scope="s", thread="a")
        got = _answers(here)
        assert here._indexes.get(sid) is cached, "an add by another process extends the cache in place"
        assert cached.n_turns == 12
        with sgmem.Memory(store_path, embedder=emb, config=CFG) as fresh:  # built from the store alone
            assert _answers(fresh) == got
        there.delete(scope="s", message_ids=["beta-1"])
        there.add(_msgs("delta", 1), scope="s", thread="b")  # as many messages as before the delete
        hits = [
            i
            for mode in MODES
            for h in here.search("beta item 1 betax", scope="s", k=20, mode=mode)
            for i in h.message_ids
        ]
        assert "beta-1" not in hits, "a message deleted elsewhere was served from the cache"
        assert here._indexes.get(sid) is not cached, "a delete elsewhere rebuilds the cache"
        assert "delta-0" in [i for h in here.search("deltax", scope="s", k=3, mode="bm25") for i in h.message_ids]
