"""LongMemEval reduced to each question's evidence sessions, on tiny synthetic records."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sgmem.errors import InvalidInputError
from sgmem.eval.oracle import load_oracle, reduce_record
from sgmem.eval.suite import fold_of


def _record(qid: str, evidence: bool = True, **kw: Any) -> dict[str, Any]:
    rec = {
        "question_id": qid,
        "question_type": "single-session-assistant",
        "question": "Which hotel did you recommend in Bath?",
        "answer": "Larkspur House",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["filler-1", "ev-2", "ev-1", "filler-2", "ev-2"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 12:00", "2023/05/10 (Wed) 08:30",
                           "2023/05/25 (Thu) 10:00", "2023/05/20 (Sat) 12:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "Filler about tax."}, {"role": "assistant", "content": "Tax answer."}],
            [{"role": "user", "content": "Where should I stay in Bath?"},
             {"role": "assistant", "content": "Try the Larkspur House.", "has_answer": evidence},
             {"role": "user", "content": "  "}],
            [{"role": "user", "content": "I'm going to Bath in June.", "has_answer": False},
             {"role": "assistant", "content": "Lovely city!"}],
            [{"role": "user", "content": "More filler."}],
            [{"role": "user", "content": "Where should I stay in Bath?"},
             {"role": "assistant", "content": "Try the Larkspur House.", "has_answer": evidence}],
        ],
        "answer_session_ids": ["ev-1", "ev-2"],
    }  # fmt: skip
    rec.update(kw)
    return rec


def test_only_the_evidence_sessions_are_kept_with_both_roles_at_their_dates() -> None:
    chat = reduce_record(_record("q1"))
    assert chat is not None and chat.id == "q1" and chat.fold == fold_of("q1")
    assert [t for t, _, _ in chat.sessions] == ["ev-1", "ev-2"]  # in time order; the repeated session once
    assert [at.isoformat() for _, at, _ in chat.sessions] == ["2023-05-10T08:30:00+00:00", "2023-05-20T12:00:00+00:00"]
    roles = [m["role"] for _, _, m in chat.messages()]
    assert roles == ["user", "assistant", "user", "assistant"]  # the empty turn is not stored
    assert all(m["at"] == at for _, at, m in chat.messages())
    (probe,) = chat.probes
    assert probe.text.startswith("Which hotel") and probe.now.isoformat() == "2023-06-01T10:00:00+00:00"
    assert probe.answer_ids == ("ev-2#1",) and probe.answer is None
    assert "about: assistant" in probe.groups and "type: single-session-assistant" in probe.groups


def test_abstention_and_unmarked_questions_are_counted_not_scored(tmp_path: Path) -> None:
    recs = [_record("q1"), _record("q2_abs"), _record("q3", evidence=False), _record("q4")]
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(recs, f)
    red = load_oracle(path)
    assert [c.id for c in red.chats] == ["q1", "q4"] and red.abstention == 1 and red.no_evidence == ["q3"]
    one = load_oracle(path, folds=[fold_of("q1")])
    assert "q1" in [c.id for c in one.chats] and all(c.fold == fold_of("q1") for c in one.chats)
    assert len(one.chats) + one.other_folds == 2
    assert len(load_oracle(path, limit=1).chats) == 1
    with pytest.raises(InvalidInputError, match="LongMemEval"):
        load_oracle(tmp_path / "absent.json")
