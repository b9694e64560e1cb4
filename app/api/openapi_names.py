"""Component names a generated client can use, whatever FastAPI had to do to keep them apart.

When two models share a class name (our `TextPart` and the AG-UI package's), FastAPI names
both components by module path (`app__domain__parts__TextPart`,
`ag_ui___generated__models__TextPart`) and may split one in `-Input`/`-Output` halves that
are the same schema; their `title`s stay `TextPart`, so openapi-python-client refuses to
generate two classes of one name and drops every operation that uses them. This pass
gives ours back its own name (`TextPart`), merges halves that are identical, prefixes a
vendor's with its package (`AgUiTextPart`), and makes each `title` its component's name.
"""

from __future__ import annotations

import json
from typing import Any

_REF = "#/components/schemas/"


def untangle_names(document: dict[str, Any]) -> None:
    """Rename long or split components in place and rewrite every `$ref` to them."""
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
    groups: dict[str, list[str]] = {}
    for key in schemas:
        target = _short(key)
        if target != key:
            groups.setdefault(target, []).append(key)
    renames: dict[str, str] = {}
    for target, keys in groups.items():
        taken = target in schemas and target not in keys
        distinct = {json.dumps(schemas[k], sort_keys=True) for k in keys}
        for key in keys:
            if taken or len(distinct) > 1:
                renames[key] = key.replace("-", "").replace("__", "_")
            else:
                renames[key] = target
    for old, new in renames.items():
        schema = schemas.pop(old)
        schema["title"] = new
        schemas[new] = schema
    if renames:
        text = json.dumps(document)
        for old, new in renames.items():
            text = text.replace(f'"{_REF}{old}"', f'"{_REF}{new}"')
        document.clear()
        document.update(json.loads(text))


def _short(key: str) -> str:
    base = key.removesuffix("-Input").removesuffix("-Output")
    if "__" not in base:
        return base
    module, _, name = base.rpartition("__")
    if module.startswith("app__"):
        return name
    package = module.strip("_").split("__")[0]
    return "".join(word.capitalize() for word in package.split("_") if word) + name
