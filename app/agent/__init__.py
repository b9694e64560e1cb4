"""The turn loop: model call -> tool calls -> results -> model call, until an answer.

Knows no HTTP and no database: it receives a provider, a tool runtime and an event sink.
"""
