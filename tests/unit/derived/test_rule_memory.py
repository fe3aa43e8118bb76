"""Generated memory without an LLM is worth reading: the user's own fact sentences, not filler or questions.

The friction: the inspector showed the rule-based summary "Marco: Busy. Marco: My manager is called Giulia Rossi…
assistant: That's a great commute." and facts such as "Alice: Do you like cats?". With the default embedder
(whose dialogue-act classifier reads the sentences), a fact is a statement of the user's with something in it, and
a summary is made of those, one speaker label per run; a session with none gets no summary.
"""

from __future__ import annotations

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
