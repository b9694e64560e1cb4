"""The tool router: per request, the few server tools the model is offered.

Keywords first (whole words, Russian forms through a stemmer), then, when they find fewer
than three tools, a sentence-embedding fallback; a capabilities tool is always offered,
and a negated request never pre-selects a mutating tool (`app.domain.intent.negated`).
"""
