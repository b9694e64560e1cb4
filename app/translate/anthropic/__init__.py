"""Anthropic Messages translation, one module per job; import from the one you need.

- `write`: our history, tools and tool choice -> the Messages request;
- `stream`: the streamed Messages events -> provider events.

Nothing reads Anthropic-shaped requests: no client speaks Anthropic's wire to us.
"""
