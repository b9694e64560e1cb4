"""An example operations catalogue: 24 tools for dashboards, environments, access
requests, backups, schemas, deployments, logs, incidents, flags, users and secrets.

It exists to exercise the tool router on a catalogue of realistic size (with the graph
example, 30 tools): each tool has an English description (what the model reads),
keyword forms in English and Russian, and a Russian description for the embedding
fallback. The handlers only echo what they would do. Off unless listed in TOOL_MODULES
(`app.examples.ops`); `bench/router.py` measures the router on it.
"""

from app.examples.ops.tools import register, tools

__all__ = ["register", "tools"]
