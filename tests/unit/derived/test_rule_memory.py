"""Generated memory without an LLM is worth reading: the user's own fact sentences, not filler or questions.

The friction: the inspector showed the rule-based summary "Marco: Busy. Marco: My manager is called Giulia Rossi…
assistant: That's a great commute." and facts such as "Alice: Do you like cats?". With the default embedder
(whose dialogue-act classifier reads the sentences), a fact is a statement of the user's with something in it, and
a summary is made of those, one speaker label per run; a session with none gets no summary.
"""

from __future__ import annotations

from pathlib import Path

import sgmem

CHAT = [
    {
        "role": "user",
        "name": "Marco",
        "content": "Busy. My manager is called Giulia Rossi. Do you know a good bakery near the station?",
    },
    {"role": "assistant", "content": "That's a great commute. How long does it take?"},
    {
        "role": "user",
        "name": "Marco",
        "content": "Thanks a lot for the tips! I cycle to work every day along the river.",
    },
]
STATEMENTS = ["Marco: My manager is called Giulia Rossi.", "Marco: I cycle to work every day along the river."]


def _generated(mem: sgmem.Memory, kind: str) -> list[str]:
    return [h.text for h in mem.search("Marco's work and commute", scope="s", kinds=kind, min_score=0, k=20)]


def test_facts_and_summaries_are_the_users_statements(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(CHAT, scope="s", thread="t", at="2024-03-01T09:00:00Z")
        assert sorted(_generated(mem, "fact")) == sorted(STATEMENTS)
        (summary,) = _generated(mem, "summary")
        assert summary == "Marco: My manager is called Giulia Rossi. I cycle to work every day along the river."
        assert "assistant" not in summary and "Busy" not in summary and "?" not in summary


def test_a_session_of_questions_and_filler_gets_no_generated_memory(embedder: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=embedder) as mem:
        mem.add(
            [
                {"role": "user", "content": "Hi! Can you recommend a good book for the weekend?"},
                {"role": "assistant", "content": "Sure, what genres do you like?"},
                {"role": "user", "content": "Thanks, that sounds great!"},
            ],
            scope="s",
            thread="t",
            at="2024-03-01T09:00:00Z",
        )
        st = mem.stats("s").scopes[0]
        assert (st.facts, st.summaries) == (0, 0)
        # a later statement in the same session gives it its first fact and summary
        mem.add(
            [{"role": "user", "content": "I mostly read Italian crime novels on the train."}],
            scope="s",
            thread="t",
            at="2024-03-01T09:05:00Z",
        )
        st = mem.stats("s").scopes[0]
        assert (st.facts, st.summaries) == (1, 1)


def test_a_rule_summary_left_with_no_fact_sentence_is_gone_from_search_too(
    embedder: sgmem.Embedder, tmp_path: Path
) -> None:
    other = [{"role": "user", "name": "Marco", "content": "My sister Lucia moved to Turin last spring."}]
    with sgmem.Memory(tmp_path, embedder=embedder) as mem:
        mem.add(CHAT, scope="s", thread="t", at="2024-03-01T09:00:00Z")
        mem.add(other, scope="s", thread="u", at="2024-02-01T09:00:00Z")
        assert len(_generated(mem, "summary")) == 2
    # reopened under a rule none of the sentences meets: both summaries are left from before
    strict = sgmem.Config(derived=sgmem.DerivedConfig(fact_min_tokens=50))
    with sgmem.Memory(tmp_path, embedder=embedder, config=strict) as mem:
        assert len(_generated(mem, "summary")) == 2  # searched: the summaries are held in memory
        mem.add([{"role": "user", "content": "Busy."}], scope="s", thread="t", at="2024-03-01T09:05:00Z")
        assert mem.stats("s").scopes[0].summaries == 1  # the session just written lost its summary
        best = mem.search("Marco's work and commute", scope="s", kinds="summary", min_score=0, k=1)
        assert [h.text for h in best] == ["Marco: My sister Lucia moved to Turin last spring."]
        # the summaries held in memory for search are the stored ones (no vector of a deleted one left in them)
        held = mem._derived._caches.get(1)
        stored = [r[0] for r in mem._store.conn.execute("SELECT id FROM derived WHERE kind = 'summary'")]
        assert held is not None and held.tables["summary"].ids == stored
