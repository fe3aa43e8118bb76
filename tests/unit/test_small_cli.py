"""``sgmem eval small``: bad arguments are refused before the model loads; a one-chat run writes its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sgmem
from sgmem.cli import main

POOL = str(Path(__file__).resolve().parents[1] / "data" / "small_pool.json")


def _no_model() -> None:
    raise AssertionError("the model was loaded before the arguments were checked")


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--folds", "7"], "--folds"),
        (["--chats", "0"], "--chats"),
        (["--pool", "none"], "something to measure"),
        (["--pool", "/nonexistent/pool.json"], "pool"),
        (["--longmemeval", "/nonexistent/lme.json"], "--longmemeval"),
    ],
)
def test_bad_arguments_are_refused_before_the_model_loads(
    argv: list[str], match: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sgmem.embed.default_embedder", _no_model)
    assert main(["eval", "small", "--pool", POOL, *argv] if argv[0] != "--pool" else ["eval", "small", *argv]) != 0
    err = capsys.readouterr().err
    assert "sgmem: error:" in err and match in err and "expected" in err


def test_a_one_chat_run_prints_the_report_and_writes_the_raw_results(
    embedder: sgmem.Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sgmem.embed.default_embedder", lambda: embedder)
    out, raw = tmp_path / "small.md", tmp_path / "small.json"
    argv = ["eval", "small", "--pool", POOL, "--chats", "1", "--seed", "20", "--cache", str(tmp_path / "cache"),
            "--out", str(out), "--raw", str(raw), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Personal-assistant chat suite" in printed and out.read_text(encoding="utf-8").strip() == printed.strip()
    data = json.loads(raw.read_text(encoding="utf-8"))
    records = data["suite"]["records"]
    assert data["suite"]["chats"] == 1 and data["defaults"]["k"] == 10 and records
    assert all("prefix" in r and ("p1" in r or "emptied" in r) for r in records)
    assert list((tmp_path / "cache").glob("embeddings-*.npz"))  # reruns read their vectors from the cache
