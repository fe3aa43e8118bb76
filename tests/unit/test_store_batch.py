"""An add's messages and sentences go in with one ``executemany`` each, storing what one INSERT per row stored.

:mod:`sgmem.store.batch`: the new rows' ids are those after the first one's
(checked with ``last_insert_rowid()``; read back when not). The rows an add
stores — ids, rounds, turn order, sentence ids, edges — are compared with the
one-statement-per-row path (``SQLiteStore.consecutive_ids = False``, what
PostgreSQL uses) and with the read-back path.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import sgmem
import sgmem.store.batch as batch
from sgmem.store.sqlite import SQLiteStore

AT = "2024-03-01T09:00:00+00:00"


def _adds() -> list[tuple[str, list[dict[str, Any]]]]:
    def msg(i: int, role: str, text: str, session: str | None = None) -> dict[str, Any]:
        m = {"role": role, "content": text, "id": f"m{i}", "at": AT}
        if session:
            m["session"] = session
        return m

    return [
        (
            "t1",
            [
                msg(1, "user", "I moved to Lisbon in May. It is sunny there."),
                msg(2, "assistant", "Lisbon is lovely! Do you like the food?"),
                msg(3, "assistant", "Try the pastel de nata."),
                msg(4, "user", "I adopted a dog named Biscuit. He is two."),
                msg(5, "assistant", "Biscuit sounds fun."),
            ],
        ),
        # continues t1: the first reply belongs to the round the last add's user turn opened
        ("t1", [msg(6, "assistant", "How old is Biscuit now?"), msg(7, "user", "Two years. He loves the beach.")]),
        # a reply first in a new session opens its own round
        ("t1", [msg(8, "assistant", "Welcome back.", "s2"), msg(9, "user", "Thanks! I started pottery.", "s2")]),
        ("t2", [msg(10, "assistant", "Reply without a question."), msg(11, "assistant", "And another one.")]),
        ("t2", [msg(12, "user", "Single.")]),
    ]


def _build(path: Path, embedder: sgmem.Embedder) -> dict[str, list[tuple[Any, ...]]]:
    with sgmem.Memory(path, embedder=embedder) as mem:
        for thread, msgs in _adds():
            mem.add(msgs, scope="s", thread=thread)
        mem.replace(
            [{"role": "user", "content": "Replaced. Now two sentences.", "id": "r1", "at": AT}],
            scope="s",
            thread="t2",
            message_ids=["m12"],
        )
    con = sqlite3.connect(path / "sgmem.db")
    try:
        return {
            "messages": con.execute(
                "SELECT id, thread, ext_id, role, session, round_id, turn_idx, content FROM messages ORDER BY id"
            ).fetchall(),
            "sentences": con.execute(
                "SELECT id, message_id, idx, start, end, text FROM sentences ORDER BY id"
            ).fetchall(),
            "turn_edges": con.execute("SELECT src, dst FROM turn_edges ORDER BY src, dst").fetchall(),
            "sentence_edges": con.execute("SELECT src, dst, weight FROM sentence_edges ORDER BY src, dst").fetchall(),
            "vocabulary": con.execute("SELECT id, keyword, lemma, canonical_id FROM vocabulary ORDER BY id").fetchall(),
            "postings": con.execute("SELECT keyword_id, message_id FROM keyword_postings ORDER BY 1, 2").fetchall(),
            "derived": con.execute("SELECT id, kind, text, version FROM derived ORDER BY id").fetchall(),
            "sources": con.execute("SELECT memory_id, message_id, role FROM derived_sources ORDER BY 1, 2").fetchall(),
            "decisions": con.execute(
                "SELECT id, message_id, action, score, memory_id, candidate FROM gate_decisions ORDER BY id"
            ).fetchall(),
        }
    finally:
        con.close()


@pytest.fixture
def one_per_row(tmp_path: Path, embedder: sgmem.Embedder, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    with monkeypatch.context() as m:
        m.setattr(SQLiteStore, "consecutive_ids", False)
        return _build(tmp_path / "per-row", embedder)


def test_batched_inserts_store_the_same_rows_as_one_insert_per_row(
    tmp_path: Path, embedder: sgmem.Embedder, one_per_row: dict[str, Any]
) -> None:
    got = _build(tmp_path / "batched", embedder)
    assert got == one_per_row
    assert got["vocabulary"] and got["postings"] and got["decisions"]
    rounds = {ext: rid for _, _, ext, _, _, rid, _, _ in got["messages"]}
    ids = {ext: mid for mid, _, ext, *_ in got["messages"]}
    assert rounds["m2"] == rounds["m3"] == ids["m1"]  # replies join the user's round
    assert rounds["m6"] == ids["m4"]  # ... across adds
    assert rounds["m8"] == ids["m8"] and rounds["m9"] == ids["m9"]  # a new session opens rounds
    assert rounds["m11"] == ids["m10"]


def test_ids_read_back_when_they_are_not_consecutive_store_the_same_rows(
    tmp_path: Path, embedder: sgmem.Embedder, one_per_row: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "_consecutive", lambda first, last, n: False)
    assert _build(tmp_path / "read-back", embedder) == one_per_row


def test_an_add_inserts_its_sentences_and_messages_in_a_few_statements(
    tmp_path: Path, embedder: sgmem.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sgmem.store import connection

    calls: list[str] = []
    real = connection.Conn.execute

    def execute(self: Any, sql: str, parameters: Any = ()) -> Any:
        calls.append(sql.split("(")[0].strip())
        return real(self, sql, parameters)

    with sgmem.Memory(tmp_path / "m", embedder=embedder) as mem:
        mem.add(_adds()[0][1], scope="s", thread="t1")
        monkeypatch.setattr(connection.Conn, "execute", execute)
        res = mem.add(
            [{"role": "user", "content": " ".join(f"Sentence number {i} is here." for i in range(12))}] * 1
            + [{"role": "assistant", "content": f"Reply {i}. Again {i}."} for i in range(6)],
            scope="s",
            thread="t1",
        )
    assert res.sentences == 24 and res.messages == 7
    assert calls.count("INSERT INTO sentences") == 1  # the first; the other 23 in one executemany
    assert calls.count("INSERT INTO messages") == 1
    assert calls.count("UPDATE messages SET round_id = id WHERE id = ?") == 0
