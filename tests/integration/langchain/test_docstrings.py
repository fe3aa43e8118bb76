"""The docstrings follow the partner-package template (Setup / Instantiate / Use) and their code runs."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

import langchain_sgmem
import sgmem

from .conftest import RecordingChatModel

pytestmark = pytest.mark.integration


def code_blocks(doc: str, language: str) -> list[str]:
    """The ``.. code-block:: <language>`` bodies of a docstring, dedented, in order."""
    lines = doc.splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() != f".. code-block:: {language}":
            continue
        indent = len(line) - len(line.lstrip())
        body = []
        for nxt in lines[i + 1 :]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break  # back at the directive's level: the block is over
            body.append(nxt)
        blocks.append(textwrap.dedent("\n".join(body)).strip() + "\n")
    return blocks


@pytest.mark.parametrize("name", langchain_sgmem.__all__)
def test_docstring_sections_and_code_run(
    name: str, embedder: sgmem.Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = getattr(langchain_sgmem, name).__doc__ or ""
    positions = [doc.find(f"\n    {section}:\n") for section in ("Setup", "Instantiate", "Use")]
    assert all(p > 0 for p in positions) and positions == sorted(positions), f"{name}: Setup / Instantiate / Use"
    assert any("pip install 'sgmem[langchain]'" in b for b in code_blocks(doc, "bash"))
    blocks = code_blocks(doc, "python")
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)  # examples write to ./memory
    # `model` stands for the reader's chat model; the examples say so where they use it
    namespace: dict[str, Any] = {"model": RecordingChatModel(reply="Your cat is called Miso.")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for block in blocks:
            exec(compile(block, f"<{name} docstring>", "exec"), namespace)  # noqa: S102
    for value in namespace.values():
        if isinstance(value, sgmem.Memory):
            value.close()
