"""The LLM write path with a scripted model: facts, merges, summaries, insights, usage, fallbacks."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import sgmem

from .helpers import ScriptedLLM, facts_json

DAY = datetime(2024, 5, 8, 13, 56, tzinfo=timezone.utc)
CHAT = [
    {"id": "u1", "role": "user", "name": "Caroline", "content": "I went to an LGBTQ support group yesterday."},
    {"id": "a1", "role": "assistant", "name": "Melanie", "content": "That sounds wonderful, how was it?"},
]


# the keyword pyramid may call the LLM at add too; these tests look at generated memory alone
BASE = sgmem.Config(pyramid=sgmem.PyramidConfig(llm_keywords=False))


def _facts(mem: sgmem.Memory) -> list[sgmem.Hit]:
    return mem.search("support group", scope="s", kinds=["fact"], k=50)


def test_llm_facts_keep_their_sources_and_the_time_they_were_said(bag: sgmem.Embedder) -> None:
    llm = ScriptedLLM({"facts": facts_json("Caroline attended an LGBTQ support group on 7 May 2024.", sources=[1])})
    with sgmem.Memory(embedder=bag, llm=llm, config=BASE) as mem:
        r = mem.add(CHAT, scope="s", thread="t", at=DAY)
        (fact,) = _facts(mem)
    assert fact.text == "Caroline attended an LGBTQ support group on 7 May 2024."
    assert fact.message_ids == ("u1",) and fact.at == DAY and fact.why["method"] == "llm"
    assert llm.calls("facts") == 1 and r.llm_calls == 1 and r.facts_added == 1
    assert r.llm_prompt_tokens > 0 and r.llm_completion_tokens > 0 and r.llm_ms >= 0 and r.llm_fallbacks == 0
    prompt = llm.prompts[0][1]
    assert "[1] Caroline (2024-05-08): I went to an LGBTQ support group yesterday." in prompt


def test_facts_without_sources_are_attributed_to_the_closest_message(bag: sgmem.Embedder) -> None:
    llm = ScriptedLLM({"facts": json.dumps(["Melanie asked how the support group was."])})
    with sgmem.Memory(embedder=bag, llm=llm, config=BASE) as mem:
        mem.add(CHAT, scope="s", thread="t", at=DAY)
        (fact,) = _facts(mem)
    assert fact.message_ids in {("u1",), ("a1",)}


def test_malformed_json_falls_back_to_the_llm_free_facts_and_is_counted(bag: sgmem.Embedder) -> None:
    llm = ScriptedLLM({"facts": '[{"fact": "Caroline went to a support group", "sources": [1]'})  # truncated
    with sgmem.Memory(embedder=bag, llm=llm, config=BASE) as mem:
        r = mem.add(CHAT, scope="s", thread="t", at=DAY)
        facts = _facts(mem)
        s = mem.stats("s").scopes[0]
    assert r.llm_calls == 1 and r.llm_fallbacks == 1
    assert [f.text for f in facts] == ["Caroline: I went to an LGBTQ support group yesterday."]
    assert facts[0].why["method"] == "rule"
    assert (s.llm_calls, s.llm_fallbacks) == (1, 1)


def test_a_model_that_raises_never_fails_the_write(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag, llm=ScriptedLLM(raises=True), config=BASE) as mem:
        r = mem.add(CHAT, scope="s", thread="t", at=DAY)
        assert r.messages == 2 and r.llm_fallbacks == r.llm_calls == 1
        assert len(_facts(mem)) == 1


def test_an_empty_answer_means_no_facts_not_a_fallback(bag: sgmem.Embedder) -> None:
    llm = ScriptedLLM({"facts": "[]"})
    with sgmem.Memory(embedder=bag, llm=llm, config=BASE) as mem:
        r = mem.add(CHAT, scope="s", thread="t", at=DAY)
        assert r.llm_fallbacks == 0 and r.facts_added == 0 and _facts(mem) == []


MERGING = BASE.with_(gate=sgmem.GateConfig(mode="adaptive", tau0=0.0, tau_min=0.01, delta=0.49))


def test_updates_are_merged_by_the_llm_and_versioned(bag: sgmem.Embedder) -> None:
    first = "Caroline attended an LGBTQ support group."
    second = "Caroline attended an LGBTQ support group in May and found it moving."
    answers = iter([facts_json(first, sources=[1]), facts_json(second, sources=[1])])
    llm = ScriptedLLM({"facts": lambda _: next(answers), "merge": "Merged: Caroline attended an LGBTQ support group in May."})
    with sgmem.Memory(embedder=bag, llm=llm, config=MERGING) as mem:
        mem.add(CHAT[:1], scope="s", thread="t", at=DAY)
        r = mem.add([dict(CHAT[0], id="u2")], scope="s", thread="t", at=DAY + timedelta(hours=1))
        (fact,) = _facts(mem)
        history = mem.history(fact.memory_id, scope="s")  # type: ignore[arg-type]
    assert r.facts_updated == 1 and llm.calls("merge") == 1
    assert fact.text == "Caroline attended an LGBTQ support group in May."  # label stripped
    assert [v.cause for v in history] == ["add", "merge-llm"] and history[0].text == first
    merge_prompt = [p for k, p in llm.prompts if k == "merge"][0]
    assert f"Existing memory: {first}" in merge_prompt and f"New information: {second}" in merge_prompt


def test_an_empty_merge_falls_back_to_the_rule(bag: sgmem.Embedder) -> None:
    with sgmem.Memory(embedder=bag, llm=ScriptedLLM({"merge": "  "}), config=MERGING.with_(
        derived=sgmem.DerivedConfig(llm_tasks=("merge",))
    )) as mem:
        mem.add([{"role": "user", "content": "Alice adopted a grey cat named Miso."}], scope="s", thread="t", at=DAY)
        r = mem.add([{"role": "user", "content": "Alice adopted a grey cat named Miso who loves tuna."}], scope="s",
                    thread="t", at=DAY)
        (fact,) = mem.search("cat", scope="s", kinds=["fact"])
    assert r.facts_updated == 1 and r.llm_fallbacks == 1
    assert fact.text == "user: Alice adopted a grey cat named Miso who loves tuna."
    assert mem is not None


def test_a_closed_session_is_summarised_and_gets_insights(bag: sgmem.Embedder) -> None:
    insights = json.dumps([{"timestamp": "2024-05-08", "content": "Caroline values community support."}])
    llm = ScriptedLLM(
        {
            "facts": facts_json("Caroline attended an LGBTQ support group.", "Caroline found the group moving.", sources=[1]),
            "summary": "Caroline told Melanie about the LGBTQ support group she attended.",
            "insights": insights,
        }
    )
    with sgmem.Memory(embedder=bag, llm=llm, config=BASE) as mem:
        r1 = mem.add([dict(m, session="s1") for m in CHAT], scope="s", thread="t", at=DAY)
        assert llm.calls("summary") == 0  # an open session of 2 messages waits
        (extractive,) = mem.search("support", scope="s", kinds=["summary"])
        assert extractive.why["method"] == "rule"
        later = [{"role": "user", "name": "Caroline", "content": "I started painting again.", "session": "s2"}]
        r2 = mem.add(later, scope="s", thread="t", at=DAY + timedelta(days=7))
        summaries = mem.search("support group", scope="s", kinds=["summary"])
        (insight,) = mem.search("community", scope="s", kinds=["insight"])
        stats = mem.stats("s").scopes[0]
    assert llm.calls("summary") == 1 and llm.calls("insights") == 1
    s1 = next(h for h in summaries if h.why["session"] == "s1")
    assert s1.text == "Caroline told Melanie about the LGBTQ support group she attended."
    assert s1.why["method"] == "llm" and set(s1.message_ids) == {"u1", "a1"}
    assert insight.text == "Caroline values community support." and insight.at.date().isoformat() == "2024-05-08"
    assert r2.summaries >= 1 and r2.insights == 1
    # the scope's totals are the sum of its adds
    assert stats.llm_calls == r1.llm_calls + r2.llm_calls
    assert stats.llm_prompt_tokens == r1.llm_prompt_tokens + r2.llm_prompt_tokens


def test_a_long_session_is_summarised_at_add(bag: sgmem.Embedder) -> None:
    llm = ScriptedLLM({"facts": "[]", "summary": "A long chat about gardening."})
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Gardening tip number {i} is useful."} for i in range(16)]
    with sgmem.Memory(embedder=bag, llm=llm, config=BASE) as mem:
        r = mem.add(msgs, scope="s", thread="t", at=DAY)
        (summary,) = mem.search("gardening", scope="s", kinds=["summary"])
    assert llm.calls("summary") == 1 and llm.calls("facts") == 2  # 8 messages per extraction call
    assert summary.text == "A long chat about gardening." and r.llm_calls == 3


def test_llm_tasks_limit_what_the_llm_is_used_for(bag: sgmem.Embedder) -> None:
    llm = ScriptedLLM({"facts": facts_json("x")})
    cfg = BASE.with_(derived=sgmem.DerivedConfig(llm_tasks=("summary",)))
    with sgmem.Memory(embedder=bag, llm=llm, config=cfg) as mem:
        r = mem.add(CHAT, scope="s", thread="t", at=DAY)
    assert r.llm_calls == 0 and llm.prompts == []


def test_every_call_of_an_add_is_counted_in_its_result(bag: sgmem.Embedder) -> None:
    # with the keyword pyramid's LLM use on, its calls are part of the add's totals too
    llm = ScriptedLLM({"facts": facts_json("Caroline attended an LGBTQ support group.", sources=[1])})
    with sgmem.Memory(embedder=bag, llm=llm) as mem:
        r = mem.add(CHAT, scope="s", thread="t", at=DAY)
        s = mem.stats("s").scopes[0]
    assert r.llm_calls == len(llm.prompts) >= 1
    assert s.llm_calls == r.llm_calls
