"""A store reopened from its saved index files answers exactly as one rebuilt from SQLite, at benchmark scale.

A LoCoMo dev conversation (conv-41: 663 turns, about 2,100 sentences, 32 sessions as threads) with the
default MiniLM: every hit's ids, text, score, relevance and ``why``, in every retrieval mode the index serves,
and the context block, from the mapped files and from a rebuild. The data is not shipped: it is read from
``../shared/data/locomo/locomo-dev.json`` beside the clone (``$SGMEM_LOCOMO_DEV`` overrides), and the test is
skipped, saying so, where it is absent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import sgmem
from sgmem.eval.locomo import load_locomo
from sgmem.retrieval.index import ScopeIndex

DATA = Path(
    os.environ.get("SGMEM_LOCOMO_DEV")
    or Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo-dev.json"
)
CONVERSATIONS = ("conv-41",)
QUESTIONS_EACH = 8
MODES = ("hybrid", "vector", "graph", "pyramid", "bm25")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo dev data not found at {DATA} (not shipped: CC BY-NC)"),
]


def _answers(mem: sgmem.Memory, questions: dict[str, list[str]]) -> list[Any]:
    out: list[Any] = []
    for scope, qs in questions.items():
        for q in qs:
            for mode in MODES:
                hits = mem.search(q, scope=scope, k=10, mode=mode, min_score=0)
                out.append([(h.message_ids, h.text, h.score, h.relevance, h.why, h.thread, h.at) for h in hits])
            out.append(mem.context(q, scope=scope, budget_tokens=600))
    return out


def test_a_reopened_store_answers_exactly_as_a_rebuilt_one(
    tmp_path: Path, embedder: sgmem.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    convs = [c for c in load_locomo(DATA) if c.sample_id in CONVERSATIONS]
    assert [c.sample_id for c in convs] == list(CONVERSATIONS)
    questions = {c.sample_id: [q.question for q in c.questions[:QUESTIONS_EACH]] for c in convs}
    store = tmp_path / "store"
    with sgmem.Memory(store, embedder=embedder) as mem:
        for c in convs:
            mem.add_many([(key, msgs) for key, _, msgs in c.sessions], scope=c.sample_id)
        assert sum(s.sentences for s in mem.stats().scopes) > 2000
        _answers(mem, {c: qs[:1] for c, qs in questions.items()})  # every mode's index loaded: saved at close

    rows_read: list[int] = []
    real = ScopeIndex._append_turn_columns

    def counted(self: ScopeIndex, *args: Any, **kwargs: Any) -> None:
        rows_read.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ScopeIndex, "_append_turn_columns", counted)
    with sgmem.Memory(store, embedder=embedder) as mem:
        mapped = _answers(mem, questions)
    assert not rows_read, "the reopened store rebuilt its index instead of mapping the saved files"
    copy = tmp_path / "rebuilt"
    shutil.copytree(store, copy)
    shutil.rmtree(copy / "faiss")
    with sgmem.Memory(copy, embedder=embedder) as mem:
        rebuilt = _answers(mem, questions)
    assert rows_read
    assert len(mapped) == len(rebuilt) == len(CONVERSATIONS) * QUESTIONS_EACH * (len(MODES) + 1)
    for i, (a, b) in enumerate(zip(mapped, rebuilt, strict=True)):
        assert a == b, f"answer {i} differs between the mapped and the rebuilt index"
