"""``sgmem ingest`` of an edited file replaces the edited messages in place as new versions, and says so.

The friction: change "6000 euros" to "7000 euros" in a file and ingest it again, and both texts were stored
and searchable, the new one appended after "Thanks!" out of time order. (``cli._memory`` gets the fast test
embedder: the embedder is not what is under test.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sgmem
from sgmem import cli

from .helpers import HashEmbedder

V1 = {
    "flat": [
        {"role": "user", "content": "We found a flat in Lyon.", "at": "2024-03-01T09:00:00Z"},
        {"role": "assistant", "content": "Great! What is the deposit?", "at": "2024-03-01T09:01:00Z"},
        {"role": "user", "content": "The deposit is 6000 euros.", "at": "2024-03-01T09:02:00Z"},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Thanks!", "at": "2024-03-01T09:05:00Z"},
    ]
}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cli, "_memory", lambda path: sgmem.Memory(path, embedder=HashEmbedder()))
    monkeypatch.delenv("SGMEM_SCOPE", raising=False)
    monkeypatch.delenv("SGMEM_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "store"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def edited(data: dict, old: str, new: str) -> dict:
    return json.loads(json.dumps(data).replace(old, new))


def stored(path: Path) -> list[sgmem.Message]:
    with sgmem.Memory(path, embedder=HashEmbedder()) as mem:
        return mem.messages(scope="u")


def test_an_edited_message_is_replaced_in_place_and_its_old_text_kept(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ingest = ["ingest", str(tmp_path / "chat.json"), "--scope", "u", "--path", str(store)]
    write(tmp_path / "chat.json", V1)
    assert run(ingest, capsys)[0] == 0
    before = stored(store)
    write(tmp_path / "chat.json", edited(V1, "6000 euros", "7000 euros"))
    code, out, _ = run(ingest, capsys)
    assert code == 0
    assert "1 edited, replaced as new versions; 4 already stored, skipped" in out
    after = stored(store)
    assert [m.content for m in after] == [m["content"] for m in edited(V1, "6000 euros", "7000 euros")["flat"]]
    assert [m.at for m in after] == [m.at for m in before]  # time order kept: the edit is not appended
    assert not any("6000" in m.content for m in after)
    # the threads listing shows the thread's real last time, not the re-ingest's
    assert run(["threads", "--scope", "u", "--path", str(store)], capsys)[1].strip().endswith("2024-03-01 09:05")
    code, out, _ = run(["messages", after[2].id or "", "--versions", "--scope", "u", "--path", str(store)], capsys)
    assert code == 0 and "version 1" in out and "The deposit is 6000 euros." in out and "7000 euros" in out
    assert run(ingest, capsys)[1].strip().endswith("(5 already stored, skipped)")  # the same file: no change


def test_a_dry_run_says_what_would_change_and_stores_nothing(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "v1.json", V1)
    v2 = edited(V1, "6000 euros", "7000 euros")
    v2["flat"].append({"role": "user", "content": "Can we move in May?"})
    write(tmp_path / "v2.json", v2)
    fresh = tmp_path / "never"
    code, out, _ = run(["ingest", str(tmp_path / "v1.json"), "--scope", "u", "--path", str(fresh), "--dry-run"], capsys)
    assert code == 0 and "5 messages to add" in out and "nothing was stored" in out
    assert not fresh.exists()
    assert run(["ingest", str(tmp_path / "v1.json"), "--scope", "u", "--path", str(store)], capsys)[0] == 0
    before = stored(store)
    code, out, _ = run(["ingest", str(tmp_path / "v2.json"), "--scope", "u", "--path", str(store), "--dry-run"], capsys)
    assert code == 0
    assert "would replace" in out and "The deposit is 6000 euros." in out and "The deposit is 7000 euros." in out
    assert "flat: would add 1 messages" in out and "1 to replace as new versions" in out
    assert stored(store) == before


def test_a_message_with_its_own_id_is_edited_too_and_appends_come_after(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = {"t": [{"id": "n1", "role": "user", "content": "My locker is number 12.", "at": "2024-01-02T10:00:00Z"}]}
    chat["t"].append({"id": "n2", "role": "user", "content": "See you tomorrow."})
    write(tmp_path / "c.json", chat)
    ingest = ["ingest", str(tmp_path / "c.json"), "--scope", "u", "--path", str(store)]
    assert run(ingest, capsys)[0] == 0
    chat = edited(chat, "number 12", "number 21")
    chat["t"].append({"id": "n3", "role": "user", "content": "Bye."})
    write(tmp_path / "c.json", chat)
    code, out, err = run(ingest, capsys)
    assert code == 0, err
    assert "ingested 1 messages" in out and "1 edited" in out
    assert [(m.id, m.content) for m in stored(store)] == [
        ("n1", "My locker is number 21."),
        ("n2", "See you tomorrow."),
        ("n3", "Bye."),
    ]
    with sgmem.Memory(store, embedder=HashEmbedder()) as mem:
        assert [v.content for v in mem.versions("n1", scope="u")] == [
            "My locker is number 12.",
            "My locker is number 21.",
        ]
