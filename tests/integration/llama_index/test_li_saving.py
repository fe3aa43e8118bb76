"""Saving an SGMemMemory (``to_dict``, pickle) and restoring it in a new process, on a path and on PostgreSQL.

Issue 29 item 9: a PostgreSQL-backed memory could not be saved at all ("uses
an in-memory sgmem store"), and unpickling in a new process dropped the
store's ``Config`` (``min_relevance`` 0.05 came back 0.3, ``cache_bytes``
1 MiB came back 256 MiB). The saved form never holds a password.
"""

from __future__ import annotations

import json
import os
import pickle
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

import sgmem
from llama_index_sgmem import SGMemMemory
from tests.pg import makes_its_own_tables

from .helpers import FACT, assistant, user

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
CONFIG = sgmem.Config(min_relevance=0.05, cache_bytes=1024 * 1024)

RESTORE = """
import json, os, pickle, sys
import sgmem
mem = pickle.loads(open(sys.argv[1], "rb").read())
cfg = mem.memory.config
print(json.dumps({
    "messages": [m.content for m in mem.get_all()],
    "min_relevance": cfg.min_relevance,
    "cache_bytes": cfg.cache_bytes,
    # dense_device="auto" is resolved for each host when the store opens
    "same_config": cfg.with_(dense_device="auto") == sgmem.Config(min_relevance=0.05, cache_bytes=1024 * 1024),
    "thread": mem.thread,
}))
"""


def _restore_elsewhere(blob: bytes, tmp_path: Path, env: dict[str, str] | None = None) -> Any:
    """Unpickle ``blob`` in a new Python process; what it saw (or the failed process)."""
    f = tmp_path / "memory.pickle"
    f.write_bytes(blob)
    run_env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "SGMEM_STORE_URL")}
    run_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", RESTORE, str(f)], capture_output=True, text=True, cwd=ROOT, env=run_env, timeout=300
    )


def _saved(target: Any, embedder: sgmem.Embedder) -> tuple[dict[str, Any], bytes, list[str]]:
    with sgmem.Memory(target, embedder=embedder, config=CONFIG) as store:
        mem = SGMemMemory.from_defaults(memory=store, scope="alice", thread="t1", context_tokens=300)
        mem.put_messages([user(FACT), assistant("Noted!")])
        data, blob = mem.to_dict(), pickle.dumps(mem)
        back = SGMemMemory.from_dict(data)
        assert back.memory is store and back.get_all() == mem.get_all()  # this process: the open store, reused
        return data, blob, [str(m.content) for m in mem.get_all()]


def _check(out: Any, messages: list[str]) -> None:
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["messages"] == messages and got["thread"] == "t1"
    # the Config comes back (it used to be Config(): 0.3 and 256 MiB)
    assert (got["min_relevance"], got["cache_bytes"], got["same_config"]) == (0.05, 1024 * 1024, True)


def test_a_memory_on_a_path_comes_back_with_its_config_in_a_new_process(
    embedder: sgmem.Embedder, tmp_path: Path
) -> None:
    data, blob, messages = _saved(tmp_path / "m", embedder)
    assert data["store_path"] == str(tmp_path / "m") and data["config"]["min_relevance"] == 0.05
    json.dumps(data)  # plain values: a workflow Context can store it
    # the application names its store (SGMEM_STORE_URL takes a directory too); without it, a refusal
    _check(_restore_elsewhere(blob, tmp_path, {"SGMEM_STORE_URL": str(tmp_path / "m")}), messages)
    out = _restore_elsewhere(blob, tmp_path)
    assert out.returncode != 0 and "has not opened or allowed" in out.stderr


@pytest.mark.postgres
def test_a_memory_on_postgresql_is_saved_and_comes_back_in_a_new_process(
    embedder: sgmem.Embedder, pg_url: str, tmp_path: Path
) -> None:
    data, blob, messages = _saved(pg_url, embedder)
    assert data["store_url"] == pg_url and "store_path" not in data
    _check(_restore_elsewhere(blob, tmp_path, {"SGMEM_STORE_URL": pg_url}), messages)


@pytest.fixture
def password_url(pg_url: str) -> Iterator[tuple[str, str]]:
    """A URL with a password (a login role over TCP that may create the store's tables in the test schema)."""
    import psycopg

    name, password = f"sgmem_save_{uuid.uuid4().hex[:10]}", secrets.token_hex(12)
    schema = parse_qs(urlsplit(pg_url).query)["options"][0].split("=", 1)[1].split(",")[0]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'")
        admin.execute(f'GRANT ALL ON SCHEMA "{schema}" TO "{name}"')
        db = admin.execute("SELECT current_database()").fetchone()[0]
        port = admin.execute("SHOW port").fetchone()[0]
    query = "&".join(p for p in urlsplit(pg_url).query.split("&") if p.startswith("options="))
    try:
        yield f"postgresql://{name}:{password}@127.0.0.1:{port}/{db}?{query}", password
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP OWNED BY "{name}"')
            admin.execute(f'DROP ROLE "{name}"')


@pytest.mark.postgres
@makes_its_own_tables  # an ordinary role creates them
def test_the_saved_form_never_holds_the_password_and_the_environment_gives_it_back(
    embedder: sgmem.Embedder, password_url: tuple[str, str], tmp_path: Path
) -> None:
    url, password = password_url
    data, blob, messages = _saved(url, embedder)
    assert password not in json.dumps(data) and password.encode() not in blob
    assert data["store_url"] == url.replace(f":{password}@", "@")
    # a new process the application did not give the store: refused before connecting, saying so
    out = _restore_elsewhere(blob, tmp_path)
    assert out.returncode != 0 and "has not opened or allowed" in out.stderr and password not in out.stderr
    # the deployment's environment holds the full URL of the same store: restored
    _check(_restore_elsewhere(blob, tmp_path, {"SGMEM_STORE_URL": url}), messages)
    # a URL of another store in the environment is never used (nor its password)
    other = url.replace("/" + urlsplit(url).path.lstrip("/"), "/postgres")
    out = _restore_elsewhere(blob, tmp_path, {"SGMEM_STORE_URL": other})
    assert out.returncode != 0  # (libpq's own PGPASSWORD and ~/.pgpass work as for any libpq client)


def test_a_config_saved_by_a_newer_sgmem_is_refused_loudly(
    embedder: sgmem.Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, _, _ = _saved(tmp_path / "m", embedder)
    data["config"]["a_setting_from_the_future"] = 1
    monkeypatch.setenv("SGMEM_STORE_URL", str(tmp_path / "m2"))
    with pytest.raises(sgmem.InvalidInputError, match="a_setting_from_the_future"):
        SGMemMemory.from_dict({**data, "store_path": str(tmp_path / "m2")})


CHAT_RESTORE = """
import json, sys
from llama_index_sgmem import SGMemChatStore
store = SGMemChatStore.from_dict(json.loads(open(sys.argv[1]).read()))
print(json.dumps({"messages": [str(m.content) for m in store.get_messages("k")],
                  "min_relevance": store.memory.config.min_relevance}))
"""


@pytest.mark.postgres
def test_a_chat_store_on_postgresql_is_saved_and_comes_back_in_a_new_process(
    embedder: sgmem.Embedder, pg_url: str, tmp_path: Path
) -> None:
    from llama_index_sgmem import SGMemChatStore

    with sgmem.Memory(pg_url, embedder=embedder, config=CONFIG) as store:
        chat = SGMemChatStore(memory=store, scope="alice")
        chat.set_messages("k", [user(FACT), assistant("Noted!")])
        data = chat.to_dict()
        assert SGMemChatStore.from_dict(data).memory is store
    assert data["store_url"] == pg_url and data["store_path"] is None
    f = tmp_path / "chat.json"
    f.write_text(json.dumps(data))
    env = {**os.environ, "SGMEM_STORE_URL": pg_url}
    out = subprocess.run(
        [sys.executable, "-c", CHAT_RESTORE, str(f)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"messages": [FACT, "Noted!"], "min_relevance": 0.05}
