"""The Embedder protocol every embedding backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import SgmemError

__all__ = ["Embedder", "check_embeddings", "model_device"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-normalised float32 vectors.

    Attributes:
        name: a stable identity recorded in the store (same model → same name,
            wherever it was loaded from).
        dim: the vector dimension.

    Optional: ``device``, the PyTorch device name the model runs on
    (``"cuda"``, ``"cuda:1"``, ``"mps"``, ``"cpu"``). Where it is a GPU, the
    default ``Config.dense_device="auto"`` runs the exact dense scan there too.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; return an ``(len(texts), dim)`` float32 array of unit rows."""
        ...


def check_embeddings(embedder: Embedder, texts: Sequence[str], vecs: object) -> np.ndarray:
    """Validate and L2-normalise what an embedder returned.

    Raises:
        SgmemError: the embedder returned the wrong shape or non-finite values.
    """
    try:
        arr = np.asarray(vecs, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise SgmemError(
            f"embedder {embedder.name!r} returned {type(vecs).__name__}, not an array of numbers ({exc})."
        ) from None
    if arr.ndim != 2 or arr.shape != (len(texts), embedder.dim):
        raise SgmemError(
            f"embedder {embedder.name!r} returned an array of shape {arr.shape}, "
            f"expected ({len(texts)}, {embedder.dim}). Check its dim attribute."
        )
    if not np.isfinite(arr).all():
        raise SgmemError(f"embedder {embedder.name!r} returned NaN or infinite values.")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def model_device(model: object) -> str | None:
    """The PyTorch device a framework's embedding model runs on, where it says (else ``None``).

    Looked up, in order: ``model.device``; ``model.model_kwargs["device"]``
    (LangChain's ``HuggingFaceEmbeddings``); the ``device`` of its loaded
    sentence-transformers model (``_client``, ``client``, ``_model``). The
    adapters' embedders report it as their ``device``, so the default
    ``Config.dense_device="auto"`` can follow a model on a GPU. Never raises.
    """
    try:
        dev = getattr(model, "device", None)
        if dev is None:
            kwargs = getattr(model, "model_kwargs", None)
            dev = kwargs.get("device") if isinstance(kwargs, dict) else None
        for attr in ("_client", "client", "_model"):
            if dev is not None:
                break
            dev = getattr(getattr(model, attr, None), "device", None)
    except Exception:  # noqa: BLE001 - a model's odd attribute must never break opening a store
        return None
    return str(dev) if dev is not None and str(dev).strip() else None
