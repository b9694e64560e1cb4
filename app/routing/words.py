"""Words as the router compares them: whole words only, never substrings.

    keys("Delete the backups!")   -> ["delete", "the", "backups"]
    keys("удалите бэкапы")         -> ["ru:удал", "ru:бэкап"]

English words are compared exactly as written (`tool` is not `tools`, `env` is not
`environment`: a tool lists the forms it answers to). Russian words are reduced to their
Snowball stem, so `бэкап`, `бэкапа` and `бэкапы` are one key while `среда` and `средство`
stay apart. A typo of one letter in a longer word is forgiven (`deplyoment`,
`окружениие`) through deletion neighbourhoods, never through prefixes.

`forms` adds what a single stem misses, as whole-word alternatives (never a prefix):
Russian stems without a trailing vowel (`деплой` -> `депл` but `деплоить` -> `депло`),
the imperative plural (`задеплойте`), the imperative in -и (`удали`, which Snowball cuts
to `уда`, read as `удалить`), the imperfective in -ыва/-ива (`откатываем`); English -ing
and -ed (`deploying`, `rolled`, `revoked`).
The English plural is not a form: `tool` never matches `tools`.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CYRILLIC = re.compile(r"[а-я]")
_RU_TAIL = "аеиоуыэюяйь"
FUZZY_MIN_LENGTH = 6


def words(text: str) -> list[str]:
    """Lower-case words; `_`, `-` and punctuation separate them; `ё` is `е`."""
    return _WORD.findall(text.lower().replace("ё", "е"))


@lru_cache(maxsize=65536)
def key(word: str) -> str:
    """What a word is compared as: itself, or its stem when it is Russian."""
    if _CYRILLIC.search(word):
        return "ru:" + str(_russian().stemWord(word))
    return word


@cache
def _russian() -> Any:
    # On the first Russian word: snowballstemmer's package imports all its languages'
    # stemmers (2.9 MB of a worker), and a deployment whose tools and requests hold no
    # Russian never needs one.
    import snowballstemmer

    return snowballstemmer.stemmer("russian")


def keys(text: str) -> list[str]:
    return [key(word) for word in words(text)]


def deletions(k: str) -> set[str]:
    """The key with one letter left out, each way: two keys one edit apart share one."""
    return {k[:i] + k[i + 1 :] for i in range(len(k))}


def fuzzy_eligible(k: str) -> bool:
    return len(k.removeprefix("ru:")) >= FUZZY_MIN_LENGTH


@lru_cache(maxsize=65536)
def forms(word: str) -> frozenset[str]:
    """The keys a word may stand for: `key(word)` and the alternatives above."""
    if _CYRILLIC.search(word):
        return frozenset(_russian_forms(word))
    found = {word}
    for suffix, shortest in (("ing", 6), ("ed", 5)):
        if word.endswith(suffix) and len(word) >= shortest:
            base = word[: -len(suffix)]
            found |= {base, base + "e"}
            if base[-1] == base[-2]:  # rolling -> roll, shipped -> ship
                found.add(base[:-1])
    return frozenset(f for f in found if len(f) >= 3 or f == word)


def _russian_forms(word: str) -> set[str]:
    spellings = [word]
    if word.endswith(("йте", "ьте")):
        spellings.append(word[:-2])  # задеплойте -> задеплой
    if word.endswith("и") and len(word) >= 5:
        spellings.append(word[:-1] + "ить")  # удали -> удалить
    found: set[str] = set()
    for spelling in spellings:
        stem = str(_russian().stemWord(spelling))
        found.add("ru:" + stem)
        while len(stem) > 3 and stem[-1] in _RU_TAIL:
            stem = stem[:-1]
        found.add("ru:" + stem)
        if len(stem) > 5 and stem.endswith(("ыв", "ив")):
            found.add("ru:" + stem[:-2])  # the imperfective: выкатываем -> выкат
    return found
