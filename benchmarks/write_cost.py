"""Write cost: LLM calls per 1,000 turns, sgmem's write path vs a Mem0-style path, counted.

One stream of turns is written in adds of 8 messages (SAGE's LoCoMo
protocol) through each path; a counting fake LLM (:class:`CountingLLM`)
answers every prompt with plausible JSON and counts the calls and their
tokens per task:

* **sgmem default with an LLM** — ``Memory(llm=...)`` as shipped, every LLM
  feature of the write path: MGRetrieval's keyword extraction and grouping
  (``PyramidConfig.llm_keywords`` is on wherever an LLM is given, 2 calls per
  memory as the paper has it), facts, merges on the novelty gate's Update
  decisions, summaries and insights;
* **sgmem with an LLM, lexical keywords** — the same with
  ``PyramidConfig(llm_keywords=False)``: the lexical rule writes the keyword
  index;
* **sgmem, facts only** — the LLM writes facts (and merges what the gate
  routes to Update); the gate routes every candidate without an LLM call,
  keywords use the lexical rule;
* **Mem0-style** — one extraction call per add plus one routing call per add
  that decides ADD / UPDATE / DELETE / NONE for the extracted facts against
  their nearest stored memories (:class:`Mem0StyleWriter`);
* **sgmem, no LLM** — ``Memory()`` without a model: zero calls by construction,
  and the same retrieval features through their LLM-free rules.

The ``write`` part of ``python -m benchmarks``::

    python -m benchmarks --only write --turns 1000
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "TITLE",
    "CountingLLM",
    "Mem0StyleWriter",
    "WriteCost",
    "plot",
    "render",
    "render_part",
    "run_part",
    "run_write_cost",
    "summary_lines",
    "turn_stream",
]

ADD_SIZE = 8  # messages per add (SAGE's LoCoMo runs)

MEM0_EXTRACT = """Mem0-style fact extraction. Extract the facts worth remembering about the user from this \
conversation, one short sentence each.
Answer with JSON only: {{"facts": ["..."]}}

Conversation:
{conversation}"""

MEM0_ROUTE = """Mem0-style memory update. Existing memories (id: text):
{existing}

New facts:
{facts}

For each new fact decide whether to ADD it, UPDATE an existing memory (give its id and the new text), DELETE \
a memory it contradicts (give its id) or do NONE. Answer with JSON only: \
{{"memory": [{{"id": "...", "text": "...", "event": "ADD|UPDATE|DELETE|NONE"}}]}}"""


# ------------------------------------------------------------------ the fake
def _task_prefixes() -> list[tuple[str, str]]:
    """(opening text, task) for every prompt sgmem can send, and the Mem0-style ones."""
    import sgmem.prompts as prompts

    names = {
        "PYRAMID_KEYWORD_EXTRACTION": "keywords: extract",
        "PYRAMID_KEYWORD_GROUPING": "keywords: group",
        "PYRAMID_QUERY_KEYWORDS": "query keywords",
        "PYRAMID_REFLECT": "reflect",
        "FACT_EXTRACTION": "facts",
        "SESSION_SUMMARY": "summary",
        "INSIGHTS": "insights",
        "MERGE": "merge",
        "MERGE_STRICT": "merge",
    }
    out = [(MEM0_EXTRACT.split("{")[0][:40], "mem0: extract"), (MEM0_ROUTE.split("{")[0][:40], "mem0: route")]
    for name in getattr(prompts, "__all__", []):
        template = getattr(prompts, name, None)
        if isinstance(template, str):
            out.append((template.split("{")[0][:40], names.get(name, name.lower())))
    return sorted(out, key=lambda t: -len(t[0]))  # longest opening first


def _words(text: str, n: int) -> list[str]:
    seen: dict[str, None] = {}
    for w in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", text):
        seen.setdefault(w.lower(), None)
    return list(seen)[:n]


def _section(prompt: str, start: str, end: str | None = None) -> str:
    i = prompt.find(start)
    if i < 0:
        return ""
    body = prompt[i + len(start) :]
    if end is not None and end in body:
        body = body[: body.index(end)]
    return body.strip()


class CountingLLM:
    """A scripted ``sgmem.LLM`` that answers every known prompt plausibly and counts calls per task."""

    def __init__(self) -> None:
        from sgmem.text.tokens import count_tokens

        self._count = count_tokens
        self._prefixes = _task_prefixes()
        self.calls: Counter[str] = Counter()
        self.prompt_tokens: Counter[str] = Counter()
        self.completion_tokens: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def task_of(self, prompt: str) -> str:
        for opening, task in self._prefixes:
            if opening and prompt.startswith(opening):
                return task
        return "other"

    def _answer(self, task: str, prompt: str) -> str:
        if task == "keywords: extract":
            return json.dumps(_words(_section(prompt, '"""', '"""'), 5))
        if task == "keywords: group":
            keys = [
                ln[2:].strip()
                for ln in _section(prompt, "latest_total_keywords", "\n\n").splitlines()
                if ln.startswith("- ")
            ]
            return json.dumps({"total": keys})
        if task == "facts":
            lines = re.findall(r"^\[(\d+)\] ([^(]+?) \([^)]*\): (.+)$", prompt, flags=re.MULTILINE)
            return json.dumps([{"fact": f"{who} said: {text.split('. ')[0]}", "sources": [int(j)]} for j, who, text in lines])
        if task == "merge":
            old = _section(prompt, "Existing memory:", "\n")
            new = _section(prompt, "New information:", "\n")
            return f"{old} Also: {new}"
        if task == "summary":
            return " ".join(_section(prompt, "):\n", "\n\nAnswer").splitlines()[:2]) or "A conversation."
        if task == "insights":
            return json.dumps([{"timestamp": "2023-01-01", "content": "The user enjoys trying new activities."}])
        if task == "mem0: extract":
            lines = [ln.split(": ", 1)[1] for ln in _section(prompt, "Conversation:").splitlines() if ": " in ln]
            return json.dumps({"facts": [ln.split(". ")[0] for ln in lines]})
        if task == "mem0: route":
            facts = [ln[2:] for ln in _section(prompt, "New facts:", "\n\nFor each").splitlines() if ln.startswith("- ")]
            return json.dumps({"memory": [{"id": "", "text": f, "event": "ADD"} for f in facts]})
        if task == "query keywords":
            return "[]"
        return "{}"

    def complete(self, prompt: str) -> str:
        task = self.task_of(prompt)
        text = self._answer(task, prompt)
        self.calls[task] += 1
        self.prompt_tokens[task] += self._count(prompt)
        self.completion_tokens[task] += self._count(text)
        return text

    async def acomplete(self, prompt: str) -> str:
        return self.complete(prompt)


# ------------------------------------------------------------ Mem0-style path
class Mem0StyleWriter:
    """Mem0's write path, reduced to its LLM calls: extract per add, then route per add.

    Each add: one extraction call over the add's messages; if it yields
    facts, each fact is embedded and its ``top_s`` most similar stored
    memories are collected, and one routing call decides ADD / UPDATE /
    DELETE / NONE for all of them.
    """

    def __init__(self, llm: Any, embedder: Any, top_s: int = 5) -> None:
        self.llm = llm
        self.embedder = embedder
        self.top_s = top_s
        self.texts: list[str] = []
        self.vecs = np.zeros((0, int(embedder.dim)), dtype=np.float32)

    def add(self, messages: list[dict[str, Any]]) -> None:
        convo = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        raw = self.llm.complete(MEM0_EXTRACT.format(conversation=convo))
        try:
            facts = [str(f) for f in json.loads(raw).get("facts", []) if str(f).strip()]
        except (ValueError, AttributeError):
            facts = []
        if not facts:
            return
        fvecs = np.asarray(self.embedder.embed(facts), dtype=np.float32)
        near: dict[int, None] = {}
        if len(self.texts):
            sims = fvecs @ self.vecs.T
            for row in sims:
                for j in np.argsort(-row)[: self.top_s]:
                    near.setdefault(int(j), None)
        existing = "\n".join(f"{j}: {self.texts[j]}" for j in near) or "(none)"
        raw = self.llm.complete(MEM0_ROUTE.format(existing=existing, facts="\n".join(f"- {f}" for f in facts)))
        try:
            events = json.loads(raw).get("memory", [])
        except (ValueError, AttributeError):
            events = []
        for ev, vec in zip(events, fvecs, strict=False):
            if isinstance(ev, dict) and ev.get("event") == "ADD":
                self.texts.append(str(ev.get("text", "")))
                self.vecs = np.vstack([self.vecs, vec[None, :]])


# --------------------------------------------------------------------- runs
def turn_stream(n_turns: int, locomo: str | Path | None = None) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(thread, messages)`` adds of :data:`ADD_SIZE` turns, ``n_turns`` in all.

    From a LoCoMo file when given (its sessions in order, conversations one
    after another), else from :func:`benchmarks.synth.conversation`.
    """
    if locomo is not None:
        from sgmem.eval.locomo import load_locomo

        turns = [(f"{c.sample_id}/{key}", m) for c in load_locomo(locomo) for key, _, msgs in c.sessions for m in msgs]
    else:
        from benchmarks.synth import conversation

        turns = [(thread, m) for thread, msgs in conversation(4 * n_turns, seed=11, per_add=20) for m in msgs]
    turns = turns[:n_turns]
    batch: list[dict[str, Any]] = []
    thread = None
    for th, m in turns:
        if batch and (th != thread or len(batch) == ADD_SIZE):
            yield thread, batch  # type: ignore[misc]
            batch = []
        thread = th
        batch.append({k: v for k, v in m.items() if k != "id"})
    if batch:
        yield thread, batch  # type: ignore[misc]


@dataclass
class PathCost:
    """Calls and tokens of one write path over the stream."""

    name: str
    calls: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    note: str = ""
    sgmem_reported: int | None = None  # calls sgmem's own AddResult accounting reported

    @property
    def total(self) -> int:
        return sum(self.calls.values())


@dataclass
class WriteCost:
    """All paths over one stream."""

    turns: int
    adds: int
    source: str
    paths: list[PathCost]


def _sgmem_path(name: str, adds: list[tuple[str, list[dict[str, Any]]]], embedder: Any, config: Any,
                with_llm: bool) -> PathCost:
    import sgmem

    llm = CountingLLM() if with_llm else None
    reported = 0
    t0 = time.perf_counter()
    with sgmem.Memory(embedder=embedder, llm=llm, config=config) as mem:
        for thread, msgs in adds:
            res = mem.add(msgs, scope="writer", thread=thread)
            reported += int(getattr(res, "llm_calls", 0) or 0)
    cost = PathCost(name, seconds=time.perf_counter() - t0, sgmem_reported=reported)
    if llm is not None:
        cost.calls = dict(llm.calls)
        cost.prompt_tokens = sum(llm.prompt_tokens.values())
        cost.completion_tokens = sum(llm.completion_tokens.values())
    return cost


def run_write_cost(embedder: Any, n_turns: int = 1000, locomo: str | Path | None = None) -> WriteCost:
    """Every write path over the same ``n_turns`` turns."""
    import dataclasses

    import sgmem

    adds = list(turn_stream(n_turns, locomo))
    turns = sum(len(m) for _, m in adds)
    cfg = sgmem.Config()
    lexical = cfg.with_(pyramid=dataclasses.replace(cfg.pyramid, llm_keywords=False))
    paths = [_sgmem_path("sgmem default with an LLM (every LLM feature)", adds, embedder, cfg, True)]
    paths.append(_sgmem_path("sgmem with an LLM, lexical keywords (llm_keywords=False)", adds, embedder, lexical, True))
    facts_only: dict[str, Any] = {}
    if hasattr(cfg, "pyramid"):
        facts_only["pyramid"] = dataclasses.replace(cfg.pyramid, llm_keywords=False)
    if hasattr(cfg, "derived"):
        facts_only["derived"] = dataclasses.replace(cfg.derived, llm_tasks=("facts", "merge"))
    paths.append(_sgmem_path("sgmem, LLM facts + gate (no LLM routing)", adds, embedder, cfg.with_(**facts_only), True))
    llm = CountingLLM()
    writer = Mem0StyleWriter(llm, embedder)
    t0 = time.perf_counter()
    for _, msgs in adds:
        writer.add(msgs)
    paths.append(PathCost("Mem0-style (extract + route per add)", dict(llm.calls), sum(llm.prompt_tokens.values()),
                          sum(llm.completion_tokens.values()), time.perf_counter() - t0))
    paths.append(_sgmem_path("sgmem, no LLM", adds, embedder, cfg, False))
    for p in paths[:3]:
        if not any(t in p.calls for t in ("facts", "merge")):
            p.note = "no fact/merge calls: this build's Memory.add does not write derived memory yet"
    return WriteCost(turns, len(adds), str(locomo) if locomo else "synthetic (benchmarks.synth)", paths)


# ------------------------------------------------------------------- report
def render(wc: WriteCost) -> str:
    """Markdown: calls and tokens per 1,000 turns per path, ratio to the Mem0-style path."""
    per = 1000.0 / max(wc.turns, 1)
    mem0 = next((p for p in wc.paths if p.name.startswith("Mem0")), None)
    base = mem0.total * per if mem0 else 0.0
    lines = [
        f"{wc.turns:,} turns from {wc.source}, written in {wc.adds:,} adds of up to {ADD_SIZE} messages; calls "
        "counted by a fake LLM that answers every prompt. Ratio = calls ÷ the Mem0-style path's.",
        "",
        "| write path | LLM calls / 1,000 turns | **ratio** | prompt tokens / 1,000 turns | calls by task |",
        "|---|---|---|---|---|",
    ]
    for p in wc.paths:
        calls = p.total * per
        tasks = ", ".join(f"{t} {c * per:.0f}" for t, c in sorted(p.calls.items())) or "—"
        note = f" ({p.note})" if p.note else ""
        lines.append(
            f"| {p.name}{note} | {calls:.0f} | **{calls / base:.2f}** | {p.prompt_tokens * per:,.0f} | {tasks} |"
            if base else f"| {p.name}{note} | {calls:.0f} | – | {p.prompt_tokens * per:,.0f} | {tasks} |"
        )
    return "\n".join(lines)


def plot(wc: WriteCost, directory: Path) -> Path:
    """``write_cost.png``: LLM calls per 1,000 turns per path, stacked by task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    per = 1000.0 / max(wc.turns, 1)
    tasks = sorted({t for p in wc.paths for t in p.calls})
    fig, ax = plt.subplots(figsize=(7.5, 3.2), dpi=100)
    names = [p.name.replace(" (", "\n(") for p in wc.paths]
    left = np.zeros(len(wc.paths))
    for t in tasks:
        vals = np.array([p.calls.get(t, 0) * per for p in wc.paths])
        ax.barh(names, vals, left=left, label=t)
        left += vals
    for y, v in enumerate(left):
        ax.text(v, y, f" {v:.0f}", va="center", fontsize=8)
    ax.set_xlim(0, max(float(left.max()), 1.0) * 1.15)
    ax.invert_yaxis()
    ax.set_xlabel("LLM calls per 1,000 turns")
    ax.set_title("Write cost (counted with a fake LLM)")
    if tasks:
        ax.legend(fontsize=7, loc="lower right")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    path = directory / "write_cost.png"
    fig.savefig(path)
    plt.close(fig)
    return path


# ------------------------------------------------------------------ the part
TITLE = "Write cost: LLM calls"


def _from_raw(raw: dict[str, Any]) -> WriteCost:
    return WriteCost(raw["turns"], raw["adds"], raw["source"], [PathCost(**p) for p in raw["paths"]])


def run_part(ctx: Any) -> dict[str, Any]:
    """Every write path over the same turns (synthetic, or LoCoMo's with ``--write-locomo``); the plot."""
    from dataclasses import asdict

    locomo = ctx.locomo if ctx.args.write_locomo else None
    wc = run_write_cost(ctx.embedder(), ctx.args.turns, locomo)
    if locomo is not None:
        wc.source = Path(locomo).name
    plot(wc, ctx.plots)
    return asdict(wc)


def render_part(raw: dict[str, Any]) -> str:
    return render(_from_raw(raw)) + "\n\n![write cost](plots/write_cost.png)"


def summary_lines(raw: dict[str, Any]) -> list[str]:
    wc = _from_raw(raw)
    mem0 = next((p for p in wc.paths if p.name.startswith("Mem0")), None)
    gate = next((p for p in wc.paths if "gate" in p.name), None)
    if not (mem0 and gate and mem0.total):
        return []
    per = 1000 / wc.turns
    return [f"- LLM calls per 1,000 turns written: sgmem (LLM facts, gate routing) {gate.total * per:.0f} vs "
            f"Mem0-style {mem0.total * per:.0f} — **{gate.total / mem0.total:.2f}×**; without an LLM, 0."]
