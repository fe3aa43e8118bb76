"""MGRetrieval's keyword grouping as published (§3.2 step 2): a memory is also filed under broader existing keywords."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import sgmem
from sgmem.pyramid.retrieve import ensure_keywords

T0 = datetime(2024, 2, 1, tzinfo=timezone.utc)


def _postings(cfg: sgmem.Config, embedder: sgmem.Embedder) -> tuple[set[str], set[str]]:
    with sgmem.Memory(embedder=embedder, config=cfg) as mem:
        mem.add([{"role": "user", "content": "Big city life suits me.", "id": "a"}], scope="s", thread="t", at=T0)
        mem.add(
            [{"role": "user", "content": "We spent the weekend in Chicago.", "id": "b"}],
            scope="s",
            thread="t",
            at=T0 + timedelta(days=1),
        )
        idx = mem._index(mem._store.scope_id("s"))
        kwi = ensure_keywords(mem._store, idx)
        city = kwi.lookup["city"]
        own = {kwi.words[i] for i in kwi.turn_kws.get(1, [])}
        return {idx.ext_ids[r] for r in kwi.rows[city]}, own


def test_a_memory_keeps_its_keywords_and_is_filed_under_a_broader_existing_one(embedder: sgmem.Embedder) -> None:
    grouped = sgmem.Config(pyramid=sgmem.PyramidConfig(group_cosine=0.5))
    under_city, own = _postings(grouped, embedder)
    assert under_city == {"a", "b"} and {"chicago", "weekend", "city"} <= own
    plain_city, plain_own = _postings(sgmem.Config(), embedder)
    assert plain_city == {"a"} and "city" not in plain_own
