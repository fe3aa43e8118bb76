"""Cells of notebook 04: inside the memory (see build.py)."""

from __future__ import annotations

from _cells import Cell, code, md

# ---------------------------------------------------------------------------
INSIDE: list[Cell] = [
    md("""
# Inside the memory

Three things sgmem does that plain vector memory does not, drawn:

1. the **sentence graph** around a query (SGMem): seed sentences, their hop-1
   neighbours, and the turns they lead to;
2. the **novelty gate** (SAGE): an adaptive threshold that decides, with no LLM
   call, whether a new fact is added, merged into the nearest one, or dropped;
3. the **keyword pyramid** (MGRetrieval): combinations of the query's keywords
   read from the most specific down, and the path each memory was found on;
4. the **entity graph** (LightGMEM): typed entities linked by co-occurrence,
   their overlapping communities, and a query anchored on them.
"""),
    code("""
import json
from importlib import resources

import matplotlib.pyplot as plt
import networkx as nx
import numpy as np

import sgmem

demo = json.loads(resources.files("sgmem").joinpath("data/demo.json").read_text(encoding="utf-8"))
mem = sgmem.Memory(config=sgmem.Config(
    graph=sgmem.GraphConfig(seeds=6, gamma=1.35, hops=1, knn_k=3),
    entities=sgmem.EntityConfig(enabled=True),  # the entity layer is opt-in (section 4)
))
for t in demo["threads"]:
    result = mem.add(t["messages"], scope="priya", thread=t["thread"], at=t["at"])
    print(f"{t['thread']}: {result.sentences} sentences; facts added / merged / skipped by the gate: "
          f"{result.facts_added} / {result.facts_updated} / {result.facts_skipped}")
"""),
    md("""
## 1. The sentence graph around a query

`mode="graph"` is SGMem: the `n` sentences most similar to the query with
`sim = cos + 1 ≥ γ` are seeds; each seed brings its neighbours in the sentence
kNN graph (h = 1 hop); every sentence reached votes for its turn. A hit's
`why["sentences"]` says which sentence was a seed and which came through which
seed — enough to draw the path.
"""),
    code("""
query = "What does Priya cook in her small kitchen?"
hits = mem.search(query, scope="priya", k=4, mode="graph")


def short(text: str, n: int = 30) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


G = nx.DiGraph()
G.add_node("query", kind="query", label=short(query, 24))
for hit in hits:
    turn = f"turn {hit.message_ids[0]}"
    G.add_node(turn, kind="turn", label=short(f"{hit.speaker}: {hit.text}", 34))
    for s in hit.why["sentences"]:
        sent, seed = s["sentence"], s.get("via_seed")
        if s["hop"] == 0:
            G.add_node(sent, kind="seed", label=short(sent))
            G.add_edge("query", sent)
        else:
            if seed not in G:
                G.add_node(seed, kind="seed", label=short(seed))
                G.add_edge("query", seed)
            if sent not in G:
                G.add_node(sent, kind="hop-1", label=short(sent))
            G.add_edge(seed, sent)
        G.add_edge(sent, turn)

colours = {"query": "#d62728", "seed": "#ff7f0e", "hop-1": "#1f77b4", "turn": "#2ca02c"}
layers = {"query": 0, "seed": 1, "hop-1": 2, "turn": 3}
for _, data in G.nodes(data=True):
    data["layer"] = layers[data["kind"]]
pos = nx.multipartite_layout(G, subset_key="layer")
fig, ax = plt.subplots(figsize=(12, 6))
nx.draw_networkx_edges(G, pos, ax=ax, alpha=0.35, arrows=True)
nx.draw_networkx_nodes(G, pos, ax=ax, node_size=260, node_color=[colours[d["kind"]] for _, d in G.nodes(data=True)])
nx.draw_networkx_labels(G, pos, ax=ax, font_size=7, labels={n: d["label"] for n, d in G.nodes(data=True)})
for kind, colour in colours.items():
    ax.scatter([], [], color=colour, label=kind)
ax.legend(loc="lower left", fontsize=8)
ax.set_title("query → seed sentences → hop-1 neighbours → turns")
ax.axis("off")
plt.show()

kinds = [d["kind"] for _, d in G.nodes(data=True)]
print({k: kinds.count(k) for k in colours})
assert kinds.count("seed") >= 1 and kinds.count("turn") == len(hits)
"""),
    md("""
## 2. The novelty gate over a stream

Each fact candidate gets a novelty `ν = (1 − s_vMF) / 2` against the facts
already kept (a von Mises–Fisher kernel score over all of them, not just the
nearest). The threshold `τ` starts high and decays with the density of the
memory (an EMA, recomputed once per write step): `ν < τ` → **noop** (already
known), `τ ≤ ν < τ + δ` → **update** (merged into the nearest fact), else
**add**. No LLM call routes anything.

Here a stream of facts about Priya — with paraphrases and near-duplicates mixed
in — goes through `sgmem.gate.NoveltyGate` directly, 4 candidates per write
step. (An update here simply replaces the nearest fact's vector; `Memory.add`
merges the two texts, with an LLM or by rule, and re-embeds.)
"""),
    code("""
from sgmem.gate import GateConfig, GateState, NoveltyGate

stream = [
    "Priya moved to Leeds in March.", "Priya works at Arkwright Labs, a robotics start-up.",
    "Priya's manager is Tomasz.", "Priya is vegetarian.", "Priya cooks a lot of lentils and rice.",
    "Priya signed up for the Leeds half marathon on 19 May.", "Priya's longest run is 12 km.",
    "Priya's left knee hurt after a long run.", "Priya lives in Leeds now.", "Priya does not eat meat.",
    "Priya's boss at Arkwright Labs is Tomasz.", "Priya bought new running shoes.",
    "Priya's knee feels fine after switching shoes.", "Priya ran 14 km on Sunday.",
    "Priya's sister Anjali is visiting from Pune in April.", "Anjali is allergic to peanuts.",
    "Priya and Anjali want to visit the Yorkshire Dales.", "Priya is training for a half marathon in May.",
    "Priya moved to Leeds for a new job.", "Priya likes tofu scrambles.", "Priya is learning to bake sourdough.",
    "Priya's sister is called Anjali.", "Priya plans to visit Malham Cove.",
    "Priya works on motion planning for warehouse robots.",
]
vectors = mem.embedder.embed(stream)
gate = NoveltyGate(GateConfig(step_messages=4))
view = gate.fork(GateState(dim=mem.embedder.dim))
decisions = []
for i, (text, vec) in enumerate(zip(stream, vectors, strict=True)):
    if i % 4 == 0:
        gate.begin_step(view)          # τ is computed once per write step
    d = gate.decide(view, vec)
    if d.action == "add":
        gate.added(view, vec)
    elif d.action == "update":
        gate.updated(view, d.nearest, vec)
    else:
        gate.skipped(view)
    decisions.append(d)
    print(f"{i:2d} {d.action:>6}  ν={d.novelty:.3f}  τ={d.tau:.3f}  {text}")
"""),
    code("""
marks = {"add": ("o", "#2ca02c"), "update": ("s", "#ff7f0e"), "noop": ("x", "#d62728")}
xs = np.arange(len(decisions))
taus = np.array([d.tau for d in decisions])
delta = gate.config.delta
fig, ax = plt.subplots(figsize=(10, 4))
ax.step(xs, taus, where="mid", color="black", label="τ (threshold)")
ax.fill_between(xs, taus, taus + delta, step="mid", color="orange", alpha=0.2, label="update band [τ, τ + δ)")
for action, (marker, colour) in marks.items():
    pts = [(i, d.novelty) for i, d in enumerate(decisions) if d.action == action and d.n > 0]
    if pts:
        ax.scatter(*zip(*pts, strict=True), marker=marker, color=colour, label=action, zorder=3)
ax.set_ylim(0, 0.45)
ax.set_xlabel("candidate (stream order)")
ax.set_ylabel("novelty ν")
ax.set_title("SAGE novelty gate: candidates vs the adaptive threshold")
ax.legend(fontsize=8, ncol=2)
plt.show()

counts = {a: sum(d.action == a for d in decisions) for a in marks}
print(counts)
assert counts["noop"] >= 1 and counts["add"] >= 1   # near-duplicates dropped, new facts kept
"""),
    md("""
`Memory.add` runs the same gate on the facts it derives from each add (with
an LLM: SGMem's fact prompt; without: every qualifying user sentence). Its
state is in `stats`, and generated memories are searchable with their history:
"""),
    code("""
print(mem.stats("priya").scopes[0].gate)
fact = mem.search("Priya's knee", scope="priya", k=1, kinds=["fact"])[0]
print(fact.memory_id, "|", fact.text)
for version in mem.history(fact.memory_id, scope="priya"):
    print(version.version, version.cause, version.detail)
"""),
    md("""
## 3. A keyword-pyramid path

`mode="pyramid"` selects keywords of the query from the scope's vocabulary,
builds the pyramid of their combinations (level ℓ holds the ℓ-keyword
combinations and the turns containing all of them) and reads it top-down in
rounds, keeping the critical memories. Each hit says on which keyword path and
level it was found.
"""),
    code("""
question = "When is Priya's half marathon and how is her knee?"
hits = mem.search(question, scope="priya", k=6, mode="pyramid")
summary = hits[0].why["pyramid"]
print("query keywords:", summary["query_keywords"], "| rounds:", summary["rounds"], "| stop:", summary["stop"])
for h in hits:
    print(f"level {h.why.get('level', '-')}  {h.why['tier']:>8}  {' + '.join(h.why.get('keywords', [])):<28} {h.text[:60]}")
"""),
    md("""
The whole pyramid for this question: every combination of its keywords, most
specific at the top. The nodes that found hits are coloured and say how many;
grey nodes found nothing new (empty, or read after the loop stopped).
"""),
    code("""
from itertools import combinations

keywords = summary["query_keywords"]
by_path: dict[tuple[str, ...], list] = {}
for h in hits:
    if h.why.get("keywords"):
        by_path.setdefault(tuple(sorted(h.why["keywords"])), []).append(h)

top = len(keywords)
fig, ax = plt.subplots(figsize=(11, 1.3 * top))
for level in range(top, 0, -1):
    combos = list(combinations(keywords, level))
    for j, combo in enumerate(combos):
        found = by_path.get(tuple(sorted(combo)), [])
        critical = any(h.why["critical"] for h in found)
        colour = "#ffb347" if critical else ("#9ecae1" if found else "#eeeeee")
        label = " + ".join(combo) + (f"\\n{len(found)} hit{'s' if len(found) > 1 else ''}" if found else "")
        ax.text((j + 1) / (len(combos) + 1), level, label, ha="center", va="center", fontsize=8,
                bbox={"boxstyle": "round", "fc": colour, "ec": "#555555" if found else "#bbbbbb"})
ax.set_ylim(0.4, top + 0.6)
ax.set_yticks(range(1, top + 1), [f"level {lv}" for lv in range(1, top + 1)])
ax.set_xticks([])
for side in ("top", "right", "bottom"):
    ax.spines[side].set_visible(False)
ax.set_title("Keyword pyramid of the question (orange: critical memories found here)")
plt.show()
assert any(len(path) >= 2 for path in by_path)   # a memory held two query keywords at once
"""),
    md("""
## 4. The entity graph and a community around a query

The entity layer is opt-in (`Config(entities=sgmem.EntityConfig(enabled=True))`,
as this notebook's Memory is; `HybridConfig(w_entity=0.3)` adds its hybrid
channel): on LoCoMo it bought +0.2 recall@10 for ~3.8× slower ingest. With it
on, every add extracts entity mentions (names and titles by rule, typed
zero-shot with the embedder: person, place, organization, game, book…),
resolves them to canonical entities, and links entities mentioned in the same
turn. Ego-Splitting groups them into overlapping communities. A query is
anchored on the entities it names and on the entity *types* it names by a
category word ("Which places…" → place): `mode="entity"` and the hybrid's
entity channel score turns by that connectivity, and a hit's `why["entity"]`
names the entity and type that matched.
"""),
    code("""
sid = mem._store.scope_id("priya")
ents = mem._entities.get(mem._store, sid)
names = {e: f"{row.name} ({ents.type_of(e)})" for e, row in ents.entities.items()}
cooc = ents.cooccurrence()
communities, member = ents.communities()
print(len(ents.entities), "entities,", sum(len(v) for v in cooc.values()) // 2, "co-occurrence edges,",
      len(communities), "communities")

question = "Which places has Priya lived or worked in?"
hits = mem.search(question, scope="priya", k=4, mode="entity")
print("anchors:", hits[0].why["query_entities"], "| types named:", hits[0].why["query_types"])
for h in hits:
    matched = h.why.get("entity", {}).get("matched", [])
    print(f"{h.score:.2f}  {[(m['entity'], m['type']) for m in matched]}  {h.text[:70]}")
"""),
    code("""
G = nx.Graph()
for u, nbrs in cooc.items():
    for v, w in nbrs.items():
        if u < v:
            G.add_edge(names[u], names[v], weight=w)
found = {m["entity"] for h in hits for m in h.why.get("entity", {}).get("matched", [])}
# the community around the query: the one holding most of the entities it matched
comm = max(communities, key=lambda c: (sum(ents.entities[e].name in found for e in c), len(c)), default=frozenset())
in_comm = {names[e] for e in comm}
colour = ["#ffb347" if n.split(" (")[0] in found else ("#9ecae1" if n in in_comm else "#dddddd") for n in G.nodes]
fig, ax = plt.subplots(figsize=(10, 6))
pos = nx.spring_layout(G, seed=3, weight="weight")
nx.draw_networkx(G, pos, ax=ax, node_color=colour, font_size=8, width=[0.5 + G[u][v]["weight"] for u, v in G.edges])
ax.set_title("Entity graph (orange: matched by the query's type; blue: the community around them)")
ax.axis("off")
plt.show()
print("community around the query:", sorted(in_comm))
assert len(G) >= 3 and communities
"""),
]

