"""Words as the router compares them: whole words only, never substrings.

    keys("Delete the backups!")   -> ["delete", "the", "backups"]
    keys("удалите бэкапы")         -> ["ru:удал", "ru:бэкап"]

English words are compared exactly as written (`tool` is not `tools`, `env` is not
`environment`: a tool lists the forms it answers to). Russian words are reduced to their
Snowball stem, so `бэкап`, `бэкапа` and `бэкапы` are one key while `среда` and `средство`
stay apart. A typo of one letter in a longer word is forgiven (`deplyoment`,
`окружениие`) through deletion neighbourhoods, never through prefixes.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CYRILLIC = re.compile(r"[а-я]")
_RU = snowballstemmer.stemmer("russian")
FUZZY_MIN_LENGTH = 6


def words(text: str) -> list[str]:
    """Lower-case words; `_`, `-` and punctuation separate them; `ё` is `е`."""
    return _WORD.findall(text.lower().replace("ё", "е"))


@lru_cache(maxsize=65536)
def key(word: str) -> str:
    """What a word is compared as: itself, or its stem when it is Russian."""
    if _CYRILLIC.search(word):
        return "ru:" + str(_RU.stemWord(word))
    return word


def keys(text: str) -> list[str]:
    return [key(word) for word in words(text)]


def deletions(k: str) -> set[str]:
    """The key with one letter left out, each way: two keys one edit apart share one."""
    return {k[:i] + k[i + 1 :] for i in range(len(k))}


def fuzzy_eligible(k: str) -> bool:
    return len(k.removeprefix("ru:")) >= FUZZY_MIN_LENGTH
