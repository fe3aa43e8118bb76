"""Small frictions a new user met in the command line and the agent tools, each as what they now see.

``forget --all`` without a terminal, a mistyped ``forget --thread``, ``messages --limit``, a flag for the DEBUG
log, and the ``forget`` tool called with neither ids nor a thread. (``cli._memory`` gets the fast test
embedder: the embedder is not what is under test.)
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import sgmem
from sgmem import cli
from sgmem.tools import MemoryTools

from .helpers import HashEmbedder

CHAT = {
    "japan-trip": [{"role": "user", "content": f"Japan plan {i}.", "at": "2024-04-01T10:00:00Z"} for i in range(5)],
    "work": [{"role": "user", "content": "My manager is Giulia.", "at": "2024-04-02T10:00:00Z"}],
}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.setattr(cli, "_memory", lambda path: sgmem.Memory(path, embedder=HashEmbedder()))
    monkeypatch.delenv("SGMEM_SCOPE", raising=False)
    monkeypatch.delenv("SGMEM_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chat.json").write_text(json.dumps(CHAT), encoding="utf-8")
    path = tmp_path / "store"
    assert cli.main(["ingest", "chat.json", "--scope", "alice", "--path", str(path)]) == 0
    capsys.readouterr()
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def count(path: Path) -> int:
    with sgmem.Memory(path, embedder=HashEmbedder()) as mem:
        return len(mem.messages(scope="alice"))


def test_forget_all_without_a_terminal_says_to_add_yes(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # a pipe, CI: no terminal to ask on
    code, _, err = run(["forget", "--all", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 2
    assert "received False" not in err
    assert "no terminal to ask on" in err and "--yes to delete every memory of scope 'alice' (2 threads)" in err
    assert count(store) == 6


def test_forget_of_a_mistyped_thread_lists_the_threads(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["forget", "--thread", "japn-trip", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 1
    assert "no thread 'japn-trip'; did you mean 'japan-trip'?" in err
    assert "'japan-trip', 'work'" in err
    code, _, err = run(["forget", "nope-1", "--scope", "alice", "--path", str(store)], capsys)
    assert code == 1 and "no message has these ids" in err
    assert count(store) == 6


def test_messages_limit_says_it_shows_the_most_recent(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["messages", "--scope", "alice", "--path", str(store), "--limit", "2"], capsys)
    assert code == 0
    assert [line.split("\t")[-1] for line in out.splitlines()] == ["user: Japan plan 4.", "user: My manager is Giulia."]
    assert "the 2 most recent of 6 messages, oldest first" in err
    code, out, err = run(["messages", "--scope", "alice", "--path", str(store), "--limit", "10"], capsys)
    assert len(out.splitlines()) == 6 and err == ""
    with pytest.raises(SystemExit):
        cli.main(["messages", "--help"])
    assert "N most recent messages, listed oldest first" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_flag_shows_the_sgmem_log(store: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    search = ["search", "Who is my manager?", "--scope", "alice", "--path", str(store)]
    code, _, err = run(search, capsys)
    assert code == 0 and "DEBUG" not in err
    argv = ["--debug", *search] if where == "before" else [*search, "--debug"]
    code, out, err = run(argv, capsys)
    assert code == 0 and "Giulia" in out
    assert "sgmem.memory DEBUG search scope='alice'" in err
    code, _, err = run(search, capsys)  # only for that call
    assert "DEBUG" not in err


def test_the_forget_tool_with_neither_ids_nor_thread_says_so(memory: sgmem.Memory) -> None:
    memory.add([{"role": "user", "content": "hi"}], scope="alice", thread="t")
    tools = MemoryTools(memory)
    with pytest.raises(sgmem.InvalidInputError) as neither:
        tools.forget("alice")
    assert "not both" not in str(neither.value) and "neither" in str(neither.value)
    with pytest.raises(sgmem.InvalidInputError) as both:
        tools.forget("alice", message_ids=["x"], thread="t")
    assert "both message_ids and thread" in str(both.value)
