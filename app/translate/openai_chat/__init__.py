"""OpenAI Chat Completions translation, one module per job; import from the one you need.

- `read`: what a Chat Completions client sends us (messages, tools, tool choice) -> ours;
- `write`: ours -> Chat Completions (the request to a model, and our answer to a client);
- `stream`: a model's streamed chunks -> provider events;
- `tool_results`: the content of a `role: "tool"` message, both ways.
"""
