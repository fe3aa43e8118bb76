"""The ``sgmem`` command manages a user's data: threads, messages, export, forget; ingest is idempotent.

The CLI opens ``sgmem.Memory(path)``; here ``sgmem.cli._memory`` gets the fast test embedder (the
embedder is not what is under test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

import sgmem
from sgmem import cli

from .helpers import HashEmbedder

CHAT = {
    "chat-1": [
        {"role": "user", "name": "Alice", "content": "I adopted a grey cat named Miso.", "at": "2024-03-02T10:00:00Z"},
        {"role": "assistant", "content": "Lovely! How old is Miso?"},
        {"role": "user", "name": "Alice", "content": "Two years old. She loves the balcony."},
    ],
    "trip": [
        {
            "role": "user",
            "content": "We fly to Lisbon — 🇵🇹 \u202e and back\x1b[2J.",
            "id": "mine-1",
            "metadata": {"k": [1, "two"]},
            "at": "2024-05-01T08:30:00+02:00",
        },
        {"role": "assistant", "content": "Have a good trip!", "at": "2024-05-01T08:31:00Z", "session": "s9"},
    ],
}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cli, "_memory", lambda path: sgmem.Memory(path, embedder=HashEmbedder()))
    monkeypatch.delenv("SGMEM_SCOPE", raising=False)
    monkeypatch.delenv("SGMEM_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "store"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def stored(path: Path, scope: str = "alice") -> list[sgmem.Message]:
    with sgmem.Memory(path, embedder=HashEmbedder()) as mem:
        return mem.messages(scope=scope)


def test_export_ingest_export_gives_the_same_file(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = write(tmp_path / "chat.json", CHAT)
    assert run(["ingest", str(chat), "--scope", "alice", "--path", str(store)], capsys)[0] == 0
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert run(["export", "--scope", "alice", "--path", str(store), "-o", str(first)], capsys)[0] == 0
    other = tmp_path / "other"
    assert run(["ingest", str(first), "--scope", "alice", "--path", str(other)], capsys)[0] == 0
    assert run(["export", "--scope", "alice", "--path", str(other), "-o", str(second)], capsys)[0] == 0
    assert first.read_bytes() == second.read_bytes()
    # every message, date, thread, speaker, id and metadata made the trip
    a, b = stored(store), stored(other)
    assert [m.to_dict() for m in a] == [m.to_dict() for m in b] and len(a) == 5
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    assert rows[3]["content"] == CHAT["trip"][0]["content"] and rows[3]["metadata"] == {"k": [1, "two"]}
    assert rows[3]["id"] == "mine-1" and rows[0]["name"] == "Alice" and rows[4]["session"] == "s9"
    # to stdout as well, the same lines
    code, out, _ = run(["export", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and out == first.read_text()


def test_ingesting_a_file_twice_stores_it_once(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = write(tmp_path / "chat.json", CHAT)
    argv = ["ingest", str(chat), "--scope", "alice", "--path", str(store)]
    assert run(argv, capsys)[0] == 0
    code, out, _ = run(argv, capsys)
    assert code == 0 and "ingested 0 messages" in out and "5 already stored" in out
    assert len(stored(store)) == 5
    # a message appended to a thread is the only one added next time
    grown = {**CHAT, "chat-1": [*CHAT["chat-1"], {"role": "assistant", "content": "A balcony cat!"}]}
    write(chat, grown)
    code, out, _ = run(argv, capsys)
    assert code == 0 and "ingested 1 messages" in out
    assert [m.content for m in stored(store)].count("A balcony cat!") == 1 and len(stored(store)) == 6
    # an id already stored with another text is refused, and nothing is added
    write(chat, {"chat-1": [{"role": "user", "content": "something else", "id": "mine-1"}]})
    code, _, err = run(argv, capsys)
    assert code == 2 and "mine-1" in err and len(stored(store)) == 6


def test_undated_messages_take_the_previous_date_or_the_files(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = write(tmp_path / "chat.json", {"t": [{"role": "user", "content": "no date here"}, *CHAT["chat-1"]]})
    os.utime(chat, (1_600_000_000, 1_600_000_000))  # 2020-09-13
    code, _, err = run(["ingest", str(chat), "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and "modification time" in err
    dates = [m.at for m in stored(store)]
    assert dates[0] == datetime.fromtimestamp(1_600_000_000, timezone.utc)
    reply_date = datetime(2024, 3, 2, 10, tzinfo=timezone.utc)
    assert dates[1:] == [reply_date] * 3  # the reply is dated with its question, not today
    code, _, _ = run(["ingest", str(chat), "--scope", "bob", "--path", str(store), "--at", "2021-01-01"], capsys)
    assert code == 0 and stored(store, "bob")[0].at == datetime(2021, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "cat", "--scope", "alice"],
        ["context", "cat", "--scope", "alice"],
        ["stats"],
        ["threads", "--scope", "alice"],
        ["messages", "--scope", "alice"],
        ["export", "--scope", "alice"],
        ["forget", "--scope", "alice", "--all", "--yes"],
    ],
)
def test_reading_a_store_that_does_not_exist_fails_and_creates_nothing(
    store: Path, tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "tpyo"
    code, out, err = run([*argv, "--path", str(typo)], capsys)
    assert code == 2 and "no sgmem store at" in err and str(typo) in err
    assert not typo.exists() and out == ""


def test_threads_messages_and_forget(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(["ingest", str(write(tmp_path / "c.json", CHAT)), "--scope", "alice", "--path", str(store)], capsys)
    code, out, _ = run(["threads", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and out.splitlines()[0].startswith("chat-1\t3 messages\t2024-03-02 10:00")
    assert out.splitlines()[1].startswith("trip\t2 messages")
    code, out, _ = run(["messages", "--scope", "alice", "--thread", "trip", "--path", str(store)], capsys)
    assert code == 0 and out.splitlines()[0].startswith("mine-1\t2024-05-01 08:30\ttrip\tuser: We fly to Lisbon")
    assert "\\x1b" in out and "\x1b" not in out  # stored text cannot drive the terminal
    code, out, _ = run(["messages", "mine-1", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and "id: mine-1" in out and "at: 2024-05-01T08:30:00+02:00" in out
    code, out, err = run(["forget", "mine-1", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and out.startswith("deleted 1 messages")
    assert "mine-1" not in {m.id for m in stored(store)}
    code, out, _ = run(["forget", "--thread", "chat-1", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and out.startswith("deleted 3 messages") and "chat-1" in out
    code, _, err = run(["forget", "nope", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 1 and "nothing matched" in err
    # a whole scope only with --yes when nobody can be asked (stdin is not a terminal under pytest)
    code, _, err = run(["forget", "--all", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 2 and "--yes" in err and len(stored(store)) == 1
    code, out, _ = run(["forget", "--all", "--yes", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and out.startswith("deleted 1 messages") and stored(store) == []
    code, _, err = run(["forget", "x", "--thread", "t", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 2 and "exactly one of" in err


def test_empty_results_say_why(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run(["ingest", str(write(tmp_path / "c.json", CHAT)), "--scope", "alice", "--path", str(store)], capsys)
    # nothing the hash embedder ranks reaches the cutoff; the broad-question rule off (its threshold is MiniLM's: the
    # hash embedder's random 8-d vectors put any query near the generic requests about the user)
    strict = sgmem.Config(min_relevance=0.99, broad_cosine=1.0)
    monkeypatch.setattr(cli, "_memory", lambda path: sgmem.Memory(path, embedder=HashEmbedder(), config=strict))
    code, out, _ = run(["search", "cat", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and "nothing passed the relevance cutoff" in out and "--min-score" in out
    code, out, _ = run(["search", "cat", "--scope", "alice", "--path", str(store), "--min-score", "0"], capsys)
    assert code == 0 and out.startswith("  1. [")
    code, out, err = run(["context", "cat", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 0 and out == "" and "nothing passed the relevance cutoff" in err
    code, out, _ = run(["context", "cat", "--scope", "alice", "--path", str(store), "--min-score", "0"], capsys)
    assert "Miso" in out
    code, out, _ = run(["search", "cat", "--scope", "bob", "--path", str(store)], capsys)
    assert code == 0 and "scope 'bob' holds no memories" in out and "'alice'" in out


def test_the_scope_and_store_come_from_the_environment(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SGMEM_SCOPE", "alice")
    monkeypatch.setenv("SGMEM_PATH", str(store))
    for argv in (["ingest", str(write(tmp_path / "c.json", CHAT))], ["threads"], ["messages"], ["export"]):
        code, out, err = run(argv, capsys)
        assert code == 0, err
    assert "chat-1" in out and stored(store)


def test_every_flag_has_help_and_modes_are_listed() -> None:
    parser = cli.build_parser()
    missing = []

    def walk(p: object, where: str) -> None:
        for action in p._actions:  # type: ignore[attr-defined]
            if action.choices and isinstance(action.choices, dict):
                for name, sp in action.choices.items():
                    walk(sp, f"{where} {name}")
            elif not action.help:
                missing.append(f"{where} {'/'.join(action.option_strings) or action.dest}")
            if "--mode" in action.option_strings:
                assert tuple(action.choices) == sgmem.MODES

    walk(parser, "sgmem")
    assert missing == []


def test_version_and_python_m_sgmem() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    out = subprocess.run([sys.executable, "-m", "sgmem", "--version"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == f"sgmem {sgmem.__version__}"
    out = subprocess.run([sys.executable, "-m", "sgmem", "--help"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "export" in out.stdout and "forget" in out.stdout


def test_deeply_nested_json_is_a_clear_error(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    code, _, err = run(["ingest", str(deep), "--scope", "alice", "--path", str(store)], capsys)
    assert code == 2 and err.startswith("sgmem: error:") and "nested" in err and "Traceback" not in err
    assert not store.exists()
