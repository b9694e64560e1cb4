"""Examples of what a deployer adds to chat-bff, built the way a deployer would.

Each example is a tool package listed like any `TOOL_MODULES` entry (`register(registry)`),
with its own tables, repository and Alembic revisions. Nothing in the service imports an
example: the container lists it among the tool modules only when it is switched on.
"""
