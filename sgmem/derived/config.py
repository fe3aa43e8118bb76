"""DerivedConfig: what generated memory (facts, summaries, insights) sgmem keeps.

Kept free of other sgmem imports (except errors) so ``sgmem.config`` can embed it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError

__all__ = ["DERIVED_KINDS", "LLM_TASKS", "DerivedConfig"]

#: The generated-memory kinds (SGMem's F, M and I tables, §1.1).
DERIVED_KINDS = ("summary", "fact", "insight")
#: Tasks that may use the Memory's LLM.
LLM_TASKS = ("facts", "merge", "summary", "insights")
_ROLES = ("user", "assistant", "system", "tool")


def _check(cond: bool, name: str, value: object, expected: str) -> None:
    if not cond:
        raise ConfigError(f"DerivedConfig.{name}: received {value!r}, expected {expected}.")


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _num(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class DerivedConfig:
    """Generated memory: SGMem's facts, session summaries and insights (ALGORITHMS §1.5–§1.6).

    With an LLM (``Memory(llm=...)``) each kind uses SGMem's prompt; without
    one, its LLM-free rule. Facts pass through the novelty gate
    (``Config.gate``); summaries and insights are one set per session and are
    replaced, with history, when recomputed.

    Attributes:
        facts: keep facts.
        fact_roles: [D] roles whose turns give LLM-free fact candidates (§1.6:
            "every user-turn sentence"). Add ``"assistant"`` when both sides of
            a conversation are people (LoCoMo).
        fact_min_tokens: LLM-free candidates need this many word tokens [§1.6: 4].
        fact_batch_messages: messages per LLM fact-extraction call [R SAGE:
            LoCoMo runs add 8 messages per call, one extraction each].
        summaries: keep one summary per session.
        summary_sentences: sentences of the LLM-free (extractive) summary,
            those closest to the session centroid [§1.6: 3].
        summary_refresh_messages: [D] with an LLM, a session is summarised
            again once it has this many messages not yet summarised, and once
            more when a later session of its thread starts; in between the
            extractive summary is kept current at every add.
        insights: ``"auto"`` (LLM insights when an LLM is given, none
            otherwise — §1.6's default), ``"cluster"`` (the LLM-free option of
            §1.6: the centroid fact of each cluster of facts at cosine ≥
            ``insight_min_cosine``) or ``"off"``.
        insight_min_cosine: cluster linkage threshold [§1.6: 0.7].
        insight_min_cluster: facts a cluster needs to yield an insight.
        llm_tasks: which tasks use the Memory's LLM when one is given
            (``"facts"``, ``"merge"``, ``"summary"``, ``"insights"``); the
            others use their LLM-free rule.
        merge_prompt: ``"short"`` (SAGE's default merge prompt) or
            ``"strict"`` (its longer prompt for strong models).
        rule_merge_vector: the vector of a fact merged by the LLM-free rule:
            ``"mean"`` [D] (the normalised sum of the two merged vectors, as
            the core's turn vectors are; no embedding call) or ``"embed"``
            (§2.8: re-embed the merged text, one batched call per add).
            Measured on the LoCoMo dev split with no LLM and the adaptive
            gate: re-embedding made ingest ≈ 15 % slower during the gate's
            early, merge-heavy steps (the mean: ≈ 1 %), for 0.75 points more
            fact recall@10 (27.5 vs 26.8 of 29.6 with the gate off). A text
            the LLM merged is always re-embedded.
        context_kinds: derived kinds :meth:`Memory.context` adds after the
            retrieved turns (§1.3 step 8: summaries, facts, insights). [D]
            Default: none. Measured on the LoCoMo dev split with no LLM
            (``python -m benchmarks.gate --only context``, budget 1000): the
            evidence inside the block fell by 0.9–1.0 points with LLM-free
            facts (they repeat sentences of turns the block can hold anyway)
            and by 2.0 with extractive summaries. With LLM-written memory, which says
            things no single turn says, turn it on, e.g.
            ``("summary", "fact", "insight")``.
        context_k: top-K of each derived table taken for the context [§1.4 K = 5].
        context_share: the most of the token budget derived blocks may use.
    """

    facts: bool = True
    fact_roles: tuple[str, ...] = ("user",)
    fact_min_tokens: int = 4
    fact_batch_messages: int = 8
    summaries: bool = True
    summary_sentences: int = 3
    summary_refresh_messages: int = 16
    insights: Literal["auto", "cluster", "off"] = "auto"
    insight_min_cosine: float = 0.7
    insight_min_cluster: int = 2
    llm_tasks: tuple[str, ...] = LLM_TASKS
    merge_prompt: Literal["short", "strict"] = "short"
    rule_merge_vector: Literal["mean", "embed"] = "mean"
    context_kinds: tuple[str, ...] = ()
    context_k: int = 5
    context_share: float = 0.25

    def __post_init__(self) -> None:
        for name in ("facts", "summaries"):
            _check(isinstance(getattr(self, name), bool), name, getattr(self, name), "True or False")
        _check(
            isinstance(self.fact_roles, tuple) and all(r in _ROLES for r in self.fact_roles),
            "fact_roles",
            self.fact_roles,
            f"a tuple of roles from {_ROLES}",
        )
        for name, low in (
            ("fact_min_tokens", 0),
            ("fact_batch_messages", 1),
            ("summary_sentences", 1),
            ("summary_refresh_messages", 1),
            ("insight_min_cluster", 2),
            ("context_k", 0),
        ):
            v = getattr(self, name)
            _check(_int(v) and v >= low, name, v, f"an int >= {low}")
        _check(self.insights in ("auto", "cluster", "off"), "insights", self.insights, "'auto', 'cluster' or 'off'")
        _check(
            _num(self.insight_min_cosine) and -1 <= self.insight_min_cosine <= 1,
            "insight_min_cosine",
            self.insight_min_cosine,
            "a cosine in [-1, 1]",
        )
        _check(
            isinstance(self.llm_tasks, tuple) and all(t in LLM_TASKS for t in self.llm_tasks),
            "llm_tasks",
            self.llm_tasks,
            f"a tuple of tasks from {LLM_TASKS}",
        )
        _check(self.merge_prompt in ("short", "strict"), "merge_prompt", self.merge_prompt, "'short' or 'strict'")
        _check(
            self.rule_merge_vector in ("mean", "embed"),
            "rule_merge_vector",
            self.rule_merge_vector,
            "'mean' or 'embed'",
        )
        _check(
            isinstance(self.context_kinds, tuple) and all(k in DERIVED_KINDS for k in self.context_kinds),
            "context_kinds",
            self.context_kinds,
            f"a tuple of kinds from {DERIVED_KINDS}",
        )
        _check(
            _num(self.context_share) and 0 <= self.context_share <= 1,
            "context_share",
            self.context_share,
            "a share of the budget in [0, 1]",
        )
