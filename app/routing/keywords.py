"""Keyword hits: which tools a request names, by whole words (see `app.routing.words`).

A tool answers to its keyword phrases (every word of a phrase must be in the request, in
any order) and to its own name (`delete_backup` as written, or as the words `delete
backup`). A tool that declares no keywords answers to the words of its name, less the
generic verbs every tool shares.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.routing.words import deletions, forms, fuzzy_eligible, key, keys, words

GENERIC = frozenset(
    {"get", "list", "set", "add", "create", "delete", "remove", "update", "find", "show",
     "run", "make", "new", "do", "by", "for", "of", "to", "the", "a", "an", "all", "my"}
)  # fmt: skip


@dataclass(frozen=True)
class RoutedTool:
    """What the router knows of a tool: the words it answers to and what it does."""

    name: str
    description: str
    keywords: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()  # more text for the embedding corpus (other languages)
    mutates: bool = False

    def phrases(self) -> list[tuple[str, ...]]:
        found = [tuple(keys(k)) for k in self.keywords]
        name_words = words(self.name)
        found.append(tuple(key(w) for w in name_words))
        if not self.keywords:
            found.extend((key(w),) for w in name_words if w not in GENERIC)
        return [p for p in dict.fromkeys(found) if p]

    def corpus(self) -> list[str]:
        return [f"{self.name}: {self.description}", *self.examples]


class KeywordIndex:
    def __init__(self, tools: Iterable[RoutedTool]) -> None:
        self._phrases: dict[str, list[tuple[str, ...]]] = {}
        self._by_key: dict[str, set[str]] = defaultdict(set)
        self._near: dict[str, set[str]] = defaultdict(set)  # deletion -> vocabulary keys
        self._alias: dict[str, set[str]] = defaultdict(set)  # a form -> vocabulary keys
        for tool in tools:
            phrases = tool.phrases()
            self._phrases[tool.name] = phrases
            for phrase in phrases:
                for k in phrase:
                    self._by_key[k].add(tool.name)
            for text in (*tool.keywords, tool.name):
                for word in words(text):
                    for form in forms(word):
                        self._alias[form].add(key(word))
        for k in self._by_key:
            if fuzzy_eligible(k):
                for d in deletions(k):
                    self._near[d].add(k)

    def _request_keys(self, text: str) -> set[str]:
        found: set[str] = set()
        for word in words(text):
            k = key(word)
            exact = {v for f in forms(word) for v in self._alias.get(f, ())}
            if exact:
                found |= exact
            elif fuzzy_eligible(k):
                found |= self._near_keys(k)
        return found

    def _near_keys(self, k: str) -> set[str]:
        """Vocabulary keys one edit from `k` (a letter swapped, missing or extra) that
        begin as it does."""
        near = {v for d in deletions(k) | {k} for v in self._near.get(d, ())}
        near |= {d for d in deletions(k) if d in self._by_key}  # one letter too many
        return {v for v in near if v[:4] == k[:4]}

    def hits(self, text: str) -> dict[str, list[str]]:
        """Tool name -> the phrases of it the request contains (best first)."""
        present = self._request_keys(text)
        candidates: set[str] = set()
        for k in present:
            candidates |= self._by_key[k]
        result: dict[str, list[str]] = {}
        for name in candidates:
            matched = [" ".join(p) for p in self._phrases[name] if all(k in present for k in p)]
            if matched:
                result[name] = sorted(matched, key=lambda p: -len(p.split()))
        return result


def score(matched: Sequence[str]) -> float:
    """More phrases, and longer ones, make a stronger hit."""
    return float(sum(len(p.split()) for p in matched))
