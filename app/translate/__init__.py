"""Pure translation functions between vendor formats, AIKit messages and our parts.

One package per vendor wire, one module per job: `read` (what a client of that wire sends
us -> our messages), `write` (ours -> that wire), `stream` (a model's streamed items ->
provider events). Shared by them: `accumulator` folds provider events into parts,
`tool_args` parses a call's arguments, `data_url` reads an inline attachment's type, and
`aikit` reads histories that mix AIKit and OpenAI messages. Imports only `app.domain`.
"""
