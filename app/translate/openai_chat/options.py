"""Generation options as Chat Completions request parameters: the same names, forwarded.

Our options are OpenAI's own terms, so this is a copy of what is set; it exists so that
the provider never forwards a field by accident and so that the Responses surface's
`text.format` (already translated to `response_format` when read) takes the same path.
"""

from __future__ import annotations

from typing import Any

from app.domain.stream import GenerationOptions

# Every option has its Chat Completions parameter under the same name.
SUPPORTED: frozenset[str] = frozenset(GenerationOptions.model_fields)


def options_to_openai(options: GenerationOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in options.named()}
