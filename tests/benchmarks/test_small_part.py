"""The benchmark part ``small``: a smoke run on the project's small pool and a tiny LongMemEval file, its stored
results (no wording kept) and the section and summary line they render."""

from __future__ import annotations

import gzip
import json
from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks import small

pytestmark = pytest.mark.benchmark


def _lme(path: Path) -> Path:
    rec = {
        "question_id": "q1", "question_type": "single-session-user", "question": "What's my cat called?",
        "answer": "Miso", "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s1", "s2"], "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/02 (Tue) 09:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "We adopted a cat named Miso.", "has_answer": True},
             {"role": "assistant", "content": "Lovely name!"}],
            [{"role": "user", "content": "Unrelated filler session."}],
        ],
        "answer_session_ids": ["s1"],
    }  # fmt: skip
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump([rec], f)
    return path


def test_the_part_runs_stores_no_wording_and_renders(embedder: Any, tmp_path: Path) -> None:
    args = Namespace(smoke=True, longmemeval=str(_lme(tmp_path / "lme.json.gz")), small_chats=2)
    ctx = SimpleNamespace(args=args, embedder=lambda: embedder, progress=lambda s: None)
    raw = small.run_part(ctx)
    assert raw["report"]["chats"] == raw["build"]["chats"] == 1 and raw["longmemeval"]["questions"] == 1
    text = json.dumps(raw, ensure_ascii=False)
    assert "question" not in {k for s in ("report", "build") for r in raw[s]["records"] for k in r}
    assert "What's my cat called?" not in text and "We adopted a cat" not in text
    section = small.render_part(raw)
    assert "`report` pool (held out" in section and "evidence sessions only" in section
    assert "| P@1 (" in section and "unrelated questions emptied" in section
    (line,) = [x for x in small.summary_lines(raw) if "LongMemEval" in x]
    assert line.startswith("- Small memories at the defaults (LongMemEval evidence sessions, 1 questions): P@1 ")


def test_a_full_run_never_reports_the_test_pool_under_a_pools_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sgmem.eval.pool._DATA", tmp_path)  # no packaged pool here
    args = Namespace(smoke=False, longmemeval=str(tmp_path / "absent.json.gz"), small_chats=5)
    ctx = SimpleNamespace(args=args, embedder=lambda: None, progress=lambda s: None)
    raw = small.run_part(ctx)
    assert raw["report"] == {"missing": "sgmem/data/small_pool_report.json"} and "missing" in raw["build"]
    section = small.render_part(raw)
    assert "Not measured: no pool file at `sgmem/data/small_pool_report.json`" in section
    assert "LongMemEval not measured" in section and small.summary_lines(raw) == []
