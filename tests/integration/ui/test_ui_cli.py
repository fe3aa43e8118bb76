"""``sgmem ui`` as a user starts it: the real command, its printed address and token, its defaults."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import sgmem
from sgmem.ui import open_memory
from tests.integration.ui.sample import QUESTION, free_port, make_store

pytestmark = pytest.mark.integration
pytest.importorskip("uvicorn")

ROOT = Path(__file__).resolve().parents[3]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def test_a_store_directory_opens_read_only_unless_write(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    store = make_store(tmp_path / "store", embedder)
    with open_memory(store, scope=None, write=False) as mem:
        assert mem.read_only and mem.scopes() == ["alice", "bob"]
    with open_memory(store, scope=None, write=True) as mem:
        assert not mem.read_only


def test_the_read_only_inspector_writes_no_file_in_the_store_folder(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    """docs/ui.md: a store directory opened without --write has no file written, SQLite's log files included."""
    from starlette.testclient import TestClient

    from sgmem.ui import create_app

    store = make_store(tmp_path / "store", embedder)
    before = {str(p.relative_to(store)): p.stat().st_mtime_ns for p in store.rglob("*")}
    with open_memory(store, scope=None, write=False, embedder=embedder) as mem:
        client = TestClient(create_app(mem, hosts={"testserver"}))
        assert client.get("/search", params={"s": "alice", "q": QUESTION}).status_code == 200
    assert {str(p.relative_to(store)): p.stat().st_mtime_ns for p in store.rglob("*")} == before


@pytest.mark.slow
def test_sgmem_ui_prints_its_address_and_token_and_guards_writes(tmp_path: Path, embedder: sgmem.Embedder) -> None:
    store = make_store(tmp_path / "store", embedder)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sgmem.cli", "ui", "--path", str(store), "--port", str(port), "--write"],
        cwd=ROOT,
        env={**os.environ, **OFFLINE},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert lines[0].startswith(f"sgmem ui: http://127.0.0.1:{port}/  (write;"), lines
        token = re.search(r"write token .*: (\S+)$", lines[1].strip())
        assert token is not None, lines
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):  # the address is printed just before uvicorn binds
            try:
                r = httpx.get(f"{base}/search", params={"s": "alice", "q": QUESTION})
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        assert r.status_code == 200 and "I adopted a grey cat named Miso." in r.text
        assert httpx.get(f"{base}/", headers={"host": f"rebound.example:{port}"}).status_code == 403
        forget = {"s": "alice", "message_id": "c1-1"}
        assert httpx.post(f"{base}/forget", data=forget).status_code == 403
        assert httpx.post(f"{base}/forget", data={**forget, "token": token.group(1)}).status_code == 200
    finally:
        proc.terminate()
        proc.wait(20)
    with sgmem.Memory(store, embedder=embedder, read_only=True) as mem:
        assert mem.get(scope="alice", message_ids=["c1-1"]) == []
        assert len(mem.get(scope="alice", message_ids=["c1-2"])) == 1


def test_sgmem_ui_refuses_a_bad_port(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "sgmem.cli", "ui", "--path", str(tmp_path / "none"), "--port", "70000"],
        cwd=ROOT,
        env={**os.environ, **OFFLINE},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "--port" in r.stderr and "70000" in r.stderr
