"""Every prompt sgmem sends to an LLM, in one module.

Prompts are plain ``str.format`` templates; each says which JSON it expects,
and each caller has an LLM-free rule for output it cannot parse. Sections are
named after the algorithm that owns them (see ALGORITHMS.md).
"""

from __future__ import annotations

__all__ = [
    "ENTITY_COMMUNITY",
    "ENTITY_DISAMBIGUATION",
    "ENTITY_PROFILE",
    "ENTITY_RELATIONS",
    "FACT_EXTRACTION",
    "INSIGHTS",
    "MERGE",
    "MERGE_STRICT",
    "SESSION_SUMMARY",
    "PYRAMID_KEYWORD_EXTRACTION",
    "PYRAMID_KEYWORD_GROUPING",
    "PYRAMID_QUERY_KEYWORDS",
    "PYRAMID_REFLECT",
]

# --------------------------------------------------------------------------
# MGRetrieval, reflective keyword-pyramid retrieval (ALGORITHMS §3). The write-side
# prompts follow the seed's Figures 11-12 (paraphrased, one speaker's turn per
# memory); the query-side texts are not public (§3.6 [U]) and follow their roles.

#: §3.2 step 1 (the seed's Figure 11, one speaker's turn): keywords copied exactly as written.
PYRAMID_KEYWORD_EXTRACTION = """You index a conversation memory by its keywords.

Message from {speaker} ({date}):
\"\"\"{text}\"\"\"

Extract 1-{limit} keywords from this message, following these rules:
- Copy every keyword exactly as it is written in the message. Extract only what appears in the text; do not \
infer, paraphrase, normalise or summarise.
- Split a multi-word phrase or a hyphenated compound into its single words, returned in their original order; \
those words together count as one keyword. Do not merge, rewrite or reorder words, and do not drop a word of a \
person's, place's, organisation's, title's or event's name.
- Prefer proper nouns (person, place and organisation names, titles), then concrete events or activities, then \
important objects or topics, then adjectives or verbs only when they carry the core meaning.
- Leave out greetings, politeness, pronouns, question words, interjections, discourse markers, generic praise, \
vague time words and wrapper words such as great, nice, okay, time, talk, again, photo, image, picture, general.
- Order by importance; drop duplicates and near-duplicates; do not pad to fill the quota.
Answer with a JSON list of strings only, for example ["Caroline", "pottery", "class", "Sweden"]."""

#: §3.2 step 2 (the seed's Figure 12): keep every new keyword, append the existing keywords it can be grouped under.
PYRAMID_KEYWORD_GROUPING = """You file a conversation memory under the keywords of a memory index.

Message from {speaker} ({date}):
\"\"\"{text}\"\"\"

latest_total_keywords (extracted from this message):
{keywords}

database_keywords (already in the index):
{vocabulary}

Decide whether one or more latest keywords can be grouped under an existing database keyword: a broader \
category or topic that includes it, or the same concept (for example "Chicago" under "city" or "travel", \
"kickboxing" under "sport"). Rules:
- total must contain every keyword from latest_total_keywords, in their original order; remove none.
- Then append only database keywords, copied exactly as written, under which a latest keyword can be grouped.
- Never invent a keyword outside database_keywords.
Answer with one JSON object only, for example {{"total": ["Chicago", "weekend", "city"]}}."""

#: §3.3: select query keywords from the vocabulary.
PYRAMID_QUERY_KEYWORDS = """Question: {question}

Keywords of the memory index:
{vocabulary}

Select up to {n} keywords from this list that memories answering the question would contain, most \
important first. Copy them exactly as written.
Answer with a JSON list of strings only."""

#: §3.5: one reflective round (answer, sufficiency, critical memories).
PYRAMID_REFLECT = """You answer a question from a person's conversation memories, reading them in rounds.

Question: {question}
Draft answer so far: {answer}

Critical memories kept from earlier rounds:
{critical}

New memories in this round:
{new}

1. Answer the question from the memories above ("unknown" if they do not contain the answer).
2. Decide whether these memories are sufficient to answer the question completely.
3. List the ids of the memories needed to answer it (from either list), most important first.
Answer with one JSON object only: {{"answer": "...", "sufficient": true or false, "critical": ["M1", "M4"]}}"""


# --------------------------------------------------------------------------
# SGMem generated memory (ALGORITHMS §1.5, paraphrased from the paper's
# Appendix B) and SAGE's merge prompt (§2.5, from the official code). Each
# caller falls back to its LLM-free rule (§1.6, §2.8) on unusable output.

#: §1.5 Fact: explicit personal facts of a batch of messages, with their sources.
FACT_EXTRACTION = """You extract memories from a conversation.

Messages (numbered, with speaker and date):
{messages}

Extract all explicit personal facts about the people in these messages, above all the user: life \
events (past, present and planned), experiences, preferences, relationships, and numbers, dates, places \
and organisations. Each fact is one standalone sentence: use names (or "The user"), never pronouns; keep \
every time, place and quantity detail; state only what is said, infer nothing. Ignore greetings and \
small talk.
Answer with a JSON list only, one object per fact with the numbers of the messages it comes from, for \
example [{{"fact": "Caroline attended an LGBTQ support group on 7 May 2023.", "sources": [1]}}]. \
Answer [] when there are no facts."""

#: §1.5 Summary: one session's dialogue.
SESSION_SUMMARY = """Summarize this dialogue as concisely as possible, keeping its main themes and key \
information (names, dates, places, numbers). Several key events may be summarized separately.

Dialogue ({date}):
{dialogue}

Answer with the summary text only."""

#: §1.5 Insight: higher-level patterns over timestamped facts.
INSIGHTS = """Here are facts from a person's conversations, with timestamps:
{facts}

Merge related facts into higher-level insights: preferences, habits, routines, opinions, goals and current \
status. Each insight is concise and standalone and must not copy an input fact. Use each insight's latest \
timestamp among the facts it merges.
Answer with a JSON list only, for example [{{"timestamp": "2023-05-08", "content": "..."}}]. Answer [] \
when the facts show no pattern."""

#: §2.5 Update: the code's default (short) merge prompt.
MERGE = """Existing memory: {existing}
New information: {new}
Write a concise, non-redundant merged memory preserving all distinct information. Max 2 sentences.
Answer with the merged memory only."""

#: §2.5 Update: the code's longer prompt, suggested for strong models.
MERGE_STRICT = """Existing memory: {existing}
New information: {new}
Merge them into one memory. Keep every name, number and date. Facts that can hold several values \
(hobbies, places visited, people met) are additive: keep all of them. Overwrite only single-valued \
attributes (current job, home city, age) when the new information replaces them. If unsure, keep both. \
Max 2 sentences.
Answer with the merged memory only."""

# --------------------------------------------------------------------------
# LightGMEM entity layer (ALGORITHMS §4; seed appendix E.1–E.2, paraphrased).

#: E.1: is a new mention the same real-world entity as an existing one?
ENTITY_DISAMBIGUATION = """You decide whether a name found in a conversation refers to an entity \
already known, or to a new one.

Message ({date}):
\"\"\"{text}\"\"\"

New mention: {{"name": "{name}", "type": "{type}", "other_names_in_message": {cooccurring}, \
"relation_neighbours": {related}}}

Known candidates:
{candidates}

Treat the mention as the same entity only when it denotes the same real-world person, place, thing or \
concept; related but distinct things, or different things with similar names, are not the same.
Answer with one JSON object only: {{"duplicate_id": <the candidate_id of the same entity, or -1>, \
"name": "<the most complete name for it>"}}. Use only a candidate_id from the list."""

#: E.2: update an entity's profile from new evidence (deferred, in batches of B episodes), with the relation
#: evidence R_r(v) of those messages (eq. 11; with an LLM's relation edges, else "none").
ENTITY_PROFILE = """You maintain a short profile of one {type} mentioned in a person's conversations.

Entity: {name}
Current profile: {profile}

New messages that mention it, with their dates:
{messages}

Relations read from these messages: {relations}

Rewrite the profile in at most three sentences, keeping what the current profile says unless the new \
messages clearly change it, and adding only what the messages support. Do not guess, and do not give \
this entity facts that belong to another person or thing in the messages.
Answer with one JSON object only: {{"description": "<the profile>"}}."""

#: E.3: name and describe one entity community (deferred: when it forms or has grown by a batch).
ENTITY_COMMUNITY = """You name and describe a group of related things from a person's conversations, using \
only the entities and messages given. Describe the group as a whole, not only its most prominent member.

Entities of the group:
{entities}

Messages in which several of them occur, with their dates:
{messages}

Give the group a short, specific name (3 to 8 words, a noun phrase) and a description of 2 to 3 sentences \
on the activities, relationships, roles or themes its entities share, mentioning as many of them as you \
can. Use only what the messages support; invent nothing.
Answer with one JSON object only: {{"name": "<the name>", "description": "<the description>"}}."""

#: §3.2.1: direct relations between the entities of each turn of an add (one call per add, in chunks of
#: ``EntityConfig.relation_batch`` turns). The seed's extractor is GLiNER2 (Table 6); with no such model,
#: sgmem asks the Memory's LLM. Endpoints the rules did not find may be named if the message says them.
ENTITY_RELATIONS = """You extract the relations that conversation messages state directly between the people, \
places, pets, organisations, works, events and things they name.

Messages, each with its id, date, speaker and the names found in it:
{messages}

For each message, list the relations it states directly, as head, relation, tail: head and tail are \
copied exactly from the message's names or words (the speaker's name for "I", "me" or "my"), and the \
relation is a short phrase of 1 to 4 words ("adopted", "sister of", "works at", "moved to"). Leave out \
what the message does not say, guesses, and relations of a name to itself. A message may have none.
Answer with one JSON object only: {{"relations": [{{"message": <id>, "head": "<name>", "relation": \
"<phrase>", "tail": "<name>"}}]}}."""
