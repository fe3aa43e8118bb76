"""``sgmem ingest`` takes every file ``sgmem export`` writes and refuses the rest before storing anything;
``--json`` output is JSON whatever the memories hold.

The CLI opens ``sgmem.Memory(path)``; here ``sgmem.cli._memory`` gets the fast test embedder and small
limits, so that files over one add's limits stay small (the limits' values are not what is under test).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import sgmem
from sgmem import cli

from .helpers import HashEmbedder

#: an add of at most 40 messages and 60 sentences: a thread longer than that, as a long-running agent
#: writes over many adds, must still export and come back
SMALL = sgmem.Config(limits=sgmem.Limits(max_messages_per_add=40, max_sentences_per_add=60))


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cli, "_memory", lambda path: sgmem.Memory(path, embedder=HashEmbedder(), config=SMALL))
    monkeypatch.delenv("SGMEM_SCOPE", raising=False)
    monkeypatch.delenv("SGMEM_STORE", raising=False)
    return tmp_path / "store"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def stored(path: Path, scope: str = "alice") -> list[sgmem.Message]:
    if not (path / "sgmem.db").exists():
        return []
    with sgmem.Memory(path, embedder=HashEmbedder(), config=SMALL) as mem:
        return mem.messages(scope=scope)


def _refused(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    assert err.startswith("sgmem: error:") and "Traceback" not in err, err
    for w in words:
        assert w in err, err


def _long_thread(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {i} of the log. It has two sentences."}
        for i in range(n)
    ]


def test_a_thread_longer_than_one_add_exports_and_comes_back(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 110 messages, 220 sentences: written by three adds of an agent, each within the limits
    msgs = _long_thread(110)
    with sgmem.Memory(store, embedder=HashEmbedder(), config=SMALL) as mem:
        for lo in range(0, len(msgs), 30):
            mem.add(msgs[lo : lo + 30], scope="alice", thread="agent-log", at="2024-01-01T00:00:00Z")
    backup = tmp_path / "backup.jsonl"
    assert run(["export", "--scope", "alice", "--path", str(store), "-o", str(backup)], capsys)[0] == 0
    restored, again = tmp_path / "restored", tmp_path / "again.jsonl"
    code, out, err = run(["ingest", str(backup), "--scope", "alice", "--path", str(restored)], capsys)
    assert code == 0, err
    assert "ingested 110 messages" in out
    assert run(["export", "--scope", "alice", "--path", str(restored), "-o", str(again)], capsys)[0] == 0
    assert again.read_bytes() == backup.read_bytes()
    # ingesting the backup again stores nothing twice
    code, out, _ = run(["ingest", str(backup), "--scope", "alice", "--path", str(restored)], capsys)
    assert code == 0 and "ingested 0 messages" in out and len(stored(restored)) == 110


def test_a_file_whose_later_thread_breaks_a_limit_stores_nothing(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "INGEST_BATCH", 2)  # the first thread is a batch of its own, added first
    many = " ".join(f"Sentence {i} is here." for i in range(70))  # one message of 70 sentences: over 60
    data = {"fine": _long_thread(3), "huge": [{"role": "user", "content": many}]}
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run(["ingest", str(path), "--scope", "alice", "--path", str(store)], capsys)
    _refused(code, err, "huge", "70", "60", "max_sentences_per_add")
    assert stored(store) == []


@pytest.mark.parametrize("value", [0, False, 5, "", [], {"a": 1}])
def test_a_jsonl_thread_that_is_not_a_name_is_refused(
    store: Path, tmp_path: Path, value: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.jsonl"
    rows = [{"thread": "t", "role": "user", "content": "first"}, {"thread": value, "role": "user", "content": "hi"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, _, err = run(["ingest", str(path), "--scope", "alice", "--path", str(store)], capsys)
    _refused(code, err, "chat.jsonl:2", "thread")
    assert stored(store) == []


def test_a_jsonl_line_without_a_thread_takes_the_flag_or_default(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.jsonl"
    rows = [{"role": "user", "content": "no thread key"}, {"thread": None, "role": "user", "content": "null thread"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert run(["ingest", str(path), "--scope", "alice", "--path", str(store)], capsys)[0] == 0
    assert [(m.thread, m.content) for m in stored(store)] == [("default", "no thread key"), ("default", "null thread")]


@pytest.mark.parametrize(
    "data",
    [
        {"t1": {"role": "user", "content": "hi"}},
        {"t1": "hi"},
        {"t1": None},
        {"t1": [{"role": "user", "content": "fine"}], "t2": {"role": "user", "content": "hi"}},
    ],
)
def test_a_thread_that_is_not_a_list_of_messages_is_refused(
    store: Path, tmp_path: Path, data: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run(["ingest", str(path), "--scope", "alice", "--path", str(store)], capsys)
    _refused(code, err, "a list of messages")
    assert stored(store) == []


@pytest.mark.parametrize("text", ["a right single quote in cp1252: \x92 and \x85", "escape \x1b[2J and \u202e back"])
def test_json_output_is_json_whatever_the_memories_hold(
    store: Path, tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with sgmem.Memory(store, embedder=HashEmbedder(), config=SMALL) as mem:
        mem.add([{"role": "user", "content": text, "id": "m1"}], scope="alice", thread="t")
    code, out, _ = run(["messages", "--scope", "alice", "--json", "--path", str(store)], capsys)
    assert code == 0 and [m["content"] for m in json.loads(out)] == [text]
    code, out, _ = run(["messages", "m1", "--scope", "alice", "--json", "--path", str(store)], capsys)
    assert code == 0 and json.loads(out)[0]["content"] == text
    code, out, _ = run(
        ["search", "quote", "--scope", "alice", "--json", "--min-score", "0", "--path", str(store)], capsys
    )
    assert code == 0 and json.loads(out)[0]["text"] == text
    # and nothing in it drives a terminal: the control characters are JSON escapes
    assert not any(c in out for c in "\x1b\x85\x92\u202e")


def test_the_same_message_in_two_threads_or_twice_in_one_is_stored_each_time(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A message without an id gets one from its thread, its position and its text: "ok" said twice, or the same
    greeting opening two threads, are different messages."""
    data = {
        "monday": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
        "tuesday": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "ok"},
            {"role": "assistant", "content": "ok"},
        ],
    }
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run(["ingest", str(path), "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0, err
    assert [(m.thread, m.content) for m in stored(store)] == [
        ("monday", "hi"),
        ("monday", "ok"),
        ("tuesday", "hi"),
        ("tuesday", "ok"),
        ("tuesday", "ok"),
    ]
    assert len({m.id for m in stored(store)}) == 5


def test_a_message_edited_in_the_file_is_stored_when_ingested_again(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The edited text is not taken for the message already stored (nor refused as an id clash)."""
    path = tmp_path / "chat.json"
    msgs = [{"role": "user", "content": "The budget is 6000 euros."}, {"role": "assistant", "content": "Noted."}]
    path.write_text(json.dumps({"plan": msgs}), encoding="utf-8")
    assert run(["ingest", str(path), "--scope", "alice", "--path", str(store)], capsys)[0] == 0
    msgs[0]["content"] = "The budget is 7000 euros."
    path.write_text(json.dumps({"plan": msgs}), encoding="utf-8")
    code, _, err = run(["ingest", str(path), "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0, err
    assert "The budget is 7000 euros." in [m.content for m in stored(store)]
