"""``sgmem ingest`` shows progress on a terminal, and nothing of it without one or with ``--quiet``."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _ingest(tmp_path: Path, store: str, *extra: str, tty: bool) -> tuple[int, str, str]:
    chat = tmp_path / "chat.json"
    msgs = [
        {"role": "user", "content": f"Note {i}: the plant on shelf {i} needs water.", "at": "2024-01-01"}
        for i in range(300)
    ]
    chat.write_text(json.dumps({"plants": msgs}), encoding="utf-8")
    argv = [sys.executable, "-m", "sgmem", "ingest", str(chat), "--scope", "a", "--path", str(tmp_path / store), *extra]
    env = {**os.environ, **ENV, "PYTHONPATH": str(ROOT)}
    if not tty:
        res = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
        return res.returncode, res.stdout, res.stderr
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=slave, text=True, timeout=600)
    os.close(slave)
    reader.join(10)
    os.close(master)
    return proc.returncode, proc.stdout, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_progress_on_a_terminal_only(tmp_path: Path) -> None:
    code, out, err = _ingest(tmp_path, "s1", tty=True)
    assert code == 0 and "ingested 300 messages" in out
    assert "loading the embedding model..." in err and "300/300" in err and "msg" in err  # tqdm's bar
    code, out, err = _ingest(tmp_path, "s2", "--quiet", tty=True)
    assert code == 0 and "ingested 300 messages" in out and err == ""
    code, out, err = _ingest(tmp_path, "s3", tty=False)
    assert code == 0 and "ingested 300 messages" in out and err == ""
