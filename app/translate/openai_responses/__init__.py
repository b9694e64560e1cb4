"""OpenAI Responses translation; import from the module that does the job.

- `read`: what a Responses client sends us (input items, tools, tool choice) -> ours.

Our answers in Responses' shape are a wire encoder (`app.api.encoders.responses`), not a
translation: they are written from run events, not from parts.
"""
