"""A search while another host deletes answers from one state or the other, and never raises.

Issue 29 item 3: ``mode="bm25"`` read the turn texts for its index after the
generation check, so a delete committed in between (by another process, or
another host on PostgreSQL) made the search raise a bare ``KeyError`` from
``Memory._turn_texts``. The first test puts the delete exactly in that gap
(no timing involved); the second races a deleter against a searcher for a
bounded number of rounds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import sgmem

from .helpers import FastEmbedder

SCOPE = "race"
IDS = [f"m{i}" for i in range(6)]


def _msgs(ids: list[str]) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"The quick fox number {i} jumps over the lazy dog.", "id": i} for i in ids]


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    if request.param == "postgres":
        yield request.getfixturevalue("pg_url")
    else:
        yield tmp_path / "store"


@pytest.mark.parametrize("mode", ["bm25", "hybrid"])
def test_a_delete_between_the_index_check_and_the_text_read(
    target: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    emb = FastEmbedder()
    with sgmem.Memory(target, embedder=emb) as searcher, sgmem.Memory(target, embedder=emb) as deleter:
        searcher.add(_msgs(IDS), scope=SCOPE, thread="t")
        checked = searcher._index
        fired: list[bool] = []

        def index_then_another_host_deletes(scope_id: int) -> Any:
            idx = checked(scope_id)
            if not fired:  # the other host's delete commits right after this host checked the generation
                fired.append(True)
                deleter.delete(scope=SCOPE, message_ids=["m3"])
            return idx

        monkeypatch.setattr(searcher, "_index", index_then_another_host_deletes)
        hits = searcher.search("quick fox jumps", scope=SCOPE, k=10, mode=mode, min_score=0)
        assert fired
        found = {i for h in hits for i in h.message_ids}
        assert found == set(IDS) - {"m3"}  # the deleted message is never returned
        monkeypatch.undo()
        assert {
            i for h in searcher.search("quick fox", scope=SCOPE, k=10, mode=mode, min_score=0) for i in h.message_ids
        } == set(IDS) - {"m3"}


def test_bm25_searches_while_another_host_deletes_and_adds(target: Any) -> None:
    emb = FastEmbedder()
    rounds = 40
    errors: list[BaseException] = []
    added = set(IDS) | {f"n{r}" for r in range(rounds)}
    with sgmem.Memory(target, embedder=emb) as searcher, sgmem.Memory(target, embedder=emb) as other:
        searcher.add(_msgs(IDS), scope=SCOPE, thread="t")
        done = threading.Event()

        def churn() -> None:
            try:
                for r in range(rounds):
                    new = f"n{r}"
                    other.add(_msgs([new]), scope=SCOPE, thread="t")
                    other.delete(scope=SCOPE, message_ids=[new])
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
            finally:
                done.set()

        worker = threading.Thread(target=churn)
        worker.start()
        searches = 0
        try:
            while not done.is_set() or searches < 5:
                hits = searcher.search("quick fox jumps", scope=SCOPE, k=20, mode="bm25", min_score=0)
                found = {i for h in hits for i in h.message_ids}
                assert set(IDS) <= found <= added
                searches += 1
        finally:
            worker.join(timeout=300)
        assert not errors and not worker.is_alive()
