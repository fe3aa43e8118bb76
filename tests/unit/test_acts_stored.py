"""Dialogue acts stored at ingest: opening a store and its first query never classify its sentences again.

Each sentence's act is read once, when it is added, from the vector ingest
computed, and stored with it (migration ``0010_sentence_acts``). A store
written before that migration is classified once, on its first load, and its
acts written back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sgmem
from sgmem.retrieval.index import ScopeIndex

DAY = "2024-03-01T10:00:00Z"
BY_MEANING = sgmem.Config(acts="auto")  # the classifier (MiniLM has a shipped fit)
CHAT = [
    {"role": "user", "content": "I adopted a beagle called Pepper last spring."},
    {"role": "assistant", "content": "Thanks for telling me. How old is she?"},
    {"role": "user", "content": "Three."},
    {"role": "assistant", "content": "I'm afraid I can't recall where you got her."},
    {"role": "user", "content": "What breed did I adopt?"},
]
QUERY = "What dog do I have?"


@pytest.fixture
def classified(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of sentences each call of the act classifier read (the real classifier, counted)."""
    calls: list[int] = []
    real = ScopeIndex.classify_rows

    def counted(self: ScopeIndex, texts: Any, vecs: Any) -> Any:
        calls.append(len(texts))
        return real(self, texts, vecs)

    monkeypatch.setattr(ScopeIndex, "classify_rows", counted)
    yield calls


def _ranked(mem: sgmem.Memory) -> list[tuple[str, float]]:
    return [(h.text, round(h.relevance, 5)) for h in mem.search(QUERY, scope="u", k=5, min_score=0)]


def _reopen_and_check(open_store: Callable[[], sgmem.Memory], classified: list[int]) -> None:
    with open_store() as mem:
        mem.add(CHAT, scope="u", thread="t", at=DAY)
        fresh = _ranked(mem)
    classified.clear()
    with open_store() as mem:
        assert _ranked(mem) == fresh
    assert classified == []  # the acts came from the store


def _old_store_check(
    open_store: Callable[[], sgmem.Memory],
    downgrade: Callable[[], None],
    acts: Callable[[], list[Any]],
    calls: list[int],
) -> None:
    with open_store() as mem:
        mem.add(CHAT, scope="u", thread="t", at=DAY)
        fresh = _ranked(mem)
    stored = acts()
    assert stored and None not in stored
    downgrade()  # as a store written before the acts were stored
    calls.clear()
    with open_store() as mem:
        assert _ranked(mem) == fresh
    assert sum(calls) == len(stored)  # classified once, on the first load
    assert acts() == stored  # and stored
    calls.clear()
    with open_store() as mem:
        assert _ranked(mem) == fresh
    assert calls == []


def test_a_reopened_sqlite_store_never_classifies_again(
    embedder: sgmem.Embedder, tmp_path: Path, classified: list[int]
) -> None:
    _reopen_and_check(lambda: sgmem.Memory(tmp_path / "s", embedder=embedder, config=BY_MEANING), classified)


def test_an_old_sqlite_store_is_classified_once_and_migrated(
    embedder: sgmem.Embedder, tmp_path: Path, classified: list[int]
) -> None:
    path = tmp_path / "s"

    def acts() -> list[Any]:
        with sqlite3.connect(path / "sgmem.db") as db:
            return [r[0] for r in db.execute("SELECT act FROM sentences ORDER BY id")]

    def downgrade() -> None:
        db = sqlite3.connect(path / "sgmem.db")
        db.execute("ALTER TABLE sentences DROP COLUMN act")
        db.execute("DELETE FROM migrations WHERE name = '0010_sentence_acts'")
        db.execute("DELETE FROM meta WHERE key = 'acts_by'")
        db.commit()
        db.close()

    _old_store_check(lambda: sgmem.Memory(path, embedder=embedder, config=BY_MEANING), downgrade, acts, classified)


def test_a_store_read_by_another_classifier_is_read_again_once(
    embedder: sgmem.Embedder, tmp_path: Path, classified: list[int]
) -> None:
    path = tmp_path / "s"
    with sgmem.Memory(path, embedder=embedder, config=sgmem.Config(acts="rules")) as mem:
        mem.add(CHAT, scope="u", thread="t", at=DAY)
    with sgmem.Memory(path, embedder=embedder, config=BY_MEANING) as mem:
        by_model = _ranked(mem)
    with sqlite3.connect(path / "sgmem.db") as db:
        n = db.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
    assert sum(classified) == n  # every sentence, once
    classified.clear()
    with sgmem.Memory(path, embedder=embedder, config=BY_MEANING) as mem:
        assert _ranked(mem) == by_model
    assert classified == []


def test_a_changed_decision_threshold_reads_the_stored_acts_again(
    embedder: sgmem.Embedder, tmp_path: Path, classified: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The acts a store keeps carry how the classifier's probabilities became acts (``SURE``, the rule's version):
    a release that moves the threshold reclassifies, rather than ranking by acts another threshold decided."""
    from sgmem.text import acts

    path = tmp_path / "s"
    with sgmem.Memory(path, embedder=embedder, config=BY_MEANING) as mem:
        mem.add(CHAT, scope="u", thread="t", at=DAY)
    classified.clear()
    monkeypatch.setattr(acts, "SURE", 0.5)
    with sgmem.Memory(path, embedder=embedder, config=BY_MEANING) as mem:
        _ranked(mem)
    with sqlite3.connect(path / "sgmem.db") as db:
        n = db.execute("SELECT COUNT(*) FROM sentences").fetchone()[0]
    assert sum(classified) == n


@pytest.mark.postgres
def test_a_reopened_postgres_store_never_classifies_again(
    embedder: sgmem.Embedder, pg_url: str, classified: list[int]
) -> None:
    _reopen_and_check(lambda: sgmem.Memory(pg_url, embedder=embedder, config=BY_MEANING), classified)


@pytest.mark.postgres
def test_an_old_postgres_store_is_classified_once_and_migrated(
    embedder: sgmem.Embedder, pg_url: str, classified: list[int]
) -> None:
    import psycopg

    def acts() -> list[Any]:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            return [r[0] for r in admin.execute("SELECT act FROM sentences ORDER BY id")]

    def downgrade() -> None:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("ALTER TABLE sentences DROP COLUMN act")
            admin.execute("DELETE FROM migrations WHERE name = '0010_sentence_acts'")
            admin.execute("DELETE FROM meta WHERE key = 'acts_by'")

    _old_store_check(lambda: sgmem.Memory(pg_url, embedder=embedder, config=BY_MEANING), downgrade, acts, classified)
