"""Dialogue acts of chat sentences, for ranking: statement, question, non-answer, filler.

A memory holds an agent's whole chat, not only statements of fact. Ranking
weighs a sentence by what it does in the dialogue (ARCHITECTURE.md, read path):

- **statement**: says something; full evidence. A **reply** to a question is
  one whatever its length ("How old is your son?" — "12."): its evidence is
  the exchange.
- **question**: asks; weak evidence for a question (an earlier "What is my cat
  called?" matches the same question asked again better than the answer
  does), whose answer is the reply or a later statement.
- **non-answer**: says the speaker does not know or will not say ("Sorry, I
  don't have that information."), with no other content.
- **filler**: carries nothing in its context (greetings, thanks,
  acknowledgements, emoji, and a bare "Yes." or "12." that answers no
  question); never outranks content and is never a hit's best sentence.

[D] By meaning: :class:`ActClassifier` is a multinomial logistic regression on
the sentence vector ingest already computed, plus five structural cues (ends
with "?", opens like a question, has no content word, has a digit, length).
It is fitted once per process and embedder on the ``train`` split of
``sgmem/data/dialogue_acts.json`` (labelled chat sentences written before any
fitting; the ``test`` split is only ever scored, :func:`evaluate`). It tells
five acts: the four above and a reply **fragment** ("Yes, I am.", "In 2019.")
that is a statement in a reply to a question and filler elsewhere
(:func:`in_context`). It marks a sentence filler or non-answer only when that
act's probability is at least :data:`SURE` (a fact must almost never be lost).

Without vectors (:func:`act_of`) a few word rules decide instead. The acts
only weigh ranking and context assembly; every message is still stored and
replayed verbatim.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from .lexical import STOPWORDS

__all__ = [
    "ACT_NAMES",
    "FILLER",
    "FRAGMENT",
    "NON_ANSWER",
    "QUESTION",
    "STATEMENT",
    "ActClassifier",
    "act_of",
    "acts_of",
    "evaluate",
    "in_context",
    "labelled_acts",
    "raw_acts",
]

STATEMENT, QUESTION, NON_ANSWER, FILLER, FRAGMENT = 0, 1, 2, 3, 4
#: the act names by value (``FRAGMENT`` is the classifier's own: :func:`in_context` resolves it)
ACT_NAMES = ("statement", "question", "non-answer", "filler", "answer")
#: [D] the least probability at which the classifier marks a sentence filler or non-answer (else its next act)
SURE = 0.5

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*", re.UNICODE)
_DIGIT = re.compile(r"\d")

# Words that carry no content in chat on their own (the rules without vectors, and a fragment out of context)
_FILLER_WORDS = frozenset(
    """
    hi hello hey heya hiya yo howdy morning evening afternoon night goodnight bye goodbye cya later soon
    thanks thank thx ty cheers welcome appreciate appreciated pleasure please sorry apologies
    ok okay k kk alright right sure yes yeah yep yup yea no nope nah nay indeed absolutely definitely totally
    exactly certainly course agreed agree true fair enough same too either
    cool nice great awesome good fine fantastic amazing wonderful lovely perfect excellent brilliant neat
    sweet super terrific splendid superb glad haha hahaha hah hehe heh lol lmao rofl wow whoa omg gosh oh ah
    aha ahh ooh oops hmm hm hmmm um umm uh uhh mhm er huh yay woohoo hooray meh ugh phew
    congrats congratulations bravo kudos sounds sound seems looks
    """.split()
)
# assent and dissent: an answer to a yes/no question
_ANSWER_WORDS = frozenset("yes yeah yep yup yea no nope nah nay sure absolutely definitely certainly indeed".split())
_NON_ANSWER_WORDS = frozenset(
    """
    sure know knew remember recall idea clue certain unsure forget forgot forgotten tell say said
    information info memory record records dunno afraid mean understand question answer unfortunately
    honestly think hmm sorry
    """.split()
)
_NON_ANSWER = re.compile(
    r"\b(?:not (?:sure|certain)|no (?:idea|clue)|(?:do ?n[o']t|does ?n[o']t|did ?n[o']t|can ?n?[o']?t|"
    r"could ?n[o']t|ca ?n't) (?:know|remember|recall|say|tell)|dunno|unsure|(?:i|i've|i have) forg[eo]t"
    r"|no (?:information|info|memory|record))\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(?:what|who|whom|whose|where|when|why|how|which|is|are|am|was|were|do|does|did|can|could|would|will|"
    r"should|shall|may|might|have|has|had|ca ?n't|wo ?n't|do ?n't|does ?n't|did ?n't|is ?n't|"
    r"are ?n't|was ?n't)\b",
    re.IGNORECASE,
)
_ACK = re.compile(
    r"^(?:(?:that|it)(?:'s| is| was) |what an? |such an? |sounds like an? )?(?:an? )?"
    r"(?:(?:really|very|so|pretty) )?(?:good|great|nice|cool|fair|excellent|brilliant|lovely|wonderful|amazing|"
    r"interesting|fun|awesome|smart|best) (?:idea|point|job|one|call|question|thought|plan|choice|work|news|luck)"
    r"|^(?:take care|good luck|me too|you too|same here|of course|no problem|no worries|"
    r"my pleasure|see you|talk (?:to you )?soon)",
    re.IGNORECASE,
)
# closing quotes, brackets and markup after a sentence's last mark ("Really?)" ends with "?")
_TRAILING_CHARS = frozenset("\"'’”)]}*_~")


def _end(sentence: str) -> str:
    """``sentence`` without trailing whitespace, closing quotes, brackets and markup (one pass from the end:
    linear in the length, where a regex anchored at the end is quadratic on a long run of them)."""
    i = len(sentence)
    while i and (sentence[i - 1] in _TRAILING_CHARS or sentence[i - 1].isspace()):
        i -= 1
    return sentence[:i]


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def _squeeze(text: str) -> str:
    """Runs of whitespace as one space (the patterns then match one space, linear on any run)."""
    return " ".join(text.split())


def _content(words: list[str]) -> list[str]:
    return [w for w in words if w not in STOPWORDS and w not in _FILLER_WORDS]


def _asks(sentence: str) -> bool:
    end = _end(sentence)
    return end.endswith(("?", "？", "¿")) or (
        not end.endswith((".", "!")) and _QUESTION_START.match(sentence.lstrip()) is not None
    )


def act_of(sentence: str, reply: bool = False) -> int:
    """The dialogue act of one sentence by word rules, as said alone or (``reply``) in a reply to a question.

    "12." or "Yes, I am." answers a question: a statement in a reply, filler
    alone. :class:`ActClassifier` reads the acts from sentence vectors instead.
    """
    act = _rule_act(sentence)
    if act == FRAGMENT:
        return STATEMENT if reply else FILLER
    return act


def _rule_act(sentence: str) -> int:
    words = _words(sentence)
    content = _content(words)
    if not content:  # nothing but greetings, thanks, assent, function words, emoji or punctuation
        # a number, a yes or no, or function words ("12.", "In 2019.", "Yes, I am.", "She is.") answer a question
        # in a reply (:func:`in_context`); greetings, thanks and praise alone never do
        if _DIGIT.search(sentence) or any(w in _ANSWER_WORDS or w not in _FILLER_WORDS for w in words):
            return FRAGMENT
        return FILLER
    joined = " ".join(words)
    if len(content) <= 2 and _ACK.match(joined) and _ACK.sub("", joined).strip() == "":
        return FILLER
    if _NON_ANSWER.search(_squeeze(sentence)) and all(w in _NON_ANSWER_WORDS for w in content):
        return NON_ANSWER
    return QUESTION if _asks(sentence) else STATEMENT


def acts_of(sentences: Iterable[str]) -> np.ndarray:
    """:func:`act_of` of each sentence said alone, as an int8 array."""
    return np.fromiter((act_of(s) for s in sentences), dtype=np.int8)


def raw_acts(sentences: Iterable[str]) -> np.ndarray:
    """The rules' act of each sentence with reply fragments left as :data:`FRAGMENT` (see :func:`in_context`)."""
    return np.fromiter((_rule_act(s) for s in sentences), dtype=np.int8)


def _cues(texts: Sequence[str]) -> np.ndarray:
    """The structural cues of each text: ends with "?", opens like a question, no content word, a digit,
    and 1 / (1 + words)."""
    out = np.zeros((len(texts), 5), dtype=np.float32)
    for i, t in enumerate(texts):
        words = _words(t)
        end = _end(t)
        out[i] = (
            end.endswith(("?", "？")),
            _QUESTION_START.match(t.lstrip()) is not None,
            not [w for w in words if w not in STOPWORDS],
            _DIGIT.search(t) is not None,
            1.0 / (1.0 + len(words)),
        )
    return out


def labelled_acts(split: str | None = None) -> list[tuple[str, int]]:
    """The bundled labelled chat sentences ``(text, act)`` of one split (``"train"``, ``"test"``, None: both)."""
    doc = json.loads(resources.files("sgmem").joinpath("data/dialogue_acts.json").read_text(encoding="utf-8"))
    names = {n: i for i, n in enumerate(ACT_NAMES)}
    return [(it["text"], names[it["act"]]) for it in doc["items"] if split is None or it["split"] == split]


@dataclass(frozen=True)
class _Fit:
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # (features + 1, acts)


def _features(vecs: np.ndarray, texts: Sequence[str]) -> np.ndarray:
    return np.hstack([np.asarray(vecs, dtype=np.float64), _cues(texts).astype(np.float64)])


def _fit(x: np.ndarray, y: np.ndarray, l2: float = 10.0) -> _Fit:
    """Multinomial logistic regression, L2-penalised, fitted by L-BFGS on standardised features.

    [D] ``l2`` 10: the best of 0.1–100 by 5-fold cross-validation on the ``train`` split alone (accuracy
    0.86–0.87 across the range).
    """
    from scipy.optimize import minimize

    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    k = len(ACT_NAMES)
    onehot = np.eye(k)[y]
    # classes weighted inversely to their frequency: no act wins by being common in the labelled set
    w_row = (len(y) / (k * np.bincount(y, minlength=k)))[y]

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w = flat.reshape(z.shape[1], k)
        logits = z @ w
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        nll = -float((w_row * np.log(p[onehot > 0] + 1e-12)).sum())
        pen = 0.5 * l2 * float((w[:-1] ** 2).sum())
        grad = z.T @ ((p - onehot) * w_row[:, None])
        grad[:-1] += l2 * w[:-1]
        return nll + pen, grad.ravel()

    res = minimize(loss, np.zeros(z.shape[1] * k), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return _Fit(mean, scale, res.x.reshape(z.shape[1], k))


#: the speakers the labelled sentences are embedded as, like ingest embeds a sentence ("user: I'm not sure."):
#: the user's and the assistant's; a named speaker ("Caroline: …") is read by the same fit
TRAIN_SPEAKERS = ("user: ", "assistant: ")
_FITS: dict[tuple[str, int, tuple[str, ...]], _Fit] = {}
_FITS_LOCK = threading.Lock()


class ActClassifier:
    """Dialogue acts by meaning: a logistic regression on an embedder's sentence vectors (module docstring).

    Args:
        embedder: the embedder whose vectors it reads; the labelled ``train``
            split is embedded with it once per process (fitted lazily, on first use).
    """

    def __init__(self, embedder: Any, speaker_prefix: bool = True) -> None:
        self._embedder = embedder
        self._prefixes = TRAIN_SPEAKERS if speaker_prefix else ("",)
        self._key = (str(getattr(embedder, "name", type(embedder).__name__)), int(embedder.dim), self._prefixes)

    def _model(self) -> _Fit:
        fit = _FITS.get(self._key)
        if fit is None:
            with _FITS_LOCK:
                fit = _FITS.get(self._key)
                if fit is None:
                    train = labelled_acts("train") * len(self._prefixes)
                    texts = [t for t, _ in train]
                    n = len(texts) // len(self._prefixes)
                    shown = [p + t for i, p in enumerate(self._prefixes) for t in texts[i * n : (i + 1) * n]]
                    vecs = np.asarray(self._embedder.embed(shown), dtype=np.float64)
                    fit = _FITS[self._key] = _fit(_features(vecs, texts), np.array([a for _, a in train]))
        return fit

    def probabilities(self, texts: Sequence[str], vecs: np.ndarray) -> np.ndarray:
        """(n, 5) probability of each act (:data:`ACT_NAMES` order) for sentences with their vectors (as ingest
        embeds them: with the speaker's name in front when ``speaker_prefix``)."""
        if not len(texts):
            return np.zeros((0, len(ACT_NAMES)))
        fit = self._model()
        z = (_features(vecs, texts) - fit.mean) / fit.scale
        logits = z @ fit.weights[:-1] + fit.weights[-1]
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def classify(self, texts: Sequence[str], vecs: np.ndarray) -> np.ndarray:
        """The act of each sentence out of context (int8; :data:`FRAGMENT` included, see :func:`in_context`)."""
        p = self.probabilities(texts, vecs)
        unsure = p.copy()
        for act in (FILLER, NON_ANSWER):  # a fact is never lost on a guess
            low = unsure[:, act] < SURE
            unsure[low, act] = -1.0
        acts = unsure.argmax(axis=1).astype(np.int8)
        empty = np.array([not _WORD.search(t) and not _DIGIT.search(t) for t in texts], dtype=bool)
        acts[empty] = FILLER  # punctuation and emoji alone
        return acts


def in_context(acts: np.ndarray, texts: Sequence[str], replies: np.ndarray) -> np.ndarray:
    """The acts with each :data:`FRAGMENT` resolved: a statement in a reply to a question (``replies``: per
    sentence, whether its turn replies to a question), filler elsewhere unless it has a content word."""
    out = np.asarray(acts, dtype=np.int8).copy()
    for i in np.flatnonzero(out == FRAGMENT):
        out[i] = STATEMENT if replies[i] or _content(_words(texts[i])) else FILLER
    return out


def evaluate(embedder: Any, split: str = "test", speaker: str = "user") -> dict[str, dict[str, float]]:
    """Precision, recall and support per act of the classifier (fitted on ``train``) on a labelled split, each
    sentence said by ``speaker`` (embedded as ingest does, "user: …"), plus the share of statements marked
    filler or non-answer (``lost``)."""
    data = labelled_acts(split)
    texts = [t for t, _ in data]
    truth = np.array([a for _, a in data])
    vecs = np.asarray(embedder.embed([f"{speaker}: {t}" for t in texts]))
    got = ActClassifier(embedder).classify(texts, vecs)
    out: dict[str, dict[str, float]] = {}
    for a, name in enumerate(ACT_NAMES):
        tp = int(((got == a) & (truth == a)).sum())
        marked, real = int((got == a).sum()), int((truth == a).sum())
        out[name] = {
            "precision": tp / marked if marked else 1.0,
            "recall": tp / real if real else 1.0,
            "support": real,
        }
    stated = truth == STATEMENT
    out["statement"]["lost"] = float(np.isin(got[stated], (FILLER, NON_ANSWER)).mean()) if stated.any() else 0.0
    return out
