"""What users hit in their first hour (issue 12, items 5 and 9): model preload, paths, files, limits, inputs."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import sgmem
from sgmem import cli

from .helpers import CAT_THREAD, DAY1, add_sample, snapshot

REPO = Path(__file__).resolve().parents[2]


class LoadCountingEmbedder:
    """A real embedder behind the ``load()`` hook sgmem's own embedder has; counts loads and embeds."""

    def __init__(self, inner: sgmem.Embedder) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.loads = 0
        self.embeds = 0

    def load(self) -> None:
        self.loads += 1

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embeds += 1
        return self.inner.embed(texts)


# ------------------------------------------------------------------ item 5
def test_preload_loads_the_model_in_the_constructor(embedder: sgmem.Embedder) -> None:
    lazy = LoadCountingEmbedder(embedder)
    with sgmem.Memory(embedder=lazy):
        assert (lazy.loads, lazy.embeds) == (0, 0)  # the default stays lazy
    eager = LoadCountingEmbedder(embedder)
    with sgmem.Memory(embedder=eager, preload=True) as mem:
        assert (eager.loads, eager.embeds) == (1, 1)  # before any add or search
        assert mem.warmup() >= 0.0 and eager.loads == 2


def test_preload_is_a_bool(embedder: sgmem.Embedder) -> None:
    with pytest.raises(sgmem.InvalidInputError, match="preload"):
        sgmem.Memory(embedder=embedder, preload="yes")  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_bundled_model_preloads_without_switching_the_host_offline(tmp_path: Path) -> None:
    """``preload=True`` really loads MiniLM, and loading it leaves HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE alone."""
    code = (
        "import os, json, sgmem\n"
        "from sgmem.embed.minilm import SentenceTransformerEmbedder\n"
        "e = SentenceTransformerEmbedder()\n"
        "m = sgmem.Memory(embedder=e, preload=True)\n"
        "print(json.dumps([e.loaded, os.environ.get('HF_HUB_OFFLINE'), os.environ.get('TRANSFORMERS_OFFLINE')]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded, hub, transformers = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded is True and hub is None and transformers is None


# ------------------------------------------------------------------ item 9: paths
def test_an_empty_path_is_refused(embedder: sgmem.Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for bad in ("", "   "):
        with pytest.raises(sgmem.InvalidInputError, match="current directory"):
            sgmem.Memory(bad, embedder=embedder)
    assert list(tmp_path.iterdir()) == []  # nothing written to the current directory


def test_sqlites_memory_name_opens_an_in_memory_store(
    embedder: sgmem.Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with sgmem.Memory(":memory:", embedder=embedder) as mem:
        assert mem.path is None
        add_sample(mem)
        assert mem.search("cat", scope="alice", k=3)
    assert list(tmp_path.iterdir()) == []  # no directory named ":memory:" in the current directory
    with pytest.raises(sgmem.InvalidInputError, match="in-memory"):
        sgmem.Memory(":memory:", embedder=embedder, read_only=True)


def test_tilde_is_expanded(embedder: sgmem.Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    with sgmem.Memory("~/memory", embedder=embedder) as mem:
        assert mem.path == home / "memory"
    assert (home / "memory" / "sgmem.db").is_file() and not (cwd / "~").exists()


def test_a_relative_path_names_the_directory_it_named_at_opening(
    embedder: sgmem.Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process that changes directory after opening ./memory (a server, a test) keeps one store: the
    index cache written at close goes next to the database, not into a new ./memory where it now stands."""
    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    monkeypatch.chdir(first)
    mem = sgmem.Memory("./memory", embedder=embedder)
    assert mem.path == first / "memory"
    add_sample(mem)
    assert mem.search("cat", scope="alice", k=3)
    monkeypatch.chdir(later)
    mem.close()
    assert list(later.iterdir()) == []
    assert (first / "memory" / "faiss").is_dir()


def test_opening_never_makes_a_read_only_database_writable(embedder: sgmem.Embedder, store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        add_sample(mem)
    db = store_path / "sgmem.db"
    db.chmod(0o400)
    with sgmem.Memory(store_path, embedder=embedder, read_only=True) as ro:
        assert ro.search("What is my cat called?", scope="alice")[0].message_ids == ("c1",)
        assert ro.messages(scope="alice", thread="chat-1")
        before = snapshot(ro)
        with pytest.raises(sgmem.StoreError, match="read-only"):
            ro.add([dict(CAT_THREAD[0], id="new")], scope="alice", thread="chat-1", at=DAY1)
        with pytest.raises(sgmem.StoreError, match="read-only"):
            ro.delete(scope="alice")
        assert snapshot(ro) == before
    assert stat.S_IMODE(db.stat().st_mode) == 0o400
    if os.geteuid() == 0:  # root may write anyway; the file's mode must still be left alone
        sgmem.Memory(store_path, embedder=embedder).close()
        assert stat.S_IMODE(db.stat().st_mode) == 0o400
    else:
        with pytest.raises(sgmem.StoreError, match="permission denied") as err:
            sgmem.Memory(store_path, embedder=embedder)
        assert not isinstance(err.value, sgmem.CorruptStoreError)
    db.chmod(0o600)


def _files(directory: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.rglob("*")}


def test_a_read_only_opening_leaves_the_store_folder_as_it_was(embedder: sgmem.Embedder, store_path: Path) -> None:
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        add_sample(mem)
    before = _files(store_path)
    assert "sgmem.db-wal" not in before  # a store closed by its last writer: the database file alone
    with sgmem.Memory(store_path, embedder=embedder, read_only=True) as ro:
        assert ro.search("What is my cat called?", scope="alice")[0].message_ids == ("c1",)
    assert _files(store_path) == before
    # while a writer has it open, the log files are the writer's: a reader closing leaves them, and the writer's
    # later writes are all there
    with sgmem.Memory(store_path, embedder=embedder) as writer:
        writer.add([dict(CAT_THREAD[0], id="w1")], scope="alice", thread="chat-2", at=DAY1)
        with sgmem.Memory(store_path, embedder=embedder, read_only=True) as ro:
            assert ro.get(scope="alice", message_ids=["w1"])
        assert (store_path / "sgmem.db-wal").exists()
        writer.add([dict(CAT_THREAD[0], id="w2")], scope="alice", thread="chat-2", at=DAY1)
    with sgmem.Memory(store_path, embedder=embedder, read_only=True) as ro:
        assert {m.id for m in ro.get(scope="alice", message_ids=["w1", "w2"])} == {"w1", "w2"}
    assert not (store_path / "sgmem.db-wal").exists() and not (store_path / "sgmem.db-shm").exists()


def test_read_only_needs_an_existing_store(embedder: sgmem.Embedder, store_path: Path) -> None:
    with pytest.raises(sgmem.StoreError, match="read-only"):
        sgmem.Memory(store_path, embedder=embedder, read_only=True)
    assert not store_path.exists()
    with pytest.raises(sgmem.InvalidInputError, match="read_only"):
        sgmem.Memory(embedder=embedder, read_only=True)


def test_a_database_name_that_is_a_directory_is_not_called_corrupt(embedder: sgmem.Embedder, store_path: Path) -> None:
    (store_path / "sgmem.db").mkdir(parents=True)
    with pytest.raises(sgmem.StoreError, match="is a directory") as err:
        sgmem.Memory(store_path, embedder=embedder)
    assert not isinstance(err.value, sgmem.CorruptStoreError) and "backup" not in str(err.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write to any directory")
def test_a_directory_without_write_permission_is_reported_as_such(embedder: sgmem.Embedder, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(sgmem.StoreError, match="permission denied") as err:
            sgmem.Memory(locked, embedder=embedder)
        assert not isinstance(err.value, sgmem.CorruptStoreError)
    finally:
        locked.chmod(0o700)


# ------------------------------------------------------------------ item 9: limits and inputs
def test_metadata_has_a_size_limit(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder, config=sgmem.Config(limits=sgmem.Limits(max_metadata_chars=200))) as mem:
        with pytest.raises(sgmem.LimitExceededError, match=r"messages\[0\]\.metadata.*max_metadata_chars"):
            mem.add([{"role": "user", "content": "hi", "metadata": {"blob": "x" * 500}}], scope="a", thread="t")
        assert mem.scopes() == []
        mem.add([{"role": "user", "content": "hi", "metadata": {"blob": "x" * 100}}], scope="a", thread="t")
    assert sgmem.Limits().max_metadata_chars >= 10_000


def test_numpy_integers_are_accepted_where_ints_are(sample_memory: sgmem.Memory) -> None:
    hits = sample_memory.search("What is my cat called?", scope="alice", k=np.int64(2), min_score=0)
    assert len(hits) == 2
    assert sample_memory.context("What is my cat called?", scope="alice", budget_tokens=np.int32(120))
    assert len(sample_memory.messages(scope="alice", limit=np.int64(3))) == 3
    limits = sgmem.Limits(max_k=np.int64(50))
    assert limits.max_k == 50 and type(limits.max_k) is int
    assert type(sgmem.GraphConfig(hops=np.int64(2)).hops) is int


def test_threads_and_kinds_take_a_string_or_a_list(sample_memory: sgmem.Memory) -> None:
    one = sample_memory.search("What do I like?", scope="alice", threads="chat-1", min_score=0)
    assert one and {h.thread for h in one} == {"chat-1"}
    listed = sample_memory.search("What do I like?", scope="alice", threads=["chat-1"], min_score=0)
    assert [h.message_ids for h in one] == [h.message_ids for h in listed]
    facts = sample_memory.search("cat", scope="alice", kinds="fact", min_score=0)
    assert facts == sample_memory.search("cat", scope="alice", kinds=["fact"], min_score=0)


def test_cli_output_neutralises_control_sequences(
    embedder: sgmem.Embedder, store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evil = "My cat is Miso\x1b]0;pwned\x07 and\x1b[2J she \u202eevil\x9b1m naps."
    with sgmem.Memory(store_path, embedder=embedder) as mem:
        # names with control characters are refused when written (sgmem.validate.check_name); text keeps them
        mem.add([{"role": "user", "name": "Eve", "content": evil}], scope="alice", thread="t\u202ex")
    for argv in (
        # (the control characters lower the text's cosine to the query: every memory shown, whatever the cutoff)
        ["search", "What is my cat called?", "--scope", "alice", "--min-score", "0", "--path", str(store_path)],
        ["context", "What is my cat called?", "--scope", "alice", "--min-score", "0", "--path", str(store_path)],
        ["search", "What is my cat called?", "--scope", "alice", "--json", "--min-score", "0", "--path", str(store_path)],
    ):
        assert cli.main(argv) == 0
        out, err = capsys.readouterr()
        assert "Miso" in out
        for ch in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert ch not in out + err
        assert "\\x1b" in out or "\\u001b" in out  # shown, not obeyed
